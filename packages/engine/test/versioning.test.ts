/**
 * Job versioning through the engine API (issue 7 acceptance, seed 004,
 * features §8-9) over an in-memory SQLite store on a ManualClock: the
 * background services are never started, so time and lease expiry move
 * only when a test moves them.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  type HandlerDeclaration,
  type JobRecord,
  ManualClock,
  OjsError,
  parseHandlers,
  parseVersion,
  toWire,
} from '@ojs/core';
import { SqliteStore } from '@ojs/store-sqlite';
import { Engine } from '../src/engine.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const TYPE = 'invoice.generate';
const QUEUE = 'billing';

type Obj = Record<string, unknown>;

let store: SqliteStore;
let clock: ManualClock;
let engine: Engine;

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  clock = new ManualClock(T0);
  engine = new Engine({ store, clock, testMode: true, random: () => 0.5 });
});

afterEach(async () => {
  await engine.stop();
  await store.close();
});

const V1_RANGE = '>=1.0 <2.0';
const V2_RANGE = '>=2.0 <3.0';

function handlers(versions: string, type = TYPE): HandlerDeclaration[] {
  return parseHandlers([{ type, versions }])!;
}

async function enqueue(body: Obj): Promise<JobRecord> {
  const result = await engine.enqueue({ queue: QUEUE, ...body });
  assert.equal(result.status, 'created');
  return (result as { job: JobRecord }).job;
}

/** Asserts the promise rejects with an OjsError of this code; returns it. */
async function rejectsWith(promise: Promise<unknown>, code: string): Promise<OjsError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof OjsError, `expected an OjsError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

async function eventsOf(type: string): Promise<Obj[]> {
  return (await engine.listEvents({ types: [type], limit: 100_000 })) as unknown as Obj[];
}

async function counts(queue = QUEUE) {
  return (await engine.store.queueStats(queue, engine.now())).counts;
}

type Klass = 'v1' | 'v2' | 'none';

interface Worker {
  id: string;
  klass: 'v1' | 'v2';
  handlers: HandlerDeclaration[];
  count: number;
}

function makeWorkers(klass: 'v1' | 'v2', n: number, counts: number[]): Worker[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${klass}-worker-${i}`,
    klass,
    handlers: handlers(klass === 'v1' ? V1_RANGE : V2_RANGE),
    count: counts[i % counts.length]!,
  }));
}

/**
 * Runs every worker's fetch concurrently (Promise.all), then acks everything
 * fetched concurrently, until a whole round fetches nothing. Returns, per job
 * id, the workers that received it (in claim order).
 */
async function drain(
  workers: Worker[],
  handledBy: Map<string, Worker[]>,
  options: { ack?: boolean; maxRounds?: number } = {},
): Promise<{ rounds: number; fetched: JobRecord[] }> {
  const fetched: JobRecord[] = [];
  for (let round = 0; round < (options.maxRounds ?? 10_000); round++) {
    const batches = await Promise.all(
      workers.map((w) =>
        engine.fetch({ queues: [QUEUE], count: w.count, workerId: w.id, handlers: w.handlers }),
      ),
    );
    let any = false;
    const acks: Promise<JobRecord>[] = [];
    for (const [i, jobs] of batches.entries()) {
      const worker = workers[i]!;
      assert.ok(jobs.length <= worker.count);
      // Claim order is unchanged: a worker's batch comes out in enqueue order.
      const seqs = jobs.map((j) => j.seq ?? 0);
      assert.deepEqual(
        seqs,
        [...seqs].sort((a, b) => a - b),
      );
      for (const job of jobs) {
        any = true;
        fetched.push(job);
        assert.equal(job.state, 'active');
        assert.equal(job.worker_id, worker.id);
        const list = handledBy.get(job.id) ?? [];
        list.push(worker);
        handledBy.set(job.id, list);
        if (options.ack !== false) {
          acks.push(engine.ack({ jobId: job.id, workerId: worker.id, result: worker.klass }));
        }
      }
    }
    for (const done of await Promise.all(acks)) assert.equal(done.state, 'completed');
    if (!any) return { rounds: round + 1, fetched };
  }
  return { rounds: options.maxRounds ?? 10_000, fetched };
}

/** A mixed producer: a third "1.0", a third "2.0", a third unversioned, in several spellings. */
function mixedBody(i: number): { body: Obj; klass: Klass; version: unknown } {
  const args = [{ customer_id: `cust_${i}`, amount: i }];
  switch (i % 6) {
    case 0:
      return { body: { type: TYPE, version: '1.0', args }, klass: 'v1', version: '1.0' };
    case 1:
      return { body: { type: TYPE, version: '2.0', args }, klass: 'v2', version: '2.0' };
    case 2:
      return { body: { type: TYPE, args }, klass: 'none', version: undefined };
    case 3:
      return { body: { type: `${TYPE}@1.0`, args }, klass: 'v1', version: '1.0' };
    case 4:
      return { body: { type: `${TYPE}@2.0`, args }, klass: 'v2', version: '2.0' };
    default:
      return { body: { type: TYPE, args }, klass: 'none', version: undefined };
  }
}

