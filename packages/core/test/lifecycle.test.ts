import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OjsError } from '../src/errors.ts';
import type { JobRecord } from '../src/job-types.ts';
import {
  activate,
  assertLeaseHolder,
  assertTransition,
  cancel,
  claim,
  complete,
  expire,
  expireLease,
  extendLease,
  fail,
  MAX_ERROR_HISTORY,
  promote,
  reviveDeadLetter,
} from '../src/lifecycle.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../src/retry.ts';
import { canTransition, JOB_STATES, type JobState } from '../src/states.ts';
import { toIso } from '../src/time.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const ID = '01900000-0000-7000-8000-000000000001';
/** random() = 0.5 makes the jitter factor exactly 1.0. */
const HALF = () => 0.5;

function policy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  return { ...DEFAULT_RETRY_POLICY, non_retryable_errors: [], jitter: false, ...overrides };
}

function makeJob(overrides: Partial<JobRecord> = {}): JobRecord {
  return {
    id: ID,
    type: 'email.send',
    queue: 'default',
    args: ['a@example.com'],
    meta: {},
    state: 'available',
    priority: 0,
    attempt: 0,
    retry: policy(),
    visibility_timeout_ms: 30_000,
    created_at: toIso(T0),
    enqueued_at: toIso(T0),
    errors: [],
    extensions: {},
    rev: 7,
    ...overrides,
  };
}

/** An active job as claim() leaves it, on attempt `attempt`. */
function activeJob(attempt = 1, overrides: Partial<JobRecord> = {}, workerId = 'w1'): JobRecord {
  const base = makeJob({ attempt: attempt - 1, ...overrides });
  return claim(base, { workerId, now: T0 });
}

function assertConflict(fn: () => unknown, details?: Record<string, unknown>): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof OjsError, 'expected an OjsError');
    assert.equal(error.code, 'conflict');
    assert.equal(error.status, 409);
    assert.equal(error.retryable, false);
    if (details) for (const [k, v] of Object.entries(details)) assert.equal(error.details?.[k], v);
    return true;
  });
}

/** Every decision returns a new record: rev + 1, input untouched. */
function assertFreshRecord(before: JobRecord, snapshot: JobRecord, after: JobRecord): void {
  assert.equal(after.rev, before.rev + 1, 'rev increments by one');
  assert.notEqual(after, before, 'a new object is returned');
  assert.deepEqual(before, snapshot, 'the input record is not mutated');
}

function decide(job: JobRecord, fn: (job: JobRecord) => JobRecord): JobRecord {
  const snapshot = structuredClone(job);
  const after = fn(job);
  assertFreshRecord(job, snapshot, after);
  assert.ok(
    job.state === after.state || canTransition(job.state, after.state),
    `${job.state} -> ${after.state} must be an allowed transition`,
  );
  return after;
}

describe('claim', () => {
  it('available -> active: attempt + 1, started_at, worker_id, lease from the job', () => {
    const job = makeJob();
    const out = decide(job, (j) => claim(j, { workerId: 'w1', now: T0 }));
    assert.equal(out.state, 'active');
    assert.equal(out.attempt, 1);
    assert.equal(out.started_at, toIso(T0));
    assert.equal(out.worker_id, 'w1');
    assert.equal(out.lease_until, T0 + 30_000);
    assert.equal(out.timeout_at, undefined, 'no execution deadline without timeout_ms');
    assert.equal(out.completed_at, undefined);
  });

  it('the fetch visibility timeout overrides the job one', () => {
    const out = claim(makeJob(), { now: T0, visibilityTimeoutMs: 3000 });
    assert.equal(out.lease_until, T0 + 3000);
  });

  it('sets the execution deadline from timeout_ms', () => {
    const out = claim(makeJob({ timeout_ms: 2000 }), { now: T0 });
    assert.equal(out.timeout_at, T0 + 2000);
  });

  it('clears run_at, next_attempt_at, cancel_requested and a previous worker_id', () => {
    const job = makeJob({
      run_at: T0 - 1,
      next_attempt_at: toIso(T0 - 1),
      cancel_requested: true,
      worker_id: 'old',
      attempt: 1,
      retry_delay_ms: 1000,
    });
    const out = claim(job, { now: T0 });
    assert.equal(out.attempt, 2);
    assert.equal(out.run_at, undefined);
    assert.equal(out.next_attempt_at, undefined);
    assert.equal(out.cancel_requested, undefined);
    assert.equal(out.worker_id, undefined, 'a claim without worker_id leaves no stale holder');
    assert.equal(out.retry_delay_ms, 1000, 'the backoff before this attempt stays readable');
  });
});

