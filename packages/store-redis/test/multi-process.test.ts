/**
 * Redis store acceptance, end to end: three `ojs serve` processes on one
 * Redis key prefix.
 *
 * - A fetch waiting on one process is woken by an enqueue on another (the
 *   apply script's PUBLISH): the servers never re-check the store on their
 *   own here (OJS_FETCH_RECHECK_MS), so each job reaches its waiting fetch
 *   by the cross-process message. The latency is printed (p50 / max).
 * - 20,000 jobs enqueued through all three processes are fetched and
 *   acknowledged by 12 fetchers spread over the three: every job is fetched
 *   once, acknowledged once, has exactly one `job.completed` event, and
 *   none is left active or queued.
 * - A cron registered once, through one process, while all three run their
 *   schedulers during that load: one job per fire time.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, it, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dropPrefix, REDIS_URL, testPrefix, unavailable } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const JOBS = Number(process.env.OJS_MP_JOBS ?? 20_000);
const FETCHERS = 12;
const WAKE_ROUNDS = 20;
/** A cross-process wake-up slower than this fails the test (the figure itself is printed). */
const WAKE_BOUND_MS = 500;
/** Cron period (s) and the least time it runs while the load does. */
const CRON_EVERY_S = 2;
const CRON_MIN_MS = 8000;

interface Server {
  url: string;
  child: ChildProcess;
}

async function startServer(store: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    ['packages/cli/src/main.ts', 'serve', '--port', '0', '--store', store, '--no-grpc'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      // A waiting fetch never re-checks the store by itself within a test's
      // waits: a job it gets was announced across processes (PUBLISH).
      env: { ...process.env, OJS_FETCH_RECHECK_MS: '3600000' },
    },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening on (\S+)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  return { url, child };
}

async function stopServer(server: Server): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    server.child.once('exit', () => resolve());
    server.child.kill('SIGTERM');
  });
}

type Obj = Record<string, unknown>;

async function call(server: Server, method: string, path: string, body?: unknown): Promise<Obj> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/openjobspec+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as Obj;
  if (!response.ok)
    throw new Error(`${method} ${path} -> ${response.status} ${JSON.stringify(json)}`);
  return json;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))]!;

