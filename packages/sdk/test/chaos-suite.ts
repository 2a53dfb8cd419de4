/**
 * Chaos test (issue #11), per store: an `ojs serve` process and four SDK
 * worker processes (fixtures/worker-child.ts, over HTTP) while a producer
 * enqueues jobs; worker processes and the server are SIGKILLed at random
 * moments and restarted. Afterwards, with everything drained:
 *
 * - 0 lost: every enqueue the server acknowledged (201, or the 409 duplicate
 *   of a retried batch whose first answer was lost) ends completed;
 * - 0 duplicate completions: exactly one accepted ACK per job, counted from
 *   the `job.completed` events the server commits with each transition, and
 *   at most one accepted ACK per job reported by the workers;
 * - re-executions (a job started again after its worker or the server died)
 *   are counted and reported, not failed: they are the at-least-once price.
 *
 * The bounded version runs in `npm test` (about 30 s of chaos per store);
 * `npm run chaos` runs a long one (OJS_CHAOS_SECONDS, OJS_CHAOS_RATE).
 *
 * Redis restarts (defineRedisRestartSuite, chaos-redis-restart.test.ts): the
 * test runs a redis-server of its own (a free loopback port, its data in a
 * temporary directory) and, besides the worker and server SIGKILLs,
 * SIGKILLs Redis too and restarts it on the same directory. With
 * `appendonly yes` and `appendfsync always` the same two figures must be 0.
 * With `appendonly no` (and no snapshots) a restart comes back empty: that
 * run has no killed workers or server, one Redis SIGKILL, and reports how
 * many acknowledged enqueues never completed, for the README; it asserts
 * nothing about them.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { uuidv7 } from '@ojs/core';
import { type Child, spawnWorker } from './children.ts';
import {
  dropPrefix,
  POSTGRES_URL,
  REDIS_URL,
  redisSpec,
  type StoreKind,
  testPrefix,
  waitFor,
} from './helpers.ts';

const MAIN = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));
const SECONDS = Number(process.env.OJS_CHAOS_SECONDS ?? 30);
/** Jobs enqueued per second while the chaos runs. */
const RATE = Number(process.env.OJS_CHAOS_RATE ?? 100);
const WORKERS = 4;
/** Mean time between two worker SIGKILLs, and between two server SIGKILLs. */
const WORKER_KILL_EVERY_MS = Number(process.env.OJS_CHAOS_WORKER_KILL_MS ?? 1500);
const SERVER_KILL_EVERY_MS = Number(process.env.OJS_CHAOS_SERVER_KILL_MS ?? 7000);
/** Mean time between two Redis SIGKILLs (the Redis restart variant). */
const REDIS_KILL_EVERY_MS = Number(process.env.OJS_CHAOS_REDIS_KILL_MS ?? 10_000);
/** Length of the run that measures what a Redis restart without AOF loses. */
const NO_AOF_SECONDS = Number(process.env.OJS_CHAOS_NO_AOF_SECONDS ?? Math.min(SECONDS, 10));
/** Longest job of that run (ms): jobs are running when Redis is killed. */
const NO_AOF_JOB_MS = 200;
/** The redis-server binary the Redis restart variant runs. */
const REDIS_SERVER = process.env.OJS_TEST_REDIS_SERVER ?? 'redis-server';
/** Short leases, so the jobs of a killed worker come back within seconds. */
const LEASE_MS = 3000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** One `ojs serve` process; resolves once it listens. */
async function startServerProcess(store: string, port: number): Promise<ChildProcess> {
  const server = spawn(
    process.execPath,
    [
      MAIN,
      'serve',
      '--port',
      String(port),
      '--store',
      store,
      '--visibility-timeout-ms',
      String(LEASE_MS),
      '--require-fencing',
      // Restarted on a fixed HTTP port: HTTP only, no gRPC port to collide on.
      '--no-grpc',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const stderr: string[] = [];
  server.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: server.stdout! }).on('line', (line) => {
      if (line.includes('listening')) resolve();
    });
    server.once('exit', (code) =>
      reject(new Error(`ojs serve exited with ${code}: ${stderr.join('').slice(-1000)}`)),
    );
  });
  return server;
}

/**
 * A redis-server of the test's own on 127.0.0.1:`port`, its data in `dir`;
 * resolves once it accepts connections (after loading its AOF, if any).
 */