describe('complete', () => {
  it('active -> completed: completed_at, result, error cleared, lease cleared', () => {
    const failed = fail(activeJob(1), { code: 'handler_error', message: 'x' }, T0, {
      random: HALF,
    });
    const again = claim(promote(failed), { workerId: 'w1', now: T0 + 1000 });
    assert.ok(again.error, 'precondition: the job carries the previous error');
    const out = decide(again, (j) => complete(j, { ok: true }, T0 + 1500));
    assert.equal(out.state, 'completed');
    assert.equal(out.completed_at, toIso(T0 + 1500));
    assert.deepEqual(out.result, { ok: true });
    assert.equal(out.error, undefined, 'ACK clears error');
    assert.equal(out.errors.length, 1, 'history is kept');
    assert.equal(out.lease_until, undefined);
    assert.equal(out.timeout_at, undefined);
    assert.equal(out.discarded_at, undefined);
  });

  it('stores any JSON result, and none when result is undefined', () => {
    for (const result of [0, '', false, null, [1, 2], 'text']) {
      assert.deepEqual(complete(activeJob(), result, T0).result, result);
    }
    assert.equal('result' in complete(activeJob(), undefined, T0), false);
  });
});

describe('fail', () => {
  const report = { code: 'handler_error', message: 'boom' };

  it('attempts left -> retryable with backoff, next_attempt_at and the error recorded', () => {
    const job = activeJob(1, { retry: policy({ initial_interval: 'PT2S' }) });
    const out = decide(job, (j) => fail(j, report, T0 + 100, { random: HALF }));
    assert.equal(out.state, 'retryable');
    assert.equal(out.retry_delay_ms, 2000);
    assert.equal(out.run_at, T0 + 100 + 2000);
    assert.equal(out.next_attempt_at, toIso(T0 + 2100));
    assert.equal(out.attempt, 1, 'FAIL never changes the attempt counter');
    assert.equal(out.completed_at, undefined, 'completed_at only on complete and discard');
    assert.equal(out.discarded_at, undefined);
    assert.equal(out.worker_id, undefined);
    assert.equal(out.lease_until, undefined);
    assert.equal(out.timeout_at, undefined);
    assert.deepEqual(out.error, {
      code: 'handler_error',
      type: 'handler_error',
      message: 'boom',
      attempt: 1,
      occurred_at: toIso(T0 + 100),
    });
    assert.deepEqual(out.errors, [out.error]);
  });

  it('second failure backs off exponentially (attempt 2 -> initial * 2)', () => {
    const job = activeJob(2);
    const out = fail(job, report, T0, { random: HALF });
    assert.equal(out.state, 'retryable');
    assert.equal(out.retry_delay_ms, 2000);
  });

  it('jitter uses the injected random source', () => {
    const job = activeJob(1, { retry: policy({ jitter: true }) });
    assert.equal(fail(job, report, T0, { random: () => 0 }).retry_delay_ms, 500);
    assert.equal(fail(job, report, T0, { random: HALF }).retry_delay_ms, 1000);
  });

  it('exhausted (attempt == max_attempts) -> discarded, completed_at = discarded_at', () => {
    const job = activeJob(3);
    const out = decide(job, (j) => fail(j, report, T0 + 5));
    assert.equal(out.state, 'discarded');
    assert.equal(out.discarded_at, toIso(T0 + 5));
    assert.equal(out.completed_at, toIso(T0 + 5));
    assert.equal(out.dead_letter, undefined, 'on_exhaustion discard does not dead-letter');
    assert.equal(out.run_at, undefined);
    assert.equal(out.next_attempt_at, undefined);
    assert.equal(out.error?.attempt, 3);
  });

  it('exhausted with on_exhaustion dead_letter -> discarded and dead-lettered', () => {
    const job = activeJob(1, { retry: policy({ max_attempts: 1, on_exhaustion: 'dead_letter' }) });
    const out = fail(job, report, T0);
    assert.equal(out.state, 'discarded');
    assert.equal(out.dead_letter, true);
  });

  it('max_attempts 0 behaves like 1: the first failure discards', () => {
    const out = fail(activeJob(1, { retry: policy({ max_attempts: 0 }) }), report, T0);
    assert.equal(out.state, 'discarded');
  });

  it('retryable: false -> discarded at once, even with attempts left', () => {
    const out = fail(activeJob(1), { ...report, retryable: false }, T0);
    assert.equal(out.state, 'discarded');
    assert.equal(out.error?.retryable, false);
    assert.equal(out.completed_at, toIso(T0));
  });

  it('non-retryable with dead_letter policy -> dead-lettered', () => {
    const job = activeJob(1, { retry: policy({ on_exhaustion: 'dead_letter' }) });
    const out = fail(job, { ...report, retryable: false }, T0);
    assert.equal(out.state, 'discarded');
    assert.equal(out.dead_letter, true);
  });

  it('error type matching non_retryable_errors (exact, prefix.*, details.error_class) discards', () => {
    const job = activeJob(1, {
      retry: policy({ non_retryable_errors: ['FatalError', 'Auth.*'] }),
    });
    const byType = fail(job, { code: 'handler_error', type: 'FatalError', message: '' }, T0);
    assert.equal(byType.state, 'discarded');
    assert.equal(byType.error?.type, 'FatalError');
    const byClass = fail(
      job,
      { code: 'handler_error', message: '', details: { error_class: 'Auth.TokenExpired' } },
      T0,
    );
    assert.equal(byClass.state, 'discarded');
    assert.equal(byClass.error?.type, 'Auth.TokenExpired');
    assert.deepEqual(byClass.error?.details, { error_class: 'Auth.TokenExpired' });
    const other = fail(job, { code: 'handler_error', type: 'Transient', message: '' }, T0, {
      random: HALF,
    });
    assert.equal(other.state, 'retryable');
  });

  it('handler directives: DISCARD/FAIL discard, DEAD_LETTER dead-letters, regardless of attempts', () => {
    const job = activeJob(1);
    for (const code of ['DISCARD', 'FAIL']) {
      const out = fail(job, { code, message: '' }, T0);
      assert.equal(out.state, 'discarded', code);
      assert.equal(out.dead_letter, undefined, code);
    }
    const dl = fail(job, { code: 'DEAD_LETTER', message: '' }, T0);
    assert.equal(dl.state, 'discarded');
    assert.equal(dl.dead_letter, true);
  });

  it('requeue -> available immediately, no error recorded, lease and worker cleared', () => {
    const job = activeJob(1);
    const out = decide(job, (j) => fail(j, report, T0, { requeue: true }));
    assert.equal(out.state, 'available');
    assert.equal(out.error, undefined);
    assert.deepEqual(out.errors, []);
    assert.equal(out.worker_id, undefined);
    assert.equal(out.lease_until, undefined);
    assert.equal(out.completed_at, undefined);
  });

  it('requeue does not burn an attempt: the next claim runs the same attempt number again', () => {
    const job = activeJob(1);
    const requeued = fail(job, report, T0, { requeue: true });
    const again = claim(requeued, { workerId: 'w2', now: T0 + 1 });
    assert.equal(again.attempt, 1);
  });

  it('a missing code defaults to handler_error; message and backtrace are kept and bounded', () => {
    const out = fail(
      activeJob(1),
      {
        message: 'x'.repeat(20_000),
        backtrace: ['a', 1, 'b', ...Array.from({ length: 100 }, () => 'f')],
      },
      T0,
      { random: HALF },
    );
    assert.equal(out.error?.code, 'handler_error');
    assert.equal(out.error?.type, 'handler_error');
    assert.ok((out.error?.message.length ?? 0) <= 10_001);
    assert.equal(out.error?.backtrace?.[0], 'a');
    assert.equal(out.error?.backtrace?.[1], 'b', 'non-string frames are dropped');
    assert.equal(out.error?.backtrace?.length, 50);
  });

  it(`errors history is capped at the ${MAX_ERROR_HISTORY} most recent`, () => {
    let job = makeJob({ retry: policy({ max_attempts: 100, max_interval: 'PT1S' }) });
    for (let i = 1; i <= MAX_ERROR_HISTORY + 5; i++) {
      job = claim(promote(job), { now: T0 + i });
      job = fail(job, { code: 'handler_error', message: `failure ${i}` }, T0 + i, {
        random: HALF,
      });
    }
    assert.equal(job.errors.length, MAX_ERROR_HISTORY);
    assert.equal(job.errors[0]?.message, 'failure 6');
    assert.equal(job.errors.at(-1)?.message, `failure ${MAX_ERROR_HISTORY + 5}`);
    assert.deepEqual(job.error, job.errors.at(-1));
    assert.ok(MAX_ERROR_HISTORY >= 10, 'ER: at least the 10 most recent');
  });
});