const reason = await unavailable();
if (reason !== undefined) {
  test('three server processes on one Redis prefix', { skip: reason }, () => {});
} else {
  describe('three server processes on one Redis prefix', () => {
    const prefix = testPrefix('mp');
    const spec = new URL(REDIS_URL);
    spec.searchParams.set('prefix', prefix);
    const store = spec.toString();
    let servers: Server[] = [];

    before(async () => {
      servers = await Promise.all([startServer(store), startServer(store), startServer(store)]);
    });
    after(async () => {
      await Promise.all(servers.map(stopServer));
      await dropPrefix(prefix);
    });

    it('every server reports a healthy redis backend', async () => {
      for (const server of servers) {
        const health = await call(server, 'GET', '/ojs/v1/health');
        assert.equal(health.status, 'ok');
        assert.equal((health.backend as Obj).type, 'redis');
      }
    });

    it('a fetch waiting on one process is woken by an enqueue on another', async () => {
      // Warm every path once (connections, compiled code), so round 0 measures what the others do.
      for (const server of servers) {
        await call(server, 'POST', '/ojs/v1/workers/fetch', { queues: ['wake-warm'], count: 1 });
      }
      const latencies: number[] = [];
      const enqueueTimes: number[] = [];
      for (let round = 0; round < WAKE_ROUNDS; round++) {
        const queue = `wake-${round}`;
        const waiter = servers[round % 3]!;
        const enqueuer = servers[(round + 1) % 3]!;
        let answeredAt = 0;
        const waiting = call(waiter, 'POST', '/ojs/v1/workers/fetch', {
          queues: [queue],
          count: 1,
          wait_ms: 10_000,
        }).then((reply) => {
          answeredAt = performance.now();
          return reply;
        });
        // Time for the fetch to claim (nothing) and start waiting; an empty
        // claim takes about a millisecond. Not the proof: the proof is the
        // job arriving, since the waiting server never re-checks by itself.
        await new Promise((resolve) => setTimeout(resolve, 150));
        assert.equal(answeredAt, 0, 'the fetch is still waiting before the enqueue');
        const enqueuedAt = performance.now();
        const enqueued = await call(enqueuer, 'POST', '/ojs/v1/jobs', {
          type: 'wake.test',
          args: [round],
          options: { queue },
        });
        enqueueTimes.push(performance.now() - enqueuedAt);
        const fetched = await waiting;
        latencies.push(answeredAt - enqueuedAt);
        assert.equal(((fetched.jobs as Obj[])[0] as Obj | undefined)?.id, (enqueued.job as Obj).id);
      }
      const sorted = [...latencies].sort((a, b) => a - b);
      const enqueueSorted = [...enqueueTimes].sort((a, b) => a - b);
      console.log(
        `# cross-process wake-up (enqueue sent on one process -> waiting fetch answered on another), ${WAKE_ROUNDS} rounds: p50 ${percentile(sorted, 0.5).toFixed(1)} ms, p90 ${percentile(sorted, 0.9).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms (the enqueue's own round trip: p50 ${percentile(enqueueSorted, 0.5).toFixed(1)} ms)`,
      );
      assert.ok(
        sorted.at(-1)! < WAKE_BOUND_MS,
        `wake-up latencies ${sorted.map((ms) => ms.toFixed(1)).join(', ')} ms`,
      );
    });

    it(`${JOBS} jobs fetched by ${FETCHERS} fetchers over three processes complete exactly once; a cron fires once per fire time`, async () => {
      // The cron runs on every process's scheduler while the load runs.
      await call(servers[0]!, 'POST', '/ojs/v1/cron', {
        name: 'mp-tick',
        expression: `*/${CRON_EVERY_S} * * * * *`,
        overlap_policy: 'allow',
        job_template: { type: 'cron.mp', args: [], options: { queue: 'cron-mp' } },
      });
      const cronStart = Date.now();

      const batches: Promise<Obj>[] = [];
      for (let i = 0; i < JOBS; i += 1000) {
        const jobs = Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({
          type: 'mp.job',
          args: [i + k],
          options: { queue: (i + k) % 2 === 0 ? 'mp-a' : 'mp-b' },
        }));
        batches.push(call(servers[(i / 1000) % 3]!, 'POST', '/ojs/v1/jobs/batch', { jobs }));
      }
      const enqueuedIds = (await Promise.all(batches)).flatMap((reply) =>
        (reply.jobs as Obj[]).map((job) => job.id as string),
      );
      assert.equal(enqueuedIds.length, JOBS);
      assert.equal(new Set(enqueuedIds).size, JOBS);

      const fetchedBy = new Map<string, number>();
      const duplicates: string[] = [];
      let acked = 0;
      const fetcher = async (index: number) => {
        const server = servers[index % 3]!;
        const workerId = `fetcher-${index}`;
        for (let empty = 0; empty < 3; ) {
          const { jobs } = (await call(server, 'POST', '/ojs/v1/workers/fetch', {
            queues: index % 2 === 0 ? ['mp-a', 'mp-b'] : ['mp-b', 'mp-a'],
            count: 50,
            worker_id: workerId,
          })) as { jobs: Obj[] };
          if (jobs.length === 0) {
            empty++;
            await new Promise((resolve) => setTimeout(resolve, 50));
            continue;
          }
          empty = 0;
          for (const job of jobs) {
            if (fetchedBy.has(job.id as string)) duplicates.push(job.id as string);
            fetchedBy.set(job.id as string, index);
          }
          for (let k = 0; k < jobs.length; k += 10) {
            await Promise.all(
              jobs.slice(k, k + 10).map(async (job) => {
                const ack = await call(server, 'POST', '/ojs/v1/workers/ack', {
                  job_id: job.id,
                  attempt: job.attempt,
                  worker_id: workerId,
                  result: { ok: true },
                });
                assert.equal(ack.state, 'completed');
                acked++;
              }),
            );
          }
        }
      };
      const started = Date.now();
      await Promise.all(Array.from({ length: FETCHERS }, (_, i) => fetcher(i)));
      const seconds = (Date.now() - started) / 1000;

      assert.deepEqual(duplicates, [], 'no job fetched twice');
      assert.equal(fetchedBy.size, JOBS, 'every job fetched');
      assert.equal(acked, JOBS, 'every job acknowledged');
      for (const queue of ['mp-a', 'mp-b']) {
        const { stats } = (await call(servers[2]!, 'GET', `/ojs/v1/queues/${queue}/stats`)) as {
          stats: Record<string, number>;
        };
        assert.equal(stats.completed, JOBS / 2, `${queue} completed`);
        assert.equal(stats.active, 0, `${queue} active`);
        assert.equal(stats.depth, 0, `${queue} depth`);
      }
      // The server's record: exactly one job.completed event per enqueued job.
      const completions = new Map<string, number>();
      let cursor = '';
      for (;;) {
        const { events } = (await call(
          servers[1]!,
          'GET',
          `/ojs/v1/events?types=job.completed&queues=mp-a,mp-b&limit=1000&after=${cursor}`,
        )) as { events: { id: string; subject?: string; data: { job_id?: string } }[] };
        if (events.length === 0) break;
        for (const event of events) {
          const id = String(event.data.job_id ?? event.subject);
          completions.set(id, (completions.get(id) ?? 0) + 1);
        }
        cursor = events.at(-1)!.id;
      }
      const missing = enqueuedIds.filter((id) => !completions.has(id));
      const twice = [...completions].filter(([, n]) => n > 1).map(([id]) => id);
      assert.deepEqual(missing, [], 'a job.completed event for every job');
      assert.deepEqual(twice, [], 'no job.completed event twice');
      assert.equal(completions.size, JOBS);
      const perFetcher = [...Array(FETCHERS).keys()].map(
        (i) => [...fetchedBy.values()].filter((v) => v === i).length,
      );
      assert.ok(
        perFetcher.every((n) => n > 0),
        `every fetcher got work: ${perFetcher}`,
      );

      // The cron runs at least CRON_MIN_MS in all, then is removed and its jobs counted.
      const left = CRON_MIN_MS - (Date.now() - cronStart);
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      const { cron } = (await call(servers[1]!, 'GET', '/ojs/v1/cron/mp-tick')) as { cron: Obj };
      await call(servers[0]!, 'DELETE', '/ojs/v1/cron/mp-tick');
      const elapsed = Date.now() - cronStart;
      const runCount = cron.run_count as number;
      const { jobs: cronJobs } = (await call(servers[2]!, 'POST', '/ojs/v1/workers/fetch', {
        queues: ['cron-mp'],
        count: 1000,
      })) as { jobs: Obj[] };
      const fireTimes = cronJobs.map((job) => (job.meta as Obj).cron_triggered_at as string);
      assert.equal(new Set(fireTimes).size, fireTimes.length, 'no fire time enqueued twice');
      for (const at of fireTimes) {
        assert.equal(Date.parse(at) % (CRON_EVERY_S * 1000), 0, `${at} is a fire time`);
      }
      // Read before the DELETE: at most one more fire landed in between.
      assert.ok(
        cronJobs.length === runCount || cronJobs.length === runCount + 1,
        `${cronJobs.length} jobs for run_count ${runCount}`,
      );
      const slots = Math.ceil(elapsed / (CRON_EVERY_S * 1000)) + 1;
      assert.ok(cronJobs.length <= slots, `${cronJobs.length} fires in ${slots} slots`);
      assert.ok(
        cronJobs.length >= Math.floor(elapsed / (CRON_EVERY_S * 1000)) - 2,
        `cron fired ${cronJobs.length}x in ${elapsed} ms`,
      );
      const sortedTimes = fireTimes.map((at) => Date.parse(at)).sort((a, b) => a - b);
      const gaps = sortedTimes.slice(1).filter((t, i) => t - sortedTimes[i]! > CRON_EVERY_S * 1000);
      console.log(
        `# multi-process (redis): ${JOBS} jobs through 3 processes, ${FETCHERS} fetchers, in ${seconds.toFixed(1)} s (${Math.round(JOBS / seconds)} jobs/s): ${completions.size} completed once, 0 twice, 0 lost; per fetcher ${perFetcher.join('/')}; cron fired ${cronJobs.length}x (run_count ${runCount}, ${new Set(fireTimes).size} distinct fire times, ${gaps.length} skipped) in ${(elapsed / 1000).toFixed(1)} s`,
      );
    });
  });
}