export async function startRedisServer(
  port: number,
  dir: string,
  aof: boolean,
): Promise<ChildProcess> {
  const redis = spawn(
    REDIS_SERVER,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      aof ? 'yes' : 'no',
      '--appendfsync',
      'always',
      '--save',
      '',
      '--daemonize',
      'no',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output: string[] = [];
  redis.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: redis.stdout! }).on('line', (line) => {
      output.push(line);
      if (line.includes('Ready to accept connections')) resolve();
    });
    redis.once('error', reject);
    redis.once('exit', (code) =>
      reject(new Error(`redis-server exited with ${code}: ${output.join('\n').slice(-1000)}`)),
    );
  });
  return redis;
}

/** undefined when a redis-server of the test's own can be started, else why not. */
export async function redisServerUnavailable(): Promise<string | undefined> {
  const dir = mkdtempSync(join(tmpdir(), 'ojs-redis-probe-'));
  let redis: ChildProcess | undefined;
  try {
    redis = await startRedisServer(await freePort(), dir, true);
    return undefined;
  } catch (error) {
    const reason = `cannot start ${REDIS_SERVER}: ${(error as Error).message}; set OJS_TEST_REDIS_SERVER`;
    if (process.env.CI === 'true') throw new Error(reason);
    return reason;
  } finally {
    if (redis !== undefined) await kill(redis);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

interface Figures {
  jobs: number;
  lost: number;
  duplicateCompletions: number;
  reExecutions: number;
  workerKills: number;
  serverKills: number;
  redisKills: number;
}

/** A Redis of the test's own, killed and restarted on the same data directory. */
interface OwnRedis {
  port: number;
  dir: string;
  aof: boolean;
  process: ChildProcess;
}

interface ChaosStore {
  /** The `--store` spec of the server and the workers. */
  store: string;
  cleanup: () => Promise<void>;
  redis?: OwnRedis;
}

async function openChaosStore(kind: StoreKind, ownRedis?: { aof: boolean }): Promise<ChaosStore> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-chaos-'));
    return {
      store: `sqlite:${join(dir, 'ojs.db')}`,
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  if (kind === 'redis' && ownRedis !== undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-chaos-redis-'));
    const port = await freePort();
    const redis: OwnRedis = {
      port,
      dir,
      aof: ownRedis.aof,
      process: await startRedisServer(port, dir, ownRedis.aof),
    };
    return {
      store: redisSpec('chaos', `redis://127.0.0.1:${port}/0`),
      redis,
      cleanup: async () => {
        await kill(redis.process);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (kind === 'redis') {
    const prefix = testPrefix('chaos');
    return { store: redisSpec(prefix), cleanup: () => dropPrefix(prefix, REDIS_URL) };
  }
  const schema = `ojs_chaos_${process.pid}_${randomBytes(4).toString('hex')}`;
  const spec = new URL(POSTGRES_URL);
  spec.searchParams.set('schema', schema);
  return {
    store: spec.toString(),
    cleanup: async () => {
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      client.on('error', () => {});
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
}

/**
 * The producer: batches with client ids, so a retried batch whose first
 * answer was lost is recognised (409 duplicate: the batch is atomic). Each
 * id is pushed to `acknowledged` once the server answered 201 (or 409).
 */
async function produce(
  url: string,
  queue: string,
  seconds: number,
  acknowledged: string[],
  /** Jobs run for 0 to this many ms. */
  maxJobMs = 30,
): Promise<void> {
  const post = async (path: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
  const deadline = Date.now() + seconds * 1000;
  const perTick = Math.max(1, Math.round(RATE / 10));
  while (Date.now() < deadline) {
    const ids = Array.from({ length: perTick }, () => uuidv7());
    const jobs = ids.map((id) => ({
      id,
      type: 'e2e.work',
      args: [Math.floor(Math.random() * maxJobMs)],
      options: { queue, retry: { max_attempts: 50, initial_interval: 'PT0.1S' } },
    }));
    for (;;) {
      try {
        const res = await post('/ojs/v1/jobs/batch', { jobs });
        if (res.status === 201) break;
        const body = (await res.json()) as { error?: { code?: string } };
        if (res.status === 409 && body.error?.code === 'duplicate') break;
        assert.ok(res.status >= 500, `unexpected ${res.status} ${JSON.stringify(body)}`);
      } catch (error) {
        if (error instanceof assert.AssertionError) throw error;
        // The server is down or restarting: the same batch again.
      }
      await pause(100);
    }
    acknowledged.push(...ids);
    await pause(100);
  }
}

type QueueCounts = Record<'available' | 'active' | 'retryable' | 'scheduled' | 'completed', number>;

async function queueCounts(url: string, queue: string): Promise<QueueCounts> {
  const res = await fetch(`${url}/ojs/v1/queues/${queue}/stats`);
  return ((await res.json()) as { queue: QueueCounts }).queue;
}

/** Per job id, its `job.completed` and `job.started` events (all pages). */
async function countEvents(
  url: string,
  queue: string,
): Promise<{ completions: Map<string, number>; starts: Map<string, number> }> {
  const completions = new Map<string, number>();
  const starts = new Map<string, number>();
  let cursor = '';
  for (;;) {
    const res = await fetch(
      `${url}/ojs/v1/events?queues=${queue}&types=job.completed,job.started&limit=1000&after=${cursor}`,
    );
    const page = (await res.json()) as {
      events: { id: string; type: string; subject?: string; data: { job_id?: string } }[];
    };
    if (page.events.length === 0) break;
    for (const event of page.events) {
      const id = String(event.data.job_id ?? event.subject);
      const map = event.type === 'job.completed' ? completions : starts;
      map.set(id, (map.get(id) ?? 0) + 1);
    }
    cursor = page.events.at(-1)!.id;
  }
  return { completions, starts };
}

/** The first few acknowledged jobs not completed, with their state (a drain that timed out). */
async function unfinished(url: string, ids: string[]): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  for (const id of ids) {
    const res = await fetch(`${url}/ojs/v1/jobs/${id}`);
    const body = (await res.json()) as { job?: Record<string, unknown> };
    const state = res.status === 404 ? 'not found' : body.job?.state;
    if (state === 'completed') continue;
    const { attempt, scheduled_at, error } = body.job ?? {};
    found.push({ id, state, attempt, scheduled_at, error });
    if (found.length >= 5) break;
  }
  return found;
}

/** Job ids with an accepted ACK, per the workers' `completed` lines, and how often. */
function workerCompletions(workers: Child[]): Map<string, number> {
  const accepted = new Map<string, number>();
  for (const worker of workers) {
    for (const event of worker.events) {
      if (event.event !== 'completed') continue;
      accepted.set(String(event.id), (accepted.get(String(event.id)) ?? 0) + 1);
    }
  }
  return accepted;
}

/**
 * The chaos suite of one store. `restartRedis` (Redis only): the store is a
 * redis-server of the test's own with `appendonly yes` and `appendfsync
 * always`, SIGKILLed and restarted on its data directory during the run
 * as well.
 */
export function defineChaosSuite(kind: StoreKind, options: { restartRedis?: boolean } = {}): void {
  const restartRedis = options.restartRedis === true;
  if (restartRedis && kind !== 'redis') throw new Error('restartRedis is for the Redis store');
  const killed = restartRedis ? 'workers, server and Redis (AOF)' : 'workers and server';
  const kills = restartRedis ? 'worker, server and Redis' : 'worker and server';
  describe(`chaos on ${kind}: SIGKILLed ${killed}`, () => {
    let setup: ChaosStore;
    let port: number;
    let url: string;
    let server: ChildProcess;
    const workers: Child[] = [];

    before(async () => {
      setup = await openChaosStore(kind, restartRedis ? { aof: true } : undefined);
      port = await freePort();
      url = `http://127.0.0.1:${port}`;
      server = await startServerProcess(setup.store, port);
    });

    after(async () => {
      for (const worker of workers) await kill(worker.process);
      if (server !== undefined) await kill(server);
      await setup?.cleanup();
    });

    it(`${SECONDS} s of enqueues under ${kills} SIGKILLs: 0 lost, 0 completed twice`, async () => {
      const queue = 'chaos';
      const { store } = setup;
      const figures: Figures = {
        jobs: 0,
        lost: 0,
        duplicateCompletions: 0,
        reExecutions: 0,
        workerKills: 0,
        serverKills: 0,
        redisKills: 0,
      };
      const spawnOne = () => {
        const child = spawnWorker({ url, store }, 'http', {
          CHILD_QUEUE: queue,
          CHILD_CONCURRENCY: '8',
          CHILD_SHUTDOWN_MS: '2000',
        });
        workers.push(child);
        return child;
      };
      const live: Child[] = Array.from({ length: WORKERS }, spawnOne);
      let chaos = true;
      let serverUp = true;
      let redisUp = true;

      const killWorkers = async () => {
        while (chaos) {
          await pause(WORKER_KILL_EVERY_MS * (0.5 + Math.random()));
          if (!chaos) break;
          const index = Math.floor(Math.random() * live.length);
          await kill(live[index]!.process);
          figures.workerKills++;
          live[index] = spawnOne();
        }
      };
      const killServer = async () => {
        while (chaos) {
          await pause(SERVER_KILL_EVERY_MS * (0.5 + Math.random()));
          if (!chaos) break;
          serverUp = false;
          await kill(server);
          figures.serverKills++;
          await pause(200 + Math.random() * 800);
          server = await startServerProcess(store, port);
          serverUp = true;
        }
      };
      const killRedis = async () => {
        const redis = setup.redis!;
        while (chaos) {
          await pause(REDIS_KILL_EVERY_MS * (0.5 + Math.random()));
          if (!chaos) break;
          redisUp = false;
          await kill(redis.process);
          figures.redisKills++;
          await pause(200 + Math.random() * 800);
          redis.process = await startRedisServer(redis.port, redis.dir, redis.aof);
          redisUp = true;
        }
      };
      const killers = [killWorkers(), killServer(), ...(restartRedis ? [killRedis()] : [])];
      const acknowledged: string[] = [];
      await produce(url, queue, SECONDS, acknowledged);
      chaos = false;
      await Promise.all(killers);
      assert.ok(serverUp && redisUp);

      // Drain: every acknowledged job completed, nothing left to run.
      figures.jobs = acknowledged.length;
      let last: Record<string, number> = {};
      await waitFor(
        async () => {
          const c = await queueCounts(url, queue);
          last = c;
          return (
            c.available + c.active + c.retryable + c.scheduled === 0 &&
            c.completed >= acknowledged.length
          );
        },
        { timeoutMs: 120_000, intervalMs: 250, what: 'the queue to drain' },
      ).catch(async (error: Error) => {
        throw new Error(
          `${error.message} ${acknowledged.length} acknowledged; queue ${JSON.stringify(last)}; not completed: ${JSON.stringify(await unfinished(url, acknowledged))}`,
        );
      });

      // Accepted ACKs per job, from the events committed with each completion.
      const { completions, starts } = await countEvents(url, queue);
      for (const id of acknowledged) {
        const count = completions.get(id) ?? 0;
        if (count === 0) figures.lost++;
        if (count > 1) figures.duplicateCompletions++;
      }
      // Worker side: at most one ACK accepted per job (lines of killed workers may be missing).
      const accepted = workerCompletions(workers);
      const workerDuplicates = [...accepted.values()].filter((n) => n > 1).length;
      for (const id of acknowledged) {
        figures.reExecutions += Math.max(0, (starts.get(id) ?? 1) - 1);
      }

      const redisPart = restartRedis ? `, ${figures.redisKills} Redis SIGKILLs` : '';
      const summary = `chaos ${kind}${restartRedis ? ' (Redis restarts, AOF always)' : ''}: ${figures.jobs} jobs, ${figures.lost} lost, ${figures.duplicateCompletions} duplicate completions, ${figures.reExecutions} re-executions (${figures.workerKills} worker SIGKILLs, ${figures.serverKills} server SIGKILLs${redisPart})`;
      process.stdout.write(`# ${summary}\n`);
      assert.equal(figures.lost, 0, summary);
      assert.equal(figures.duplicateCompletions, 0, summary);
      assert.equal(workerDuplicates, 0, `${workerDuplicates} jobs ACKed twice by workers`);
      assert.ok(figures.workerKills > 0 && figures.serverKills > 0, summary);
      if (restartRedis) assert.ok(figures.redisKills > 0, summary);
      for (const worker of live) await kill(worker.process);
    });
  });
}

/**
 * What a Redis restart loses without AOF (`appendonly no`, no snapshots):
 * one server and four workers, none killed, while the producer enqueues;
 * halfway, Redis is SIGKILLed and restarted on its (empty) directory. An
 * acknowledged enqueue is lost when no ACK of it was ever accepted (the
 * workers' `completed` lines, complete here since no worker is killed, and
 * the server's `job.completed` events written after the restart). The
 * figure is printed, not asserted: it is every job queued or running at the
 * instant of the kill, so it depends on the backlog at that moment.
 */
export function defineRedisNoAofLoss(): void {
  describe('Redis restart without AOF: what an acknowledged enqueue risks', () => {
    let setup: ChaosStore;
    let url: string;
    let server: ChildProcess | undefined;
    const workers: Child[] = [];

    before(async () => {
      setup = await openChaosStore('redis', { aof: false });
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      server = await startServerProcess(setup.store, port);
    });

    after(async () => {
      for (const worker of workers) await kill(worker.process);
      if (server !== undefined) await kill(server);
      await setup?.cleanup();
    });

    it(`${NO_AOF_SECONDS} s of enqueues, one Redis SIGKILL + restart with appendonly no: loss measured`, async () => {
      const queue = 'chaos';
      const redis = setup.redis!;
      for (let i = 0; i < WORKERS; i++) {
        workers.push(
          spawnWorker({ url, store: setup.store }, 'http', {
            CHILD_QUEUE: queue,
            CHILD_CONCURRENCY: '8',
            CHILD_SHUTDOWN_MS: '2000',
          }),
        );
      }
      for (const w of workers) await w.waitEvent((e) => e.event === 'ready', 'worker ready');
      const acknowledged: string[] = [];
      let acknowledgedBeforeKill = 0;
      let pendingBeforeKill = 0;
      const restart = (async () => {
        await pause((NO_AOF_SECONDS * 1000) / 2);
        // What Redis holds unfinished just before the kill (read, then killed at once).
        const c = await queueCounts(url, queue);
        pendingBeforeKill = c.available + c.active + c.retryable + c.scheduled;
        acknowledgedBeforeKill = acknowledged.length;
        await kill(redis.process);
        await pause(500);
        redis.process = await startRedisServer(redis.port, redis.dir, false);
      })();
      // Jobs of 0-200 ms: about ten are running at any moment, as in a busy deployment.
      await produce(url, queue, NO_AOF_SECONDS, acknowledged, NO_AOF_JOB_MS);
      await restart;

      // Drained: nothing the restarted Redis holds is left to run.
      await waitFor(
        async () => {
          const c = await queueCounts(url, queue);
          return c.available + c.active + c.retryable + c.scheduled === 0;
        },
        { timeoutMs: 60_000, intervalMs: 250, what: 'the queue to drain' },
      );
      for (const w of workers) w.process.kill('SIGTERM');
      for (const w of workers) await w.exited;

      const { completions } = await countEvents(url, queue);
      const accepted = workerCompletions(workers);
      const ran = new Set(
        workers.flatMap((w) => w.events.filter((e) => e.event === 'ran').map((e) => String(e.id))),
      );
      let lost = 0;
      let ranNotRecorded = 0;
      for (const id of acknowledged) {
        if (completions.has(id) || accepted.has(id)) continue;
        lost++;
        if (ran.has(id)) ranNotRecorded++;
      }
      const duplicates = [...accepted.values()].filter((n) => n > 1).length;
      // The history goes too: jobs the server no longer knows at all, completed or not.
      let forgotten = 0;
      for (let i = 0; i < acknowledged.length; i += 50) {
        const statuses = await Promise.all(
          acknowledged
            .slice(i, i + 50)
            .map(async (id) => (await fetch(`${url}/ojs/v1/jobs/${id}`)).status),
        );
        forgotten += statuses.filter((status) => status === 404).length;
      }
      const summary = `Redis restart without AOF: ${acknowledged.length} acknowledged enqueues (${acknowledgedBeforeKill} before the kill, ${pendingBeforeKill} of them queued or running just before it), ${lost} lost = never completed (${ranNotRecorded} ran but their ACK found no job, ${lost - ranNotRecorded} never ran), ${duplicates} ACKed twice, ${forgotten} no longer known to the server (404); ${RATE} jobs/s of 0-${NO_AOF_JOB_MS} ms`;
      process.stdout.write(`# ${summary}\n`);
      assert.ok(
        acknowledgedBeforeKill > 0 && acknowledged.length > acknowledgedBeforeKill,
        summary,
      );
    });
  });
}
