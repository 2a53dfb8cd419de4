/**
 * Builders for the suite: jobs come from `parseEnqueueRequest` at a fixed
 * `now`, and every later state is reached the way the engine reaches it
 * (read -> decide in core -> guarded commit). No test sleeps: time is a
 * number passed to the store.
 */
import assert from 'node:assert/strict';
import {
  claim,
  complete,
  type FailureReport,
  fail,
  type JobRecord,
  jobEvent,
  type OjsEvent,
  parseEnqueueRequest,
  type Store,
} from '@ojs/core';

/** The suite's epoch: 2026-01-01T12:00:00.000Z. */
export const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
/** Default visibility timeout of the suite's jobs. */
export const VISIBILITY_MS = 30 * SECOND;

/** A job as the engine would build it from an enqueue request at `now`. */
export function newJob(body: Record<string, unknown> = {}, now = T0): JobRecord {
  return parseEnqueueRequest({ type: 'test.job', args: [], ...body }, now, {
    visibilityTimeoutMs: VISIBILITY_MS,
  });
}

/** `count` jobs; `body(i)` shapes the i-th one. */
export function newJobs(
  count: number,
  body: (index: number) => Record<string, unknown> = () => ({}),
  now = T0,
): JobRecord[] {
  return Array.from({ length: count }, (_, index) => newJob(body(index), now));
}

/** The job.enqueued event the engine commits with an insert. */
export function enqueuedEvent(job: JobRecord, now = T0): OjsEvent {
  return jobEvent('job.enqueued', job, { priority: job.priority }, now);
}

/** Inserts jobs and asserts every one was inserted; returns the stored records. */
export async function insertOk(
  store: Store,
  jobs: JobRecord[],
  now = T0,
  events: OjsEvent[] = [],
): Promise<JobRecord[]> {
  const results = await store.insertJobs(jobs, events, now);
  assert.equal(results.length, jobs.length, 'one result per job');
  return results.map((result, index) => {
    assert.equal(result.status, 'inserted', `job ${index} should be inserted`);
    return (result as { job: JobRecord }).job;
  });
}

export async function mustGet(store: Store, id: string): Promise<JobRecord> {
  const job = await store.getJob(id);
  assert.notEqual(job, null, `job ${id} should exist`);
  return job!;
}

/**
 * Reads a job, lets `decide` compute its next record (core), commits it
 * guarded on the rev read and asserts the commit landed.
 */
export async function transition(
  store: Store,
  id: string,
  decide: (job: JobRecord) => JobRecord,
  events: (job: JobRecord) => OjsEvent[] = () => [],
): Promise<JobRecord> {
  const before = await mustGet(store, id);
  const after = decide(before);
  const ok = await store.commit({
    updates: [{ job: after, expectRev: before.rev }],
    events: events(after),
  });
  assert.equal(ok, true, `guarded commit on job ${id} (rev ${before.rev}) should succeed`);
  return after;
}

export type Failure = FailureReport & { backtrace?: string[] };

export function failure(overrides: Failure = {}): Failure {
  return { code: 'handler_error', message: 'boom', retryable: true, ...overrides };
}

/** Inserted, then taken by a worker at `now` (attempt 1). */
export async function activeJob(
  store: Store,
  body: Record<string, unknown> = {},
  now = T0,
  workerId = 'worker-1',
): Promise<JobRecord> {
  const [job] = await insertOk(store, [newJob(body, now)], now);
  return transition(store, job!.id, (j) => claim(j, { now, workerId }));
}

export async function completedJob(
  store: Store,
  body: Record<string, unknown> = {},
  now = T0,
  result: unknown = { ok: true },
): Promise<JobRecord> {
  const active = await activeJob(store, body, now);
  return transition(store, active.id, (j) => complete(j, result, now));
}

/** Failed once with retries left: retryable, due at its `run_at`. */
export async function retryableJob(
  store: Store,
  body: Record<string, unknown> = {},
  now = T0,
): Promise<JobRecord> {
  const active = await activeJob(store, body, now);
  const after = await transition(store, active.id, (j) =>
    fail(j, failure(), now, { random: () => 0.5 }),
  );
  assert.equal(after.state, 'retryable');
  return after;
}

/** Failed with no attempts left: discarded, into the dead letter queue when asked. */
export async function discardedJob(
  store: Store,
  body: Record<string, unknown> = {},
  now = T0,
  deadLetter = true,
): Promise<JobRecord> {
  const active = await activeJob(
    store,
    {
      ...body,
      retry: { max_attempts: 1, on_exhaustion: deadLetter ? 'dead_letter' : 'discard' },
    },
    now,
  );
  const after = await transition(store, active.id, (j) => fail(j, failure(), now));
  assert.equal(after.state, 'discarded');
  assert.equal(after.dead_letter === true, deadLetter);
  return after;
}

export const idsOf = (jobs: readonly { id: string }[]): string[] => jobs.map((j) => j.id);

/** Every stored event (the suite never appends more than this). */
export async function allEvents(store: Store): Promise<OjsEvent[]> {
  return store.listEvents({ limit: 10_000 });
}

/** A deterministic permutation (a fixed LCG), so shuffled orders are reproducible. */
export function shuffled<T>(items: readonly T[], seed = 42): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
