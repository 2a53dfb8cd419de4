/**
 * Issue 4 acceptance, end to end: three `ojs serve` processes on one
 * PostgreSQL schema. 20,000 jobs enqueued through all three are fetched
 * and acknowledged by 12 fetchers spread over the three processes: every
 * job completes exactly once and none is left active. A cron registered
 * through one process fires once per fire time in total while all three
 * run their schedulers. A fetch waiting on process 1 is woken by an enqueue
 * on process 2 (LISTEN/NOTIFY).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, it, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dropSchema, POSTGRES_URL, testSchema, unavailable } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const JOBS = Number(process.env.OJS_MP_JOBS ?? 20_000);
const FETCHERS = 12;

interface Server {
  url: string;
  child: ChildProcess;
}

async function startServer(store: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    ['packages/cli/src/main.ts', 'serve', '--port', '0', '--store', store],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      // A waiting fetch never re-checks the store by itself within a test's
      // waits: a job it gets was announced across processes (NOTIFY).
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
  if (server.child.exitCode !== null) return;
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

const reason = await unavailable();
if (reason !== undefined) {
  test('three server processes on one database', { skip: reason }, () => {});
} else {
  describe('three server processes on one database', () => {
    const schema = testSchema('mp');
    const store = `${POSTGRES_URL}?schema=${schema}`;
    let servers: Server[] = [];

    before(async () => {
      servers = await Promise.all([startServer(store), startServer(store), startServer(store)]);
    });
    after(async () => {
      await Promise.all(servers.map(stopServer));
      await dropSchema(schema);
    });

    it('every server reports a healthy postgres backend', async () => {
      for (const server of servers) {
        const health = await call(server, 'GET', '/ojs/v1/health');
        assert.equal(health.status, 'ok');
        assert.equal((health.backend as Obj).type, 'postgres');
      }
    });

    it('a fetch waiting on process 1 is woken by an enqueue on process 2', async (t) => {
      const latencies: number[] = [];
      for (let round = 0; round < 5; round++) {
        const queue = `wake-${round}`;
        const waiting = call(servers[0]!, 'POST', '/ojs/v1/workers/fetch', {
          queues: [queue],
          count: 1,
          wait_ms: 10_000,
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        const enqueuedAt = performance.now();
        const enqueued = await call(servers[1]!, 'POST', '/ojs/v1/jobs', {
          type: 'wake.test',
          args: [round],
          options: { queue },
        });
        const fetched = await waiting;
        latencies.push(performance.now() - enqueuedAt);
        assert.equal(((fetched.jobs as Obj[])[0] as Obj).id, (enqueued.job as Obj).id);
      }
      // The servers never re-check on their own (OJS_FETCH_RECHECK_MS above),
      // so each job above reached its fetch by the cross-process notify.
      latencies.sort((a, b) => a - b);
      t.diagnostic(`wake-up latencies ${latencies.map((ms) => ms.toFixed(1)).join(', ')} ms`);
    });

    it(`${JOBS} jobs fetched by ${FETCHERS} fetchers over three processes complete exactly once; a cron fires once per fire time`, async () => {
      // The cron runs on every process's scheduler while the load runs.
      await call(servers[0]!, 'POST', '/ojs/v1/cron', {
        name: 'mp-tick',
        expression: '*/2 * * * * *',
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
      const enqueued = (await Promise.all(batches)).reduce((n, r) => n + (r.count as number), 0);
      assert.equal(enqueued, JOBS);

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
      const perFetcher = [...Array(FETCHERS).keys()].map(
        (i) => [...fetchedBy.values()].filter((v) => v === i).length,
      );
      assert.ok(
        perFetcher.every((n) => n > 0),
        `every fetcher got work: ${perFetcher}`,
      );

      // Let the cron run a little longer, then count its jobs.
      const elapsed = Math.max(Date.now() - cronStart, 8000);
      await new Promise((resolve) => setTimeout(resolve, elapsed - (Date.now() - cronStart)));
      const { cron } = (await call(servers[1]!, 'GET', '/ojs/v1/cron/mp-tick')) as { cron: Obj };
      await call(servers[0]!, 'DELETE', '/ojs/v1/cron/mp-tick');
      const runCount = cron.run_count as number;
      const { jobs: cronJobs } = (await call(servers[2]!, 'POST', '/ojs/v1/workers/fetch', {
        queues: ['cron-mp'],
        count: 1000,
      })) as { jobs: Obj[] };
      const fireTimes = cronJobs.map((job) => (job.meta as Obj).cron_triggered_at as string);
      assert.equal(new Set(fireTimes).size, fireTimes.length, 'no fire time enqueued twice');
      assert.ok(cronJobs.length >= runCount, `${cronJobs.length} jobs for run_count ${runCount}`);
      const possible = Math.ceil((Date.now() - cronStart) / 2000) + 1;
      assert.ok(cronJobs.length <= possible, `${cronJobs.length} fires in ${possible} slots`);
      assert.ok(
        cronJobs.length >= Math.floor(elapsed / 2000) - 2,
        `cron fired ${cronJobs.length}x`,
      );
      console.log(
        `# multi-process: ${JOBS} jobs through 3 processes in ${seconds.toFixed(1)} s (${Math.round(JOBS / seconds)} jobs/s); cron fired ${cronJobs.length}x in ${(elapsed / 1000).toFixed(1)} s`,
      );
    });
  });
}