describe('rolling deployment (acceptance: 2,000 jobs, V1-only and V2-only workers)', () => {
  it('routes every V1 job to a V1 worker and every V2 job to a V2 worker, unversioned to either, none lost', async () => {
    const expected = new Map<string, Klass>();
    for (let i = 0; i < 2000; i++) {
      const { body, klass, version } = mixedBody(i);
      const job = await enqueue(body);
      assert.equal(job.type, TYPE);
      assert.equal(toWire(job).version, version);
      expected.set(job.id, klass);
    }
    const byKlass = (k: Klass) => [...expected.values()].filter((x) => x === k).length;
    assert.deepEqual([byKlass('v1'), byKlass('v2'), byKlass('none')], [667, 667, 666]);
    assert.equal((await counts()).available, 2000);

    const workers = [...makeWorkers('v1', 3, [5, 11, 17]), ...makeWorkers('v2', 3, [7, 13, 3])];
    const handledBy = new Map<string, Worker[]>();
    const { fetched } = await drain(workers, handledBy);

    assert.equal(fetched.length, 2000, 'every job fetched once');
    assert.equal(handledBy.size, 2000, 'no job lost');
    const unversionedBy = { v1: 0, v2: 0 };
    for (const [id, klass] of expected) {
      const by = handledBy.get(id);
      assert.ok(by !== undefined, `job ${id} (${klass}) was never handled`);
      assert.equal(by.length, 1, `job ${id} handled ${by.length} times`);
      const worker = by[0]!;
      if (klass === 'none') unversionedBy[worker.klass]++;
      else assert.equal(worker.klass, klass, `${klass} job ${id} went to ${worker.id}`);
    }
    assert.equal(unversionedBy.v1 + unversionedBy.v2, 666);
    // Unversioned jobs are not reserved for either deployment (VER-006).
    assert.ok(unversionedBy.v1 > 0 && unversionedBy.v2 > 0, JSON.stringify(unversionedBy));

    const final = await counts();
    assert.equal(final.completed, 2000);
    assert.equal(final.available + final.active + final.retryable + final.discarded, 0);
    for (const [id] of expected) {
      const job = await engine.getJob(id);
      assert.equal(job.state, 'completed');
      assert.equal(job.attempt, 1, 'each job ran exactly once');
    }
    assert.equal((await eventsOf('job.completed')).length, 2000);
    assert.equal((await eventsOf('job.failed')).length, 0);
  });

  it('producer and both deployments side by side (enqueues interleaved with fetches and acks): same guarantees', async () => {
    const expected = new Map<string, Klass>();
    const workers = [...makeWorkers('v1', 2, [9, 4]), ...makeWorkers('v2', 2, [6, 15])];
    const handledBy = new Map<string, Worker[]>();
    let produced = 0;
    for (let round = 0; produced < 2000 || round < 5_000; round++) {
      const chunk = Array.from({ length: Math.min(37, 2000 - produced) }, (_, k) => produced + k);
      produced += chunk.length;
      const [, batches] = await Promise.all([
        Promise.all(
          chunk.map(async (i) => {
            const { body, klass } = mixedBody(i);
            expected.set((await enqueue(body)).id, klass);
          }),
        ),
        Promise.all(
          workers.map((w) =>
            engine.fetch({ queues: [QUEUE], count: w.count, workerId: w.id, handlers: w.handlers }),
          ),
        ),
      ]);
      const acks: Promise<JobRecord>[] = [];
      for (const [i, jobs] of batches.entries()) {
        const worker = workers[i]!;
        for (const job of jobs) {
          const list = handledBy.get(job.id) ?? [];
          list.push(worker);
          handledBy.set(job.id, list);
          acks.push(engine.ack({ jobId: job.id, workerId: worker.id }));
        }
      }
      await Promise.all(acks);
      if (produced === 2000 && batches.every((b) => b.length === 0)) break;
    }
    assert.equal(expected.size, 2000);
    assert.equal(handledBy.size, 2000, 'none lost');
    for (const [id, klass] of expected) {
      const by = handledBy.get(id)!;
      assert.equal(by.length, 1, `job ${id} handled once`);
      if (klass !== 'none') assert.equal(by[0]!.klass, klass, `${klass} job ${id}`);
    }
    assert.equal((await counts()).completed, 2000);
  });

  it('with only V1 workers fetching, V2 jobs are held available (never claimed, never failed) until a V2 worker fetches', async () => {
    const expected = new Map<string, Klass>();
    for (let i = 0; i < 300; i++) {
      const { body, klass } = mixedBody(i);
      expected.set((await enqueue(body)).id, klass);
    }
    const v2Ids = [...expected].filter(([, k]) => k === 'v2').map(([id]) => id);
    const v1Workers = makeWorkers('v1', 3, [4, 9, 16]);
    const handledBy = new Map<string, Worker[]>();
    await drain(v1Workers, handledBy);
    assert.equal(handledBy.size, 200, 'V1 workers took every V1 and unversioned job');
    for (const [id, by] of handledBy) {
      assert.notEqual(expected.get(id), 'v2');
      assert.equal(by.length, 1);
    }

    // Time passes, the maintenance passes run, V1 workers keep polling: still held.
    for (let hour = 0; hour < 3; hour++) {
      clock.advance(60 * 60_000);
      await engine.promoteDueJobs();
      await engine.expireLeases();
      const { fetched } = await drain(v1Workers, handledBy);
      assert.equal(fetched.length, 0);
    }
    for (const id of v2Ids) {
      const job = await engine.getJob(id);
      assert.equal(job.state, 'available', `V2 job ${id} held`);
      assert.equal(job.attempt, 0, 'never claimed');
      assert.deepEqual(job.errors, [], 'never failed');
      assert.equal(job.worker_id, undefined);
    }
    assert.equal((await counts()).available, 100);
    for (const type of ['job.failed', 'job.discarded', 'job.retrying']) {
      assert.equal((await eventsOf(type)).length, 0, type);
    }

    // A V2 worker returns: it gets the held jobs, in enqueue order.
    const v2 = makeWorkers('v2', 1, [1000])[0]!;
    const jobs = await engine.fetch({
      queues: [QUEUE],
      count: 1000,
      workerId: v2.id,
      handlers: v2.handlers,
    });
    assert.deepEqual(
      jobs.map((j) => j.id),
      v2Ids,
    );
    for (const job of jobs) await engine.ack({ jobId: job.id, workerId: v2.id });
    assert.equal((await counts()).completed, 300);
  });

  it('V2 jobs in flight when every V2 worker stops come back available and stay held until a V2 worker returns', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push((await enqueue({ type: TYPE, version: '2.0', args: [i] })).id);
    }
    const v1Id = (await enqueue({ type: TYPE, version: '1.0', args: ['v1'] })).id;
    const [v2] = makeWorkers('v2', 1, [8]);
    const inFlight = await engine.fetch({
      queues: [QUEUE],
      count: 8,
      workerId: v2!.id,
      handlers: v2!.handlers,
    });
    assert.equal(inFlight.length, 8);
    // The V2 worker dies without acking; its leases run out.
    clock.advance(engine.visibilityTimeoutMs + 1_000);
    assert.equal(await engine.expireLeases(), 8);
    for (const job of inFlight) {
      const now = await engine.getJob(job.id);
      assert.equal(now.state, 'available');
    }
    const v1Workers = makeWorkers('v1', 2, [10]);
    const handledBy = new Map<string, Worker[]>();
    await drain(v1Workers, handledBy);
    assert.deepEqual([...handledBy.keys()], [v1Id], 'V1 workers never take a V2 job');
    for (const id of ids) {
      const job = await engine.getJob(id);
      assert.equal(job.state, 'available');
    }
    const back = await engine.fetch({
      queues: [QUEUE],
      count: 100,
      workerId: 'v2-worker-new',
      handlers: handlers(V2_RANGE),
    });
    assert.deepEqual(
      back.map((j) => j.id),
      ids,
    );
  });

  it('unversioned jobs reach any worker of the type, a worker of another type gets nothing', async () => {
    const job = await enqueue({ type: TYPE, args: [] });
    const other = await engine.fetch({
      queues: [QUEUE],
      count: 10,
      handlers: handlers('*', 'email.send'),
    });
    assert.deepEqual(other, []);
    const [got] = await engine.fetch({ queues: [QUEUE], count: 10, handlers: handlers('2.0') });
    assert.equal(got?.id, job.id);
  });

  it('a worker without a declaration (no handlers, no registration) takes any version', async () => {
    await enqueue({ type: TYPE, version: '9.0', args: [] });
    await enqueue({ type: 'email.send', version: 2, args: [] });
    const jobs = await engine.fetch({ queues: [QUEUE], count: 10, workerId: 'legacy' });
    assert.equal(jobs.length, 2);
  });

  it('a worker for N.x takes N.y (y >= x) and a worker with a multi-major range takes both majors', async () => {
    const v10 = await enqueue({ type: TYPE, version: '1.0', args: [] });
    const v13 = await enqueue({ type: TYPE, version: '1.3', args: [] });
    const v20 = await enqueue({ type: TYPE, version: 2, args: [] });
    const v30 = await enqueue({ type: TYPE, version: '3.0', args: [] });
    const newer = await engine.fetch({
      queues: [QUEUE],
      count: 10,
      handlers: handlers('>=1.2 <2.0'),
    });
    assert.deepEqual(
      newer.map((j) => j.id),
      [v13.id],
    );
    const spans = await engine.fetch({
      queues: [QUEUE],
      count: 10,
      handlers: handlers('>=1.0 <3.0'),
    });
    assert.deepEqual(
      spans.map((j) => j.id),
      [v10.id, v20.id],
    );
    const rest = await engine.fetch({ queues: [QUEUE], count: 10, handlers: handlers('>=3.0') });
    assert.deepEqual(
      rest.map((j) => j.id),
      [v30.id],
    );
  });

  it('registration and heartbeat declarations route fetches that do not repeat the handlers', async () => {
    const v1 = await enqueue({ type: TYPE, version: '1.0', args: [] });
    const v2 = await enqueue({ type: TYPE, version: '2.0', args: [] });
    await engine.registerWorker('w-reg', handlers(V2_RANGE));
    const first = await engine.fetch({ queues: [QUEUE], count: 10, workerId: 'w-reg' });
    assert.deepEqual(
      first.map((j) => j.id),
      [v2.id],
    );
    // A heartbeat re-declares the worker as V1-only.
    await engine.heartbeat({ workerId: 'w-reg', jobIds: [], handlers: handlers(V1_RANGE) });
    const second = await engine.fetch({ queues: [QUEUE], count: 10, workerId: 'w-reg' });
    assert.deepEqual(
      second.map((j) => j.id),
      [v1.id],
    );
    const stored = await engine.store.getSetting('worker', 'w-reg');
    assert.deepEqual(stored?.value.handlers, [{ type: TYPE, versions: V1_RANGE }]);
  });

  it('a declaration made through another engine on the same store routes this one', async () => {
    const other = new Engine({ store, clock, testMode: true });
    try {
      await other.registerWorker('w-shared', handlers(V2_RANGE));
    } finally {
      await other.stop();
    }
    await enqueue({ type: TYPE, version: '1.0', args: [] });
    const v2 = await enqueue({ type: TYPE, version: '2.0', args: [] });
    const jobs = await engine.fetch({ queues: [QUEUE], count: 10, workerId: 'w-shared' });
    assert.deepEqual(
      jobs.map((j) => j.id),
      [v2.id],
    );
  });

  it('a re-declaration through another engine reaches an engine that already routed the worker', async () => {
    const other = new Engine({ store, clock, testMode: true });
    try {
      await other.registerWorker('w-moving', handlers(V1_RANGE));
      await enqueue({ type: TYPE, version: '1.0', args: [] });
      const v2 = await enqueue({ type: TYPE, version: '2.0', args: [] });
      const first = await engine.fetch({ queues: [QUEUE], count: 10, workerId: 'w-moving' });
      assert.equal(first.length, 1);
      // The worker is redeployed as V2 and heartbeats to the other process.
      await other.heartbeat({ workerId: 'w-moving', jobIds: [], handlers: handlers(V2_RANGE) });
      const second = await engine.fetch({ queues: [QUEUE], count: 10, workerId: 'w-moving' });
      assert.deepEqual(
        second.map((j) => j.id),
        [v2.id],
      );
    } finally {
      await other.stop();
    }
  });

  it('workflow steps keep their version and are routed by it', async () => {
    const workflow = await engine.createWorkflow({
      type: 'group',
      name: 'mixed',
      jobs: [
        { type: TYPE, version: '2.0', args: ['a'], options: { queue: QUEUE } },
        { type: `${TYPE}@1.0`, args: ['b'], options: { queue: QUEUE } },
      ],
    });
    assert.ok(workflow.id);
    const v1 = await engine.fetch({ queues: [QUEUE], count: 10, handlers: handlers(V1_RANGE) });
    assert.deepEqual(
      v1.map((j) => j.args),
      [['b']],
    );
    const v2 = await engine.fetch({ queues: [QUEUE], count: 10, handlers: handlers(V2_RANGE) });
    assert.deepEqual(
      v2.map((j) => [j.args, toWire(j).version]),
      [[['a'], '2.0']],
    );
  });
});

