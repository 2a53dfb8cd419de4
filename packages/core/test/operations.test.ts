/**
 * The pure parts of the operations API: job filters and cursors, index
 * ranges, progress, queue settings (retention, backpressure) with the
 * pruner's targets, and admin actions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideAdminAction, retryNow } from '../src/admin-actions.ts';
import { parseEnqueueRequest } from '../src/envelope.ts';
import { OjsError } from '../src/errors.ts';
import { toWire } from '../src/job.ts';
import {
  decodeCursor,
  encodeCursor,
  indexRanges,
  isEmptyFilter,
  MAX_INDEXED_COMBINATIONS,
  parseJobFilter,
} from '../src/job-query.ts';
import type { JobRecord } from '../src/job-types.ts';
import { cancel, claim, complete, fail } from '../src/lifecycle.ts';
import {
  currentProgress,
  parseProgressUpdate,
  progressToWire,
  recordProgress,
} from '../src/progress.ts';
import {
  DEFAULT_RETENTION,
  decideBackpressure,
  parseBackpressure,
  parseQueueSettings,
  parseRetention,
  pruneTargets,
  retentionToWire,
} from '../src/queue-config.ts';

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3600_000;
const newJob = (body: Record<string, unknown> = {}): JobRecord =>
  parseEnqueueRequest({ type: 'a.b', args: [], ...body }, T0, { visibilityTimeoutMs: 30_000 });
const isInvalid = (error: unknown) => error instanceof OjsError && error.code === 'invalid_request';

describe('parseJobFilter', () => {
  it('reads lists, prefixes, time ranges and single values', () => {
    assert.deepEqual(
      parseJobFilter({
        state: 'available, active,available',
        queue: 'a,b',
        type: 'email.*',
        since: '2026-01-01T00:00:00Z',
        until: '2026-01-02T00:00:00Z',
        error_type: 'Timeout',
        tag: 'vip',
        meta_key: 'tenant',
      }),
      {
        states: ['available', 'active'],
        queues: ['a', 'b'],
        typePrefix: 'email.',
        createdFrom: T0,
        createdTo: T0 + 24 * HOUR,
        errorType: 'Timeout',
        tag: 'vip',
        metaKey: 'tenant',
      },
    );
    assert.deepEqual(parseJobFilter({ type: 'a.b,c.d' }), { types: ['a.b', 'c.d'] });
    assert.deepEqual(parseJobFilter({}), {});
    assert.equal(isEmptyFilter({}), true);
    assert.equal(isEmptyFilter({ tag: 'x' }), false);
  });

  it('refuses unknown states, bad times, mixed prefixes, odd text, and (strict) unknown keys', () => {
    for (const query of [
      { state: 'done' },
      { since: 'yesterday' },
      { type: 'a.*,b.c' },
      { tag: 'a,b' },
      { queue: "x'); DROP" },
    ]) {
      assert.throws(() => parseJobFilter(query), isInvalid, JSON.stringify(query));
    }
    assert.throws(() => parseJobFilter({ stat: 'available' }, true), isInvalid);
    assert.deepEqual(
      parseJobFilter({ stat: 'available' }),
      {},
      'query strings may carry other params',
    );
  });
});

describe('cursors and index ranges', () => {
  it('round-trips a cursor and refuses a forged or reordered one', () => {
    assert.equal(decodeCursor(encodeCursor(42, 'desc'), 'desc'), 42);
    assert.throws(() => decodeCursor(encodeCursor(42, 'desc'), 'asc'), isInvalid);
    assert.throws(() => decodeCursor('not-a-cursor', 'desc'), isInvalid);
    assert.throws(
      () => decodeCursor(Buffer.from('{"s":1.5,"o":"desc"}').toString('base64url'), 'desc'),
      isInvalid,
    );
  });

  it('names one range per (queue, state), per state, per type, or none', () => {
    assert.deepEqual(indexRanges({ queues: ['q'], states: ['active', 'available'] }), [
      { queue: 'q', state: 'active' },
      { queue: 'q', state: 'available' },
    ]);
    assert.equal(indexRanges({ queues: ['q'] })!.length, 8, 'a queue means each of its states');
    assert.deepEqual(indexRanges({ states: ['completed'] }), [{ state: 'completed' }]);
    assert.deepEqual(indexRanges({ types: ['a.b'] }), [{ type: 'a.b' }]);
    assert.equal(indexRanges({ tag: 'x' }), undefined);
    const many = Array.from({ length: 5 }, (_, i) => `q${i}`);
    assert.equal(
      indexRanges({ queues: many }),
      undefined,
      `more than ${MAX_INDEXED_COMBINATIONS} pairs`,
    );
    assert.deepEqual(indexRanges({ queues: many, states: ['active'] })!.length, 5);
  });
});

describe('progress', () => {
  const active = () => claim(newJob(), { now: T0, workerId: 'w' });

  it('clamps, keeps the highest value of the attempt, extends the lease and emits an event', () => {
    const job = active();
    const first = recordProgress(job, { progress: 1.5, message: 'over' }, T0 + 1000)!;
    assert.equal(first.job.rev, job.rev + 1);
    assert.equal(first.job.lease_until, T0 + 1000 + 30_000);
    assert.equal(currentProgress(first.job)!.value, 1);
    assert.equal(first.events[0]!.type, 'job.progress');
    const lower = recordProgress(first.job, { progress: -3, message: 'lower' }, T0 + 2000)!;
    assert.deepEqual(
      [currentProgress(lower.job)!.value, currentProgress(lower.job)!.message],
      [1, 'lower'],
    );
    const dataOnly = recordProgress(active(), { data: { rows: 3 } }, T0)!;
    assert.equal(currentProgress(dataOnly.job)!.value, null);
  });

  it('belongs to one attempt, reads 1.0 once completed, and ignores jobs that are not active', () => {
    const reported = recordProgress(active(), { progress: 0.4 }, T0)!.job;
    const failed = fail(reported, { message: 'x' }, T0, { random: () => 0.5 });
    assert.equal(currentProgress(failed)!.value, 0.4, 'FAIL keeps the last value');
    const retried = claim({ ...failed, state: 'available' }, { now: T0, workerId: 'w' });
    assert.equal(currentProgress(retried), null, 'a new attempt starts without progress');
    assert.equal(toWire(retried).progress, undefined);
    const done = complete(recordProgress(active(), { progress: 0.3 }, T0)!.job, null, T0);
    assert.equal(progressToWire(done).progress, 1);
    assert.equal(recordProgress(done, { progress: 0.5 }, T0), null);
    assert.equal(recordProgress(newJob(), { progress: 0.5 }, T0), null);
  });

  it('validates updates', () => {
    for (const body of [
      {},
      { progress: 'half' },
      { progress: Number.NaN },
      { data: [1] },
      { message: 3 },
    ]) {
      assert.throws(() => parseProgressUpdate(body as Record<string, unknown>), isInvalid);
    }
    assert.throws(() => parseProgressUpdate({ data: { big: 'x'.repeat(5000) } }), isInvalid);
    assert.deepEqual(parseProgressUpdate({ progress: 0.5, message: 'm' }), {
      progress: 0.5,
      message: 'm',
    });
  });
});

describe('queue settings', () => {
  it('parses retention (null or never keeps) and prints it back', () => {
    const retention = parseRetention({ completed: 'PT1H', discarded: null, dead_letter: 'never' });
    assert.deepEqual(retention, { completed: HOUR, discarded: null, dead_letter: null });
    assert.deepEqual(retentionToWire(retention), {
      completed: 'PT1H',
      discarded: null,
      dead_letter: null,
    });
    for (const bad of [{ finished: 'P1D' }, { completed: 'P0D' }, { completed: 5 }, 'P1D']) {
      assert.throws(() => parseRetention(bad), isInvalid, JSON.stringify(bad));
    }
  });

  it('decides backpressure: reject a batch that does not fit whole, warn above the threshold', () => {
    const config = parseBackpressure({ max_depth: 10, warning_threshold: 0.5 });
    assert.deepEqual(config, { max_depth: 10, strategy: 'reject', warning_threshold: 0.5 });
    assert.deepEqual(decideBackpressure(config, 3, 1), {
      accept: true,
      depth: 3,
      bound: 10,
      pressure: 0.4,
      warn: false,
    });
    assert.equal(decideBackpressure(config, 5, 1)!.warn, true);
    assert.equal(decideBackpressure(config, 9, 1)!.accept, true);
    assert.equal(decideBackpressure(config, 8, 3)!.accept, false);
    assert.equal(decideBackpressure(parseBackpressure({ max_depth: 0 }), 1e9, 1), null);
    for (const bad of [
      { max_depth: -1 },
      { strategy: 'block' },
      { warning_threshold: 2 },
      { maxdepth: 1 },
    ]) {
      assert.throws(() => parseBackpressure(bad), isInvalid, JSON.stringify(bad));
    }
  });

  it('parses the settings part of a config body', () => {
    const settings = parseQueueSettings({ default_retry: { max_attempts: 9 }, concurrency: 2 });
    assert.equal(settings.default_retry!.max_attempts, 9);
    assert.equal(settings.backpressure, undefined);
  });

  it('plans pruner passes: defaults except overridden queues, one pass per override', () => {
    const now = T0 + 1000 * HOUR;
    const targets = pruneTargets(
      { ...DEFAULT_RETENTION, cancelled: null },
      new Map([
        ['fast', { completed: HOUR }],
        ['keep', { completed: null }],
      ]),
      now,
    );
    assert.deepEqual(
      targets.filter((t) => t.retention === 'completed'),
      [
        {
          retention: 'completed',
          before: now - DEFAULT_RETENTION.completed!,
          exceptQueues: ['fast', 'keep'],
        },
        { retention: 'completed', before: now - HOUR, queues: ['fast'] },
      ],
    );
    assert.equal(targets.filter((t) => t.retention === 'cancelled').length, 0, 'kept forever');
    assert.deepEqual(
      targets.filter((t) => t.retention === 'discarded'),
      [{ retention: 'discarded', before: now - DEFAULT_RETENTION.discarded! }],
    );
  });
});

describe('admin actions', () => {
  it('retry: retryable runs now, discarded and cancelled start over; others conflict', () => {
    const failed = fail(
      claim(newJob({ retry: { max_attempts: 3 } }), { now: T0 }),
      { message: 'x' },
      T0,
      {
        random: () => 0.5,
      },
    );
    assert.equal(failed.state, 'retryable');
    const now = retryNow(failed, T0);
    assert.deepEqual([now.state, now.attempt, now.run_at], ['available', 1, undefined]);
    const cancelled = cancel(newJob(), T0);
    const revived = retryNow(cancelled, T0);
    assert.deepEqual(
      [revived.state, revived.attempt, revived.cancelled_at],
      ['available', 0, undefined],
    );
    assert.throws(
      () => retryNow(newJob(), T0),
      (e: unknown) => e instanceof OjsError && e.code === 'conflict',
    );
  });

  it('delete applies to finished jobs only; cancel follows the state machine', () => {
    const done = complete(claim(newJob(), { now: T0 }), null, T0);
    assert.equal(decideAdminAction('delete', done, T0).kind, 'delete');
    assert.throws(() => decideAdminAction('delete', newJob(), T0), OjsError);
    assert.throws(() => decideAdminAction('cancel', done, T0), OjsError);
    const cancelled = decideAdminAction('cancel', newJob(), T0);
    assert.equal(cancelled.kind === 'update' && cancelled.job.state, 'cancelled');
  });
});
