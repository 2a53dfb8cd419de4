/**
 * An acknowledged job survives a crash of Redis when Redis runs with
 * `appendonly yes` and `appendfsync always` (what the store's 'info'
 * persistence verdict promises): on a redis-server of the test's own,
 * writers enqueue through the store (single inserts batched per turn,
 * unique-key inserts, scheduled jobs) and a worker claims some of them;
 * redis-server is SIGKILLed while inserts are still in flight and restarted
 * on the same --dir. Then:
 * - every acknowledged job is there with the state and seq it was
 *   acknowledged with (claimed ones still active, with their lease holder);
 * - an insert that failed without an unknown outcome (never sent) is not;
 * - claims continue in FIFO (seq) order from the first unclaimed job, and a
 *   job enqueued after the restart gets a larger seq and comes last.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type JobRecord, OjsError, parseEnqueueRequest } from '@ojs/core';
import { RedisStore } from '../src/index.ts';
import { type RedisServer, redisServer, redisServerMissing } from './redis-server.ts';

const skip = redisServerMissing();

/** Acknowledged inserts before the crash starts (more arrive while it happens). */
const BEFORE_CLAIM = 200;
const BEFORE_KILL = 400;
const WRITERS = 8;
const CLAIMED = 25;
const QUEUE = 'durable';
const LATER = 'durable-later';

function newJob(i: number, now: number): JobRecord {
  const kind = i % 10;
  const options: Record<string, unknown> = { queue: QUEUE };
  // Every 10th a unique job (the judged insert path), every 10th+1 scheduled an hour out.
  if (kind === 0) options.unique = { keys: ['args'], period: 'PT1H' };
  if (kind === 1) {
    options.queue = LATER;
    options.scheduled_at = new Date(now + 3_600_000).toISOString();
  }
  return parseEnqueueRequest({ type: 'durable.job', args: [i], options }, now, {
    visibilityTimeoutMs: 3_600_000,
  });
}

describe('acknowledged jobs survive SIGKILL of Redis with AOF always', {
  skip,
  timeout: 120_000,
}, () => {
  let redis: RedisServer;
  let store: RedisStore;

  before(async () => {
    redis = await redisServer(['--appendonly', 'yes', '--appendfsync', 'always']);
    await redis.start();
  });

  after(async () => {
    await store?.close();
    await redis?.dispose();
  });

  it('every acknowledged job is there with its state and seq; claims continue in FIFO order', async (t) => {
    const writer = new RedisStore({ url: redis.url, prefix: 'durability', log: () => {} });
    await writer.init();
    /** id -> the record as acknowledged (insert result or claim). */
    const acked = new Map<string, JobRecord>();
    const neverSent: string[] = [];
    const unknown: string[] = [];
    let next = 0;
    let claimed: JobRecord[] = [];
    let killing: Promise<void> | undefined;
    let claiming: Promise<void> | undefined;

    const write = async () => {
      for (;;) {
        const now = writer.clock.now();
        const job = newJob(next++, now);
        try {
          const [result] = await writer.insertJobs([job], [], now);
          assert.equal(result?.status, 'inserted', JSON.stringify(result));
          const stored = (result as { job: JobRecord }).job;
          assert.equal(typeof stored.seq, 'number');
          acked.set(job.id, stored);
        } catch (error) {
          assert.ok(
            error instanceof OjsError && error.code === 'backend_unavailable',
            String(error),
          );
          if (error.details?.outcome === 'unknown') unknown.push(job.id);
          else neverSent.push(job.id);
          return;
        }
        // A worker takes the oldest jobs part way; then Redis dies with inserts in flight.
        if (acked.size === BEFORE_CLAIM) {
          claiming ??= writer
            .claimJobs({ queues: [QUEUE], count: CLAIMED, workerId: 'w1', now: writer.clock.now() })
            .then((jobs) => {
              claimed = jobs;
              for (const j of jobs) acked.set(j.id, j);
            });
        }
        if (acked.size >= BEFORE_KILL && claiming !== undefined) {
          // The crash at a moment of its own, while the writers go on (a timer
          // picks the moment; nothing waits on it as proof).
          killing ??= claiming
            .then(() => new Promise((resolve) => setTimeout(resolve, 20)))
            .then(() => redis.kill('SIGKILL'));
        }
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, write));
    await killing;
    await writer.close();
    assert.equal(claimed.length, CLAIMED);
    t.diagnostic(
      `${acked.size} inserts acknowledged, ${unknown.length} with an unknown outcome, ${neverSent.length} never sent, at SIGKILL`,
    );

    // Restart on the same port and directory: Redis reads its AOF back.
    await redis.start();
    store = new RedisStore({ url: redis.url, prefix: 'durability', log: () => {} });
    await store.init();

    const ids = [...acked.keys()];
    const found = await Promise.all(ids.map((id) => store.getJob(id)));
    const missing = ids.filter((_, i) => found[i] === null);
    assert.deepEqual(missing, [], 'acknowledged jobs lost');
    ids.forEach((id, i) => {
      const before = acked.get(id)!;
      const after = found[i]!;
      assert.equal(after.state, before.state, `state of ${id}`);
      assert.equal(after.seq, before.seq, `seq of ${id}`);
      assert.equal(after.queue, before.queue);
      assert.deepEqual(after.args, before.args);
      if (before.state === 'active') {
        assert.equal(after.attempt, before.attempt);
        assert.equal(after.worker_id, 'w1');
      }
    });
    const states = new Map<string, number>();
    for (const job of found) states.set(job!.state, (states.get(job!.state) ?? 0) + 1);
    assert.equal(states.get('active'), CLAIMED);
    assert.ok((states.get('scheduled') ?? 0) > 0, 'scheduled jobs among them');
    for (const id of neverSent) assert.equal(await store.getJob(id), null, `${id} was never sent`);
    const unknownPresent = (await Promise.all(unknown.map((id) => store.getJob(id)))).filter(
      (j) => j !== null,
    );
    t.diagnostic(
      `after restart: ${ids.length}/${ids.length} acknowledged jobs present (${[...states].map(([s, n]) => `${n} ${s}`).join(', ')}); ${unknownPresent.length}/${unknown.length} unknown-outcome inserts applied`,
    );

    // FIFO: the claimed ones were the oldest; the rest come out in seq order,
    // then a job enqueued after the restart.
    const seqOf = (job: JobRecord) => job.seq!;
    const waiting = [...found, ...unknownPresent]
      .filter((j) => j!.queue === QUEUE && j!.state === 'available')
      .map((j) => j!)
      .sort((a, b) => seqOf(a) - seqOf(b));
    const maxClaimed = Math.max(...claimed.map(seqOf));
    assert.ok(seqOf(waiting[0]!) > maxClaimed, 'the claim before the crash took the oldest jobs');
    const now = store.clock.now();
    const [fresh] = await store.insertJobs([newJob(1_000_002, now)], [], now);
    const freshJob = (fresh as { job: JobRecord }).job;
    const maxBefore = Math.max(...[...found, ...unknownPresent].map((j) => seqOf(j!)));
    assert.ok(seqOf(freshJob) > maxBefore, `seq ${freshJob.seq} after the restart > ${maxBefore}`);
    const order: string[] = [];
    for (;;) {
      const page = await store.claimJobs({
        queues: [QUEUE],
        count: 40,
        workerId: 'w2',
        now: store.clock.now(),
      });
      if (page.length === 0) break;
      order.push(...page.map((j) => j.id));
    }
    assert.deepEqual(order, [...waiting.map((j) => j.id), freshJob.id]);
  });
});