describe('expireLease', () => {
  describe('visibility timeout', () => {
    it('attempts left -> available at once with a visibility_timeout error', () => {
      const job = activeJob(1);
      const now = job.lease_until! + 1;
      const out = decide(job, (j) => expireLease(j, now, HALF));
      assert.equal(out.state, 'available', 'not retryable: X-8 / row 44');
      assert.equal(out.attempt, 1, 'the counter only moves on FETCH');
      assert.equal(out.error?.code, 'visibility_timeout');
      assert.equal(out.error?.type, 'visibility_timeout');
      assert.equal(out.error?.attempt, 1);
      assert.equal(out.errors.length, 1);
      assert.equal(out.lease_until, undefined);
      assert.equal(out.worker_id, undefined);
      assert.equal(out.completed_at, undefined);
      assert.equal(out.run_at, undefined, 'no backoff');
    });

    it('exhausted -> discarded with completed_at; dead_letter only when the policy says so', () => {
      const exhausted = expireLease(activeJob(3), T0 + 60_000);
      assert.equal(exhausted.state, 'discarded');
      assert.equal(exhausted.discarded_at, toIso(T0 + 60_000));
      assert.equal(exhausted.completed_at, toIso(T0 + 60_000));
      assert.equal(exhausted.dead_letter, undefined);
      assert.equal(exhausted.error?.code, 'visibility_timeout');

      const dl = expireLease(
        activeJob(1, { retry: policy({ max_attempts: 1, on_exhaustion: 'dead_letter' }) }),
        T0 + 60_000,
      );
      assert.equal(dl.state, 'discarded');
      assert.equal(dl.dead_letter, true);
    });

    it('a pending execution deadline does not turn a visibility expiry into a timeout', () => {
      const job = activeJob(1, { timeout_ms: 600_000 });
      const out = expireLease(job, job.lease_until! + 1);
      assert.equal(out.state, 'available');
      assert.equal(out.error?.code, 'visibility_timeout');
    });
  });

  describe('execution timeout (timeout_ms)', () => {
    it('attempts left -> retryable with backoff and a timeout error', () => {
      const job = activeJob(1, { timeout_ms: 2000 });
      const out = decide(job, (j) => expireLease(j, T0 + 2000, HALF));
      assert.equal(out.state, 'retryable');
      assert.equal(out.retry_delay_ms, 1000);
      assert.equal(out.next_attempt_at, toIso(T0 + 3000));
      assert.equal(out.error?.code, 'timeout');
      assert.equal(out.error?.type, 'timeout');
      assert.equal(out.error?.attempt, 1);
      assert.match(out.error?.message ?? '', /2000 ms/);
      assert.equal(out.timeout_at, undefined);
      assert.equal(out.lease_until, undefined);
      assert.equal(out.completed_at, undefined);
    });

    it('exhausted -> discarded (completed_at set); dead_letter policy dead-letters', () => {
      const out = expireLease(
        activeJob(1, { timeout_ms: 2000, retry: policy({ max_attempts: 1 }) }),
        T0 + 2000,
      );
      assert.equal(out.state, 'discarded');
      assert.equal(out.completed_at, toIso(T0 + 2000));
      assert.equal(out.dead_letter, undefined);
      const dl = expireLease(
        activeJob(2, {
          timeout_ms: 2000,
          retry: policy({ max_attempts: 2, on_exhaustion: 'dead_letter' }),
        }),
        T0 + 2000,
      );
      assert.equal(dl.state, 'discarded');
      assert.equal(dl.dead_letter, true);
      assert.equal(dl.error?.code, 'timeout');
    });

    it('timeout listed in non_retryable_errors discards at once', () => {
      const out = expireLease(
        activeJob(1, { timeout_ms: 10, retry: policy({ non_retryable_errors: ['timeout'] }) }),
        T0 + 10,
      );
      assert.equal(out.state, 'discarded');
    });
  });
});

