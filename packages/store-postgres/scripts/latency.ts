/**
 * Round trips and latency of the hot-path operations, run by hand:
 *
 *   npx node packages/store-postgres/scripts/latency.ts [iterations]
 *
 * Uses OJS_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test)
 * and a throwaway schema. Round trips are counted by wrapping
 * pg.Client.prototype.query: node-pg sends one query at a time per
 * connection, so each call is one round trip to the server.
 */
import { randomBytes } from 'node:crypto';
import { complete, extendLease, type JobRecord, jobEvent, parseEnqueueRequest } from '@ojs/core';
import pg from 'pg';
import { PostgresStore } from '../src/index.ts';

const url = process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const iterations = Number(process.argv[2] ?? 2000);
const schema = `ojs_lat_${randomBytes(3).toString('hex')}`;

let queries = 0;
const original = pg.Client.prototype.query;
// biome-ignore lint/suspicious/noExplicitAny: wrapping the driver's overloaded method
(pg.Client.prototype as any).query = function (this: pg.Client, ...args: unknown[]) {
  queries++;
  // biome-ignore lint/suspicious/noExplicitAny: same
  return (original as any).apply(this, args);
};

const store = new PostgresStore({
  connectionString: url,
  schema,
  clockSyncIntervalMs: 0,
  onError: () => {},
});
await store.init();

const now = () => store.clock.now();
const newJob = (body: Record<string, unknown> = {}): JobRecord =>
  parseEnqueueRequest({ type: 'lat.job', args: [1], ...body }, now(), {
    visibilityTimeoutMs: 300_000,
  });

async function measure(
  name: string,
  run: (i: number) => Promise<unknown>,
  count = iterations,
): Promise<void> {
  for (let i = 0; i < Math.min(100, count); i++) await run(-1 - i); // warm-up
  const times: number[] = [];
  const before = queries;
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await run(i);
    times.push(performance.now() - start);
  }
  const perOp = (queries - before) / count;
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  console.log(
    `${name.padEnd(36)} round trips ${perOp.toFixed(2).padStart(5)}   p50 ${at(0.5).toFixed(3)} ms   p99 ${at(0.99).toFixed(3)} ms`,
  );
}

try {
  // The cost of one round trip (the lost-COMMIT check's xid lookup is one).
  await measure('ping (SELECT 1: one round trip)', () => store.ping());
  await measure('insertJobs (1 job)', () => store.insertJobs([newJob()], [], now()));
  await measure('insertJobs (1 job, unique key)', (i) =>
    store.insertJobs(
      [newJob({ args: [i], options: { unique: { keys: ['args'], on_conflict: 'reject' } } })],
      [],
      now(),
    ),
  );
  await measure(
    'insertJobs (100 jobs)',
    () =>
      store.insertJobs(
        Array.from({ length: 100 }, () => newJob()),
        [],
        now(),
      ),
    Math.ceil(iterations / 20),
  );
  await store.reset();
  await store.insertJobs(
    Array.from({ length: iterations * 6 + 3000 }, () => newJob()),
    [],
    now(),
  );
  const claimed: JobRecord[] = [];
  await measure('claimJobs (1 job)', async () => {
    claimed.push(
      ...(await store.claimJobs({ queues: ['default'], count: 1, workerId: 'w', now: now() })),
    );
  });
  // Enough claimed jobs for the ACK paths below (2 x iterations + warm-ups).
  claimed.push(
    ...(await store.claimJobs({
      queues: ['default'],
      count: iterations * 2 + 400,
      workerId: 'w',
      now: now(),
    })),
  );
  await measure('claimJobs (empty queue)', () =>
    store.claimJobs({ queues: ['empty'], count: 1, workerId: 'w', now: now() }),
  );
  // The ACK and heartbeat paths before settleJobs/extendLeases: read, decide, guarded commit.
  let old = 0;
  await measure('heartbeat as getJob + commit', async () => {
    const job = (await store.getJob(claimed[old++ % 100]!.id))!;
    const next = extendLease(job, now());
    await store.commit({ updates: [{ job: next, expectRev: job.rev }] });
  });
  await measure('ack as getJob + commit', async () => {
    const job = (await store.getJob(claimed[old++]!.id))!;
    const done = complete(job, undefined, now());
    await store.commit({
      updates: [{ job: done, expectRev: job.rev }],
      events: [jobEvent('job.completed', done, {}, now())],
    });
  });
  // Absent in versions before the batched seam (the script measures those too).
  if (typeof (store as Partial<PostgresStore>).settleJobs === 'function') {
    const settle = store.settleJobs.bind(store);
    await measure('extendLeases (1 job)', (i) =>
      store.extendLeases([{ id: claimed[i < 0 ? -1 - i : i]!.id, workerId: 'w' }], now()),
    );
    let next = old;
    await measure('settleJobs (1 ack)', () => {
      const job = claimed[next++]!;
      return settle({
        items: [
          { id: job.id, workerId: 'w', attempt: job.attempt, settlement: { kind: 'complete' } },
        ],
        now: now(),
      });
    });
    const batch = await store.claimJobs({
      queues: ['default'],
      count: 1000,
      workerId: 'w',
      now: now(),
    });
    let offset = 0;
    await measure(
      'settleJobs (10 acks)',
      () => {
        const items = batch.slice(offset, offset + 10).map((job) => ({
          id: job.id,
          workerId: 'w',
          attempt: job.attempt,
          settlement: { kind: 'complete' as const },
        }));
        offset += 10;
        return settle({ items, now: now() });
      },
      Math.ceil(iterations / 20),
    );
  }
} finally {
  await store.close();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
}