describe('canary routing (acceptance: weights 10/90 over 1,000 jobs)', () => {
  const RULES = [
    { version: '2.0', weight: 10 },
    { version: '1.0', weight: 90 },
  ];

  it('lands exactly 100/900 (and within ±3 points), records routed_version, and workers only get their routed version', async () => {
    await engine.routing.put(TYPE, { rules: RULES });
    const routed = new Map<string, string>();
    for (let i = 0; i < 1000; i++) {
      // Producers of every kind: unversioned, "1.0", "2.0" — routing ignores the job's own version.
      const body: Obj = { type: TYPE, args: [i] };
      if (i % 3 === 1) body.version = '1.0';
      if (i % 3 === 2) body.version = '2.0';
      const job = await enqueue(body);
      assert.ok(job.routed_version === '1.0' || job.routed_version === '2.0');
      assert.equal(toWire(job).routed_version, job.routed_version);
      routed.set(job.id, job.routed_version!);
    }
    const v2 = [...routed.values()].filter((v) => v === '2.0').length;
    const v1 = [...routed.values()].filter((v) => v === '1.0').length;
    assert.ok(Math.abs(v2 / 1000 - 0.1) <= 0.03, `2.0 share ${v2 / 1000}`);
    assert.ok(Math.abs(v1 / 1000 - 0.9) <= 0.03, `1.0 share ${v1 / 1000}`);
    // Smooth weighted round-robin from one process: exact.
    assert.equal(v2, 100);
    assert.equal(v1, 900);
    // Deterministic and spread out: one canary job in every run of ten.
    const order = [...routed.values()];
    for (let start = 0; start < 1000; start += 10) {
      assert.equal(order.slice(start, start + 10).filter((v) => v === '2.0').length, 1);
    }
    // Recorded on the stored job.
    for (const [id, version] of routed) {
      const job = await engine.getJob(id);
      assert.equal(job.routed_version, version);
      assert.equal(job.version_num, parseVersion(version));
    }

    const workers = [...makeWorkers('v1', 2, [50, 37]), ...makeWorkers('v2', 2, [6, 9])];
    const handledBy = new Map<string, Worker[]>();
    await drain(workers, handledBy);
    assert.equal(handledBy.size, 1000);
    for (const [id, version] of routed) {
      const [worker] = handledBy.get(id)!;
      assert.equal(worker!.klass, version === '2.0' ? 'v2' : 'v1', `job ${id} routed ${version}`);
    }
  });

  it('keeps the producer version on the job while routing by routed_version', async () => {
    await engine.routing.put(TYPE, { rules: [{ version: '2.0', weight: 1 }] });
    const job = await enqueue({ type: TYPE, version: '1.0', args: [] });
    assert.equal(job.routed_version, '2.0');
    const wire = toWire(await engine.getJob(job.id));
    assert.equal(wire.version, '1.0');
    assert.equal(wire.routed_version, '2.0');
    assert.deepEqual(await engine.fetch({ queues: [QUEUE], handlers: handlers(V1_RANGE) }), []);
    const [got] = await engine.fetch({ queues: [QUEUE], handlers: handlers(V2_RANGE) });
    assert.equal(got?.id, job.id);
  });

  it('stops routing once the rules are deleted; other types are never routed', async () => {
    await engine.routing.put(TYPE, { rules: RULES });
    const other = await enqueue({ type: 'email.send', args: [] });
    assert.equal(other.routed_version, undefined);
    await engine.routing.delete(TYPE);
    const job = await enqueue({ type: TYPE, args: [] });
    assert.equal(job.routed_version, undefined);
    assert.equal(job.version_num, undefined);
    await rejectsWith(engine.routing.get(TYPE), 'not_found');
    await rejectsWith(engine.routing.delete(TYPE), 'not_found');
  });

  it('routes batch enqueues too', async () => {
    await engine.routing.put(TYPE, { rules: RULES });
    const jobs = await engine.enqueueBatch(
      Array.from({ length: 20 }, (_, i) => ({ type: TYPE, args: [i], options: { queue: QUEUE } })),
    );
    assert.equal(jobs.filter((j) => j.routed_version === '2.0').length, 2);
    assert.equal(jobs.filter((j) => j.routed_version === '1.0').length, 18);
  });

  it('validates rules: weights, versions, auto_rollback', async () => {
    const bad: unknown[] = [
      {},
      { rules: [] },
      { rules: 'x' },
      { rules: [{ version: '2.0' }] },
      { rules: [{ version: '2.0', weight: -1 }] },
      { rules: [{ version: '2.0', weight: 1.5 }] },
      { rules: [{ version: '2.0', weight: '10' }] },
      { rules: [{ version: '2.0', weight: 0 }] },
      { rules: [{ version: 'abc', weight: 1 }] },
      { rules: [{ weight: 1 }] },
      { rules: [{ version: '>=2.0', weight: 1 }] },
      { rules: [{ version: '2.0', weight: 1 }], auto_rollback: {} },
      { rules: [{ version: '2.0', weight: 1 }], auto_rollback: 'yes' },
      {
        rules: [{ version: '2.0', weight: 1 }],
        auto_rollback: { error_rate_threshold: 1.5, evaluation_window: 'PT5M' },
      },
      {
        rules: [{ version: '2.0', weight: 1 }],
        auto_rollback: { error_rate_threshold: 0.1, evaluation_window: '5 minutes' },
      },
      {
        rules: [{ version: '2.0', weight: 1 }],
        auto_rollback: { error_rate_threshold: 0.1, evaluation_window: 'PT5M', action: 'page' },
      },
      {
        rules: [{ version: '2.0', weight: 1 }],
        auto_rollback: { error_rate_threshold: 0.1, evaluation_window: 'PT5M', min_samples: 0 },
      },
    ];
    for (const body of bad) {
      await rejectsWith(engine.routing.put(TYPE, body), 'invalid_request');
    }
    await rejectsWith(engine.routing.get(TYPE), 'not_found');
  });
});

