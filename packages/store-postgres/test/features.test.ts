/**
 * Store features the shared suite does not cover yet: version routing in
 * the claim (ClaimRequest.handlers), settings guarded by rev, unique
 * policies on commit inserts, the schema taken from the connection string.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it, test } from 'node:test';
import {
  handlersAdmit,
  type JobRecord,
  jobEvent,
  OjsError,
  parseEnqueueRequest,
  parseHandlers,
} from '@ojs/core';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, POSTGRES_URL, testSchema, unavailable } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

function newJob(body: Record<string, unknown> = {}): JobRecord {
  return parseEnqueueRequest({ type: 'feature.job', args: [], ...body }, T0, {
    visibilityTimeoutMs: 30_000,
  });
}

const ids = (jobs: JobRecord[]) => jobs.map((job) => job.id);

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL store features', { skip: reason }, () => {});
} else {
  describe('PostgreSQL store features', () => {
    const schema = testSchema('feat');
    let store: PostgresStore;

    before(async () => {
      store = await openStore(schema);
    });
    after(async () => {
      await store.close();
      await dropSchema(schema);
    });
    beforeEach(() => store.reset());

    describe('claim: version routing (handlers)', () => {
      it('claims exactly the jobs core handlersAdmit admits (unversioned: any handler of the type)', async () => {
        const jobs = [
          newJob({ type: 'mail.send', version: '1.2' }),
          newJob({ type: 'mail.send', version: '2.0.1' }),
          newJob({ type: 'mail.send' }),
          newJob({ type: 'sms.send', version: 1 }),
          newJob({ type: 'mail.send', version: '1.0.7' }),
          newJob({ type: 'push.send', version: '3.1' }),
        ];
        const declarations: unknown[] = [
          [{ type: 'mail.send', versions: '>=2.0 <3.0' }],
          [{ type: 'mail.send', versions: '2.0' }],
          ['sms.send', { type: 'mail.send', versions: '1' }],
          [
            { type: 'mail.send', versions: '>=1.1, <2' },
            { type: 'push.send', versions: '>3.0' },
          ],
          [{ type: 'mail.send', versions: '*' }],
          [],
        ];
        for (const declaration of declarations) {
          await store.reset();
          await store.insertJobs(structuredClone(jobs), [], T0);
          const handlers = parseHandlers(declaration);
          const claimed = await store.claimJobs({
            queues: ['default'],
            count: 10,
            now: T0,
            handlers,
          });
          const expected = jobs.filter((job) => handlersAdmit(handlers, job));
          assert.deepEqual(ids(claimed), ids(expected), JSON.stringify(declaration));
        }
        // Without handlers, everything.
        await store.reset();
        await store.insertJobs(structuredClone(jobs), [], T0);
        assert.equal(
          (await store.claimJobs({ queues: ['default'], count: 10, now: T0 })).length,
          6,
        );
      });

      it('applies on the limited path too', async () => {
        const limited = { queue: 'vl', rate_limit: { key: 'k', concurrency: 5 } };
        const v1 = newJob({ type: 'a.b', version: 1, options: limited });
        const v3 = newJob({ type: 'a.b', version: 3, options: limited });
        await store.insertJobs([v1, v3], [], T0);
        const claimed = await store.claimJobs({
          queues: ['vl'],
          count: 10,
          now: T0,
          handlers: parseHandlers([{ type: 'a.b', versions: '>=2' }]),
        });
        assert.deepEqual(ids(claimed), [v3.id]);
      });
    });

    describe('settings', () => {
      it('create, guarded update, list by prefix, delete', async () => {
        const created = await store.putSetting('schemas', 'mail.send/1', { a: 1 }, null, T0);
        assert.deepEqual(created, {
          namespace: 'schemas',
          key: 'mail.send/1',
          value: { a: 1 },
          rev: 0,
          updated_at: '2026-01-01T12:00:00.000Z',
        });
        assert.equal(await store.putSetting('schemas', 'mail.send/1', { a: 2 }, null, T0), null);
        const updated = await store.putSetting('schemas', 'mail.send/1', { a: 2 }, 0, T0 + 1000);
        assert.equal(updated?.rev, 1);
        assert.equal(await store.putSetting('schemas', 'mail.send/1', { a: 3 }, 0, T0), null);
        await store.putSetting('schemas', 'mail.send/2', { b: 1 }, null, T0);
        await store.putSetting('schemas', 'sms.send/1', { c: 1 }, null, T0);
        await store.putSetting('routes', 'mail.send/1', { d: 1 }, null, T0);
        assert.deepEqual(
          (await store.listSettings('schemas', 'mail.')).map((s) => s.key),
          ['mail.send/1', 'mail.send/2'],
        );
        assert.equal((await store.listSettings('schemas')).length, 3);
        assert.deepEqual((await store.getSetting('schemas', 'mail.send/1'))?.value, { a: 2 });
        assert.equal(await store.deleteSetting('schemas', 'mail.send/1'), true);
        assert.equal(await store.deleteSetting('schemas', 'mail.send/1'), false);
        assert.equal(await store.getSetting('schemas', 'mail.send/1'), null);
      });
    });

    describe('commit inserts: unique policies', () => {
      const unique = (onConflict: string) => ({
        type: 'report.build',
        args: [{ account: 1 }],
        unique: { keys: ['type', 'args'], on_conflict: onConflict },
      });

      it('skips a job whose key is held (reject / ignore) with its events, keeps the rest', async () => {
        const [held] = await store.insertJobs([newJob(unique('reject'))], [], T0);
        assert.equal(held!.status, 'inserted');
        const skipped = newJob(unique('reject'));
        const ignored = newJob(unique('ignore'));
        const kept = newJob();
        const ok = await store.commit({
          now: T0,
          inserts: [skipped, ignored, kept],
          events: [skipped, ignored, kept].map((j) => jobEvent('job.enqueued', j, {}, T0)),
        });
        assert.equal(ok, true);
        assert.equal(await store.getJob(skipped.id), null);
        assert.equal(await store.getJob(ignored.id), null);
        assert.equal((await store.getJob(kept.id))?.state, 'available');
        const events = await store.listEvents({ limit: 10 });
        assert.deepEqual(
          events.map((e) => e.subject),
          [kept.id],
        );
      });

      it('replace cancels the holder in the same commit and takes the key', async () => {
        const [held] = await store.insertJobs([newJob(unique('replace'))], [], T0);
        const replacement = newJob(unique('replace'));
        assert.equal(await store.commit({ now: T0 + 1000, inserts: [replacement] }), true);
        const old = await store.getJob((held as { job: JobRecord }).job.id);
        assert.equal(old?.state, 'cancelled');
        const [again] = await store.insertJobs([newJob(unique('reject'))], [], T0 + 2000);
        assert.equal(again!.status, 'rejected');
        assert.equal((again as { existing: JobRecord }).existing.id, replacement.id);
      });
    });

    it('refuses text jsonb cannot hold (NUL) as invalid_payload, storing nothing', async () => {
      const job = newJob({ args: ['a\u0000b'] });
      await assert.rejects(store.insertJobs([job], [], T0), (error: unknown) => {
        assert.ok(error instanceof OjsError);
        assert.equal(error.code, 'invalid_payload');
        return true;
      });
      assert.equal(await store.getJob(job.id), null);
    });

    it('takes the schema from the connection string (?schema=)', async () => {
      const { PostgresStore } = await import('../src/index.ts');
      const other = new PostgresStore({
        connectionString: `${POSTGRES_URL}?schema=${schema}`,
        clockSyncIntervalMs: 0,
      });
      await other.init();
      try {
        assert.equal(other.schema, schema);
        await store.insertJobs([newJob({ options: { queue: 'shared' } })], [], T0);
        assert.deepEqual(
          (await other.listQueues()).map((q) => q.name),
          ['shared'],
        );
      } finally {
        await other.close();
      }
    });
  });
}