describe('cancel', () => {
  const cancellable: JobState[] = ['scheduled', 'available', 'pending', 'retryable'];
  for (const state of cancellable) {
    it(`${state} -> cancelled: cancelled_at set, completed_at absent, run_at cleared`, () => {
      const job = makeJob({ state, run_at: T0 + 5000 });
      const out = decide(job, (j) => cancel(j, T0 + 1));
      assert.equal(out.state, 'cancelled');
      assert.equal(out.cancelled_at, toIso(T0 + 1));
      assert.equal(out.completed_at, undefined);
      assert.equal(out.run_at, undefined);
      assert.equal(out.cancel_requested, undefined, 'only an active job flags its worker');
    });
  }

  it('active -> cancelled at once, flags the worker, keeps attempt and started_at', () => {
    const job = activeJob(2, { timeout_ms: 1000 });
    const out = decide(job, (j) => cancel(j, T0 + 1));
    assert.equal(out.state, 'cancelled');
    assert.equal(out.cancel_requested, true);
    assert.equal(out.attempt, 2);
    assert.equal(out.started_at, job.started_at);
    assert.equal(out.lease_until, undefined);
    assert.equal(out.timeout_at, undefined);
    assert.equal(out.completed_at, undefined);
  });

  for (const state of ['completed', 'cancelled', 'discarded'] as const) {
    it(`${state} -> conflict (409), nothing decided`, () => {
      const job = makeJob({ state });
      assertConflict(() => cancel(job, T0), {
        job_id: ID,
        current_state: state,
        target_state: 'cancelled',
      });
    });
  }
});