describe('auto-rollback', () => {
  const AUTO = { error_rate_threshold: 0.2, evaluation_window: 'PT5M', min_samples: 10 };
  const RULES = [
    { version: '2.0', weight: 10 },
    { version: '1.0', weight: 90 },
  ];

  async function fetchAll(range: string, workerId: string): Promise<JobRecord[]> {
    return engine.fetch({ queues: [QUEUE], count: 1000, workerId, handlers: handlers(range) });
  }

  it('a V2 that fails every job trips the rollback: all traffic to 1.0, an event, later jobs route to 1.0', async () => {
    await engine.routing.put(TYPE, { rules: RULES, auto_rollback: AUTO });
    for (let i = 0; i < 100; i++) await enqueue({ type: TYPE, args: [i] });
    const v2Jobs = await fetchAll(V2_RANGE, 'v2');
    assert.equal(v2Jobs.length, 10);
    const v1Jobs = await fetchAll(V1_RANGE, 'v1');
    assert.equal(v1Jobs.length, 90);
    for (const job of v1Jobs) await engine.ack({ jobId: job.id, workerId: 'v1' });
    for (const [i, job] of v2Jobs.entries()) {
      // Below min_samples nothing happens yet.
      assert.equal((await engine.routing.get(TYPE)).state, 'active', `after ${i} failures`);
      clock.advance(1_000);
      await engine.nack({
        jobId: job.id,
        workerId: 'v2',
        error: { code: 'handler_error', message: 'v2 is broken' },
      });
    }
    const config = await engine.routing.get(TYPE);
    assert.equal(config.state, 'rolled_back');
    assert.deepEqual(config.rules, [{ version: '1.0', weight: 100 }]);
    assert.equal(config.rolled_back_from, '2.0');
    assert.deepEqual(config.previous_rules, RULES);
    assert.equal(typeof config.rolled_back_at, 'string');
    const events = await eventsOf('routing.rolled_back');
    assert.equal(events.length, 1);
    const data = events[0]!.data as Obj;
    assert.equal(data.job_type, TYPE);
    assert.equal(data.from_version, '2.0');
    assert.equal(data.to_version, '1.0');
    assert.equal(data.samples, 10);
    assert.equal(data.error_rate, 1);

    for (let i = 0; i < 50; i++) {
      const job = await enqueue({ type: TYPE, args: ['after', i] });
      assert.equal(job.routed_version, '1.0');
    }
    // Further failures do not roll back again.
    clock.advance(60_000);
    for (const job of await fetchAll(V2_RANGE, 'v2')) {
      await engine.nack({ jobId: job.id, workerId: 'v2', error: { code: 'boom', message: 'x' } });
    }
    assert.equal((await eventsOf('routing.rolled_back')).length, 1);
  });

  it('does not trip below the threshold, nor on failures outside the evaluation window', async () => {
    await engine.routing.put(TYPE, {
      rules: [
        { version: '2.0', weight: 1 },
        { version: '1.0', weight: 1 },
      ],
      auto_rollback: AUTO,
    });
    for (let i = 0; i < 40; i++)
      await enqueue({ type: TYPE, args: [i], retry: { max_attempts: 1 } });
    const v2Jobs = await fetchAll(V2_RANGE, 'v2');
    assert.equal(v2Jobs.length, 20);
    // 2 failures in 10 = 0.2: not above the threshold.
    for (const [i, job] of v2Jobs.slice(0, 10).entries()) {
      if (i < 2) await engine.nack({ jobId: job.id, workerId: 'v2', error: { message: 'x' } });
      else await engine.ack({ jobId: job.id, workerId: 'v2' });
    }
    assert.equal((await engine.routing.get(TYPE)).state, 'active');
    // 6 minutes later the window holds only what follows: 9 failures < min_samples.
    clock.advance(6 * 60_000);
    for (const job of v2Jobs.slice(10, 19)) {
      await engine.nack({ jobId: job.id, workerId: 'v2', error: { message: 'x' } });
    }
    assert.equal((await engine.routing.get(TYPE)).state, 'active');
    assert.equal((await eventsOf('routing.rolled_back')).length, 0);
    // The tenth failure in the window trips it (9/10 failures... plus none older).
    await engine.nack({ jobId: v2Jobs[19]!.id, workerId: 'v2', error: { message: 'x' } });
    assert.equal((await engine.routing.get(TYPE)).state, 'rolled_back');
  });

  it('requeued nacks are not failures; expired leases are', async () => {
    await engine.routing.put(TYPE, {
      rules: [
        { version: '2.0', weight: 1 },
        { version: '1.0', weight: 1 },
      ],
      auto_rollback: AUTO,
    });
    for (let i = 0; i < 20; i++) await enqueue({ type: TYPE, args: [i] });
    const v2Jobs = await fetchAll(V2_RANGE, 'v2');
    assert.equal(v2Jobs.length, 10);
    for (const job of v2Jobs) {
      await engine.nack({
        jobId: job.id,
        workerId: 'v2',
        requeue: true,
        error: { message: 'later' },
      });
    }
    assert.equal((await engine.routing.get(TYPE)).state, 'active');
    const again = await fetchAll(V2_RANGE, 'v2');
    assert.equal(again.length, 10);
    clock.advance(engine.visibilityTimeoutMs + 1);
    assert.equal(await engine.expireLeases(), 10);
    assert.equal((await engine.routing.get(TYPE)).state, 'rolled_back');
  });

  it('a failing stable version (1.0, weight 90) does not send all traffic to the canary 2.0', async () => {
    await engine.routing.put(TYPE, { rules: RULES, auto_rollback: AUTO });
    for (let i = 0; i < 20; i++) await enqueue({ type: TYPE, args: [i] });
    const v1Jobs = await fetchAll(V1_RANGE, 'v1');
    assert.equal(v1Jobs.length, 18);
    for (const job of v1Jobs.slice(0, 10)) {
      await engine.nack({ jobId: job.id, workerId: 'v1', error: { message: 'db down' } });
    }
    const config = await engine.routing.get(TYPE);
    assert.notDeepEqual(config.rules, [{ version: '2.0', weight: 100 }]);
  });

  it('a new PUT after a rollback re-activates the rules', async () => {
    await engine.routing.put(TYPE, {
      rules: [
        { version: '2.0', weight: 1 },
        { version: '1.0', weight: 1 },
      ],
      auto_rollback: { ...AUTO, min_samples: 1 },
    });
    await enqueue({ type: TYPE, args: [] });
    const [job] = await fetchAll(V2_RANGE, 'v2');
    await engine.nack({ jobId: job!.id, workerId: 'v2', error: { message: 'x' } });
    assert.equal((await engine.routing.get(TYPE)).state, 'rolled_back');
    const config = await engine.routing.put(TYPE, { rules: RULES, auto_rollback: AUTO });
    assert.equal(config.state, 'active');
    assert.deepEqual((await engine.routing.get(TYPE)).rules, RULES);
  });
});

