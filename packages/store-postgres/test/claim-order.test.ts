/**
 * Claim order on the limited path (queue limits, rate-limited jobs): FIFO
 * by the numeric seq, also where seq gains a digit (99 -> 100), page after
 * page of candidates.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import { type JobRecord, parseEnqueueRequest } from '@ojs/core';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, testSchema, unavailable, withAdmin } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

function newJob(options: Record<string, unknown>): JobRecord {
  return parseEnqueueRequest({ type: 'order.test', args: [], options }, T0, {
    visibilityTimeoutMs: 30_000,
  });
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL claim order', { skip: reason }, () => {});
} else {
  describe('claim order on the limited path', () => {
    const schema = testSchema('order');
    let store: PostgresStore;

    before(async () => {
      store = await openStore(schema);
    });
    after(async () => {
      await store.close();
      await dropSchema(schema);
    });

    for (const [label, options] of [
      ['queue concurrency', { queue: 'limited' }],
      ['job rate_limit', { queue: 'keyed', rate_limit: { key: 'k', concurrency: 50 } }],
    ] as const) {
      it(`${label}: FIFO by numeric seq across 99 -> 100`, async () => {
        await store.reset();
        await withAdmin((client) => client.query(`SELECT setval('"${schema}".job_seq', 94)`));
        const results = await store.insertJobs(
          Array.from({ length: 12 }, () => newJob(options)),
          [],
          T0,
        );
        const seqs = results.map((r) => (r as { job: JobRecord }).job.seq!);
        assert.deepEqual(
          seqs,
          Array.from({ length: 12 }, (_, i) => 95 + i),
        );
        if (options.queue === 'limited') {
          await store.setQueueConfig('limited', { concurrency: 50 }, T0);
        }
        const taken: number[] = [];
        for (const count of [3, 4, 5]) {
          const jobs = await store.claimJobs({ queues: [options.queue], count, now: T0 });
          taken.push(...jobs.map((job) => job.seq!));
        }
        assert.deepEqual(taken, seqs);
      });
    }
  });
}