describe('assertTransition', () => {
  it('passes allowed transitions and rejects the others with conflict', () => {
    for (const from of JOB_STATES) {
      for (const to of JOB_STATES) {
        const job = makeJob({ state: from });
        if (canTransition(from, to)) assertTransition(job, to, 'op');
        else assertConflict(() => assertTransition(job, to, 'op'), { current_state: from });
      }
    }
  });
});

describe('activate', () => {
  it('pending -> available with a fresh enqueued_at', () => {
    const job = makeJob({ state: 'pending' });
    const out = decide(job, (j) => activate(j, T0 + 99));
    assert.equal(out.state, 'available');
    assert.equal(out.enqueued_at, toIso(T0 + 99));
    assert.equal(out.created_at, job.created_at);
  });

  for (const state of JOB_STATES.filter((s) => s !== 'pending')) {
    it(`${state} -> conflict`, () => {
      assertConflict(() => activate(makeJob({ state }), T0), {
        current_state: state,
        expected_state: 'pending',
      });
    });
  }
});

describe('extendLease', () => {
  it('extends from now by the requested duration', () => {
    const job = activeJob(1);
    const out = decide(job, (j) => extendLease(j, T0 + 20_000, 5000));
    assert.equal(out.lease_until, T0 + 25_000);
    assert.equal(out.state, 'active');
    assert.equal(out.attempt, 1);
    assert.equal(out.worker_id, 'w1');
  });

  it('defaults to the job visibility timeout, counted from now', () => {
    const out = extendLease(activeJob(1), T0 + 20_000);
    assert.equal(out.lease_until, T0 + 20_000 + 30_000);
  });

  it('leaves the execution deadline alone', () => {
    const job = activeJob(1, { timeout_ms: 1000 });
    assert.equal(extendLease(job, T0 + 500).timeout_at, T0 + 1000);
  });
});