describe('schema validation at enqueue', () => {
  const V1_SCHEMA = {
    type: 'array',
    prefixItems: [
      {
        type: 'object',
        required: ['customer_id', 'amount'],
        properties: { customer_id: { type: 'string' }, amount: { type: 'integer' } },
      },
    ],
  };
  const V2_SCHEMA = {
    type: 'array',
    prefixItems: [
      {
        type: 'object',
        required: ['customer_id', 'amount', 'currency'],
        properties: {
          customer_id: { type: 'string' },
          amount: { type: 'string' },
          currency: { type: 'string', pattern: '^[A-Z]{3}$' },
        },
      },
    ],
  };
  const V1_ARGS = [{ customer_id: 'cust_1', amount: 9999 }];
  const V2_ARGS = [{ customer_id: 'cust_1', amount: '99.99', currency: 'USD' }];
  /** Three violations against V2: customer_id type, amount type, currency pattern. */
  const BAD_V2_ARGS = [{ customer_id: 7, amount: 5, currency: 'usd' }];

  async function registerBoth() {
    await engine.schemas.register(TYPE, '1.0', { args_schema: V1_SCHEMA });
    await engine.schemas.register(TYPE, '2.0', { schema: V2_SCHEMA, compatible_with: ['1.0'] });
  }

  async function storedJobs(): Promise<number> {
    return (await eventsOf('job.enqueued')).length;
  }

  it('strict rejects bad args with validation_error naming every violation, and stores nothing', async () => {
    await registerBoth();
    assert.equal(await engine.schemas.modeFor(TYPE), 'warn', 'default mode is warn');
    assert.equal(await engine.schemas.setMode(TYPE, 'strict'), 'strict');
    assert.equal(await engine.schemas.modeFor(TYPE), 'strict');
    const error = await rejectsWith(
      engine.enqueue({ type: TYPE, version: '2.0', args: BAD_V2_ARGS, queue: QUEUE }),
      'validation_error',
    );
    assert.equal(error.status, 422);
    const violations = error.details?.validation_errors as Obj[];
    assert.ok(Array.isArray(violations));
    assert.equal(violations.length, 3, JSON.stringify(violations));
    const text = JSON.stringify(violations);
    for (const field of ['customer_id', 'amount', 'currency'])
      assert.match(text, new RegExp(field));
    for (const v of violations) {
      assert.equal(typeof v.path, 'string');
      assert.match(v.path as string, /^args\[0\]/);
      assert.equal(typeof v.message, 'string');
    }
    // Missing required fields are named too.
    const missing = await rejectsWith(
      engine.enqueue({ type: TYPE, version: '2.0', args: [{}], queue: QUEUE }),
      'validation_error',
    );
    const missingText = JSON.stringify(missing.details?.validation_errors);
    for (const field of ['customer_id', 'amount', 'currency']) {
      assert.match(missingText, new RegExp(field));
    }
    assert.equal(await storedJobs(), 0);
    assert.equal((await counts()).available, 0);
    // Valid args pass.
    await enqueue({ type: TYPE, version: '2.0', args: V2_ARGS });
    assert.equal(await storedJobs(), 1);
  });

  it('strict rejects a whole batch when one job is invalid', async () => {
    await registerBoth();
    await engine.schemas.setMode(TYPE, 'strict');
    await rejectsWith(
      engine.enqueueBatch([
        { type: TYPE, version: '2.0', args: V2_ARGS },
        { type: TYPE, version: '2.0', args: BAD_V2_ARGS },
      ]),
      'validation_error',
    );
    assert.equal(await storedJobs(), 0);
  });

  it('warn accepts with warnings naming the violations; off stores without checking', async () => {
    await registerBoth();
    await engine.schemas.setMode(TYPE, 'warn');
    const warned = await engine.enqueue({
      type: TYPE,
      version: '2.0',
      args: BAD_V2_ARGS,
      queue: QUEUE,
    });
    assert.equal(warned.status, 'created');
    const warnings = (warned as { warnings?: string[] }).warnings;
    assert.ok(Array.isArray(warnings));
    assert.equal(warnings.length, 3);
    const text = warnings.join('\n');
    for (const field of ['customer_id', 'amount', 'currency'])
      assert.match(text, new RegExp(field));
    const clean = await engine.enqueue({ type: TYPE, version: '2.0', args: V2_ARGS, queue: QUEUE });
    assert.equal(clean.status, 'created');
    assert.equal((clean as { warnings?: string[] }).warnings, undefined);

    await engine.schemas.setMode(TYPE, 'off');
    const off = await engine.enqueue({
      type: TYPE,
      version: '2.0',
      args: BAD_V2_ARGS,
      queue: QUEUE,
    });
    assert.equal(off.status, 'created');
    assert.equal((off as { warnings?: string[] }).warnings, undefined);
    assert.equal(await storedJobs(), 3);
  });

  it('a versioned job is validated against its version, an unversioned one against the latest', async () => {
    await registerBoth();
    await engine.schemas.setMode(TYPE, 'strict');
    await enqueue({ type: TYPE, version: '1.0', args: V1_ARGS });
    await enqueue({ type: `${TYPE}@1.0`, args: V1_ARGS });
    await enqueue({ type: TYPE, version: 1, args: V1_ARGS });
    await rejectsWith(
      engine.enqueue({ type: TYPE, version: '1.0', args: V2_ARGS, queue: QUEUE }),
      'validation_error',
    );
    await rejectsWith(
      engine.enqueue({ type: TYPE, version: '2.0', args: V1_ARGS, queue: QUEUE }),
      'validation_error',
    );
    await rejectsWith(
      engine.enqueue({ type: `${TYPE}@2.0`, args: V1_ARGS, queue: QUEUE }),
      'validation_error',
    );
    // Unversioned: the latest (2.0).
    await enqueue({ type: TYPE, args: V2_ARGS });
    await rejectsWith(
      engine.enqueue({ type: TYPE, args: V1_ARGS, queue: QUEUE }),
      'validation_error',
    );
    // A version with no registered schema is not checked; other types neither.
    await enqueue({ type: TYPE, version: '3.0', args: ['anything'] });
    await enqueue({ type: 'email.send', args: [1, 2, 3] });
    // After deleting 2.0, unversioned jobs follow the new latest (1.0).
    await engine.schemas.delete(TYPE, '2.0');
    await enqueue({ type: TYPE, args: V1_ARGS });
  });

  it('validates against the version the producer declared even when canary rules route it elsewhere', async () => {
    await registerBoth();
    await engine.schemas.setMode(TYPE, 'strict');
    await engine.routing.put(TYPE, { rules: [{ version: '2.0', weight: 1 }] });
    const result = await engine.enqueue({
      type: TYPE,
      version: '1.0',
      args: V1_ARGS,
      queue: QUEUE,
    });
    assert.equal(result.status, 'created');
  });

  it('strict validation covers jobs created by a workflow', async () => {
    await registerBoth();
    await engine.schemas.setMode(TYPE, 'strict');
    await rejectsWith(
      engine.createWorkflow({
        type: 'group',
        name: 'bad',
        jobs: [{ type: TYPE, version: '2.0', args: BAD_V2_ARGS, options: { queue: QUEUE } }],
      }),
      'validation_error',
    );
    assert.equal(await storedJobs(), 0);
  });

  it('draft-07 tuple schemas (items: [...]) are translated and enforced', async () => {
    await engine.schemas.register('ml.train', '1', {
      schema: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }], minItems: 2 },
    });
    await engine.schemas.setMode('ml.train', 'strict');
    await enqueue({ type: 'ml.train', args: ['model', 3] });
    const error = await rejectsWith(
      engine.enqueue({ type: 'ml.train', args: [3, 'model'], queue: QUEUE }),
      'validation_error',
    );
    assert.equal((error.details!.validation_errors as unknown[]).length, 2);
  });

  it('registry: register, duplicate, get, latest, list newest first, delete, modes', async () => {
    const entry = await engine.schemas.register(TYPE, '1.0', { schema: V1_SCHEMA });
    assert.equal(entry.type, TYPE);
    assert.equal(entry.version, '1.0');
    await rejectsWith(engine.schemas.register(TYPE, '1.0', { schema: V2_SCHEMA }), 'conflict');
    // 1, "1.0" and "1.0.0" are the same version.
    await rejectsWith(engine.schemas.register(TYPE, '1', { schema: V2_SCHEMA }), 'conflict');
    await engine.schemas.register(TYPE, '10.0', { schema: V2_SCHEMA });
    await engine.schemas.register(TYPE, '2', { schema: V2_SCHEMA });
    assert.equal((await engine.schemas.register(TYPE, '3', { schema: V2_SCHEMA })).version, 3);
    assert.deepEqual(
      (await engine.schemas.list(TYPE)).map((e) => e.version),
      ['10.0', 3, 2, '1.0'],
      'newest first, numerically',
    );
    assert.equal((await engine.schemas.latest(TYPE)).version, '10.0');
    assert.deepEqual((await engine.schemas.get(TYPE, '1')).schema, V1_SCHEMA);
    await engine.schemas.delete(TYPE, '10.0');
    assert.equal((await engine.schemas.latest(TYPE)).version, 3);
    await rejectsWith(engine.schemas.get(TYPE, '10.0'), 'not_found');
    await rejectsWith(engine.schemas.delete(TYPE, '10.0'), 'not_found');
    await rejectsWith(engine.schemas.latest('nothing.here'), 'not_found');
    await rejectsWith(
      engine.schemas.register(TYPE, 'abc', { schema: V1_SCHEMA }),
      'invalid_request',
    );
    await rejectsWith(engine.schemas.register(TYPE, '4.0', {}), 'invalid_request');
    await rejectsWith(
      engine.schemas.register(TYPE, '4.0', { schema: { type: 'nope' } }),
      'invalid_request',
    );
    await rejectsWith(
      engine.schemas.register(TYPE, '4.0', { schema: V1_SCHEMA, compatible_with: ['x'] }),
      'invalid_request',
    );
    await rejectsWith(engine.schemas.setMode(TYPE, 'loud'), 'invalid_request');
  });
});

describe('unique jobs and versions (seed 004 §15.5)', () => {
  const ARGS = [{ customer_id: 'cust_1' }];

  it('the same args at 1.0 and 2.0 are distinct jobs by default', async () => {
    const unique = { on_conflict: 'reject' };
    const a = await enqueue({ type: TYPE, version: '1.0', args: ARGS, options: { unique } });
    const b = await enqueue({ type: TYPE, version: '2.0', args: ARGS, options: { unique } });
    const c = await enqueue({ type: `${TYPE}@3.0`, args: ARGS, options: { unique } });
    const d = await enqueue({ type: TYPE, args: ARGS, options: { unique } });
    assert.equal(new Set([a.id, b.id, c.id, d.id]).size, 4);
    assert.equal(new Set([a.unique_key, b.unique_key, c.unique_key, d.unique_key]).size, 4);
    // The same version again is a duplicate.
    const error = await rejectsWith(
      engine.enqueue({ type: TYPE, version: '1.0', args: ARGS, queue: QUEUE, options: { unique } }),
      'duplicate',
    );
    assert.equal(error.details?.existing_job_id, a.id);
    await rejectsWith(
      engine.enqueue({ type: `${TYPE}@2.0`, args: ARGS, queue: QUEUE, options: { unique } }),
      'duplicate',
    );
  });

  it('with keys that exclude version, the versions collide; keys with "version" keep them apart', async () => {
    const without = { keys: ['type', 'args'] };
    const a = await enqueue({
      type: TYPE,
      version: '1.0',
      args: ARGS,
      options: { unique: without },
    });
    const error = await rejectsWith(
      engine.enqueue({
        type: TYPE,
        version: '2.0',
        args: ARGS,
        queue: QUEUE,
        options: { unique: without },
      }),
      'duplicate',
    );
    assert.equal(error.details?.existing_job_id, a.id);
    const ignored = await engine.enqueue({
      type: TYPE,
      version: '2.0',
      args: ARGS,
      queue: QUEUE,
      options: { unique: { ...without, on_conflict: 'ignore' } },
    });
    assert.equal(ignored.status, 'existing');
    assert.equal((ignored as { job: JobRecord }).job.id, a.id);

    const withVersion = { keys: ['type', 'args', 'version'] };
    const otherArgs = [{ customer_id: 'cust_2' }];
    await enqueue({
      type: TYPE,
      version: '1.0',
      args: otherArgs,
      options: { unique: withVersion },
    });
    await enqueue({
      type: TYPE,
      version: '2.0',
      args: otherArgs,
      options: { unique: withVersion },
    });
    await rejectsWith(
      engine.enqueue({
        type: TYPE,
        version: '2.0',
        args: otherArgs,
        queue: QUEUE,
        options: { unique: withVersion },
      }),
      'duplicate',
    );
  });

  it('one version spelled 2, "2" or "2.0" is one version for uniqueness', async () => {
    const unique = { on_conflict: 'reject' };
    await enqueue({ type: TYPE, version: '2.0', args: ARGS, options: { unique } });
    await rejectsWith(
      engine.enqueue({ type: TYPE, version: 2, args: ARGS, queue: QUEUE, options: { unique } }),
      'duplicate',
    );
  });
});