describe('reviveDeadLetter', () => {
  function deadLettered(): JobRecord {
    const job = activeJob(1, { retry: policy({ max_attempts: 1, on_exhaustion: 'dead_letter' }) });
    return fail(job, { code: 'handler_error', message: 'x' }, T0 + 10);
  }

  it('discarded -> available: same id, attempt 0, history kept, error and stamps cleared', () => {
    const job = deadLettered();
    const out = decide(job, (j) => reviveDeadLetter(j, T0 + 1000));
    assert.equal(out.id, job.id);
    assert.equal(out.state, 'available');
    assert.equal(out.attempt, 0);
    assert.equal(out.enqueued_at, toIso(T0 + 1000));
    assert.equal(out.error, undefined);
    assert.equal(out.errors.length, 1, 'error history is kept (row 41)');
    for (const field of [
      'dead_letter',
      'discarded_at',
      'completed_at',
      'started_at',
      'worker_id',
      'retry_delay_ms',
      'next_attempt_at',
    ] as const) {
      assert.equal(out[field], undefined, field);
    }
    assert.deepEqual(out.retry, job.retry, 'the retry policy is kept');
    assert.equal(claim(out, { now: T0 + 2000 }).attempt, 1, 'fresh attempts');
  });

  for (const state of JOB_STATES.filter((s) => s !== 'discarded')) {
    it(`${state} -> conflict`, () => {
      assertConflict(() => reviveDeadLetter(makeJob({ state }), T0), { current_state: state });
    });
  }
});

describe('promote', () => {
  for (const state of ['scheduled', 'retryable'] as const) {
    it(`${state} -> available, run_at cleared`, () => {
      const job = makeJob({ state, run_at: T0 });
      const out = decide(job, promote);
      assert.equal(out.state, 'available');
      assert.equal(out.run_at, undefined);
      assert.equal(out.attempt, job.attempt);
    });
  }
});

describe('expire', () => {
  for (const state of ['scheduled', 'available', 'pending', 'retryable'] as const) {
    it(`${state} past expires_at -> discarded with discarded_at and no completed_at`, () => {
      const job = makeJob({ state, run_at: T0 + 5, expires_at_ms: T0 });
      const out = decide(job, (j) => expire(j, T0 + 1));
      assert.equal(out.state, 'discarded');
      assert.equal(out.discarded_at, toIso(T0 + 1));
      assert.equal(out.completed_at, undefined, 'TTL discard leaves completed_at absent');
      assert.equal(out.run_at, undefined);
      assert.equal(out.dead_letter, undefined);
    });
  }
});

describe('assertLeaseHolder (fencing)', () => {
  it('passes the holder, with or without worker_id/attempt', () => {
    const job = activeJob(2, {}, 'w1');
    assertLeaseHolder(job, {}, 'ack');
    assertLeaseHolder(job, { workerId: 'w1' }, 'ack');
    assertLeaseHolder(job, { attempt: 2 }, 'ack');
    assertLeaseHolder(job, { workerId: 'w1', attempt: 2 }, 'ack');
  });

  it('rejects another worker', () => {
    assertConflict(() => assertLeaseHolder(activeJob(1, {}, 'w1'), { workerId: 'w2' }, 'ack'), {
      worker_id: 'w2',
    });
  });

  it('rejects a stale attempt (an older lease of the same job)', () => {
    const job = activeJob(2, {}, 'w1');
    assertConflict(() => assertLeaseHolder(job, { attempt: 1 }, 'ack'), {
      current_attempt: 2,
      attempt: 1,
    });
    assertConflict(() => assertLeaseHolder(job, { workerId: 'w1', attempt: 3 }, 'nack'));
  });

  it('a job claimed without worker_id accepts any worker', () => {
    const job = claim(makeJob(), { now: T0 });
    assertLeaseHolder(job, { workerId: 'anyone' }, 'ack');
  });

  for (const state of JOB_STATES.filter((s) => s !== 'active')) {
    it(`${state} -> conflict with expected_state active`, () => {
      assertConflict(() => assertLeaseHolder(makeJob({ state }), {}, 'ack'), {
        current_state: state,
        expected_state: 'active',
      });
    });
  }

  it('after a visibility expiry and re-claim by w2, w1 is fenced out by worker and attempt', () => {
    const first = activeJob(1, {}, 'w1');
    const expired = expireLease(first, first.lease_until! + 1);
    const second = claim(expired, { workerId: 'w2', now: first.lease_until! + 2 });
    assertConflict(() => assertLeaseHolder(second, { workerId: 'w1' }, 'ack'));
    assertConflict(() => assertLeaseHolder(second, { attempt: 1 }, 'ack'));
    assertLeaseHolder(second, { workerId: 'w2', attempt: 2 }, 'ack');
  });
});
