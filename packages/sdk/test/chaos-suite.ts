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
import { POSTGRES_URL, type StoreKind, waitFor } from './helpers.ts';

const MAIN = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));
const SECONDS = Number(process.env.OJS_CHAOS_SECONDS ?? 30);
/** Jobs enqueued per second while the chaos runs. */
const RATE = Number(process.env.OJS_CHAOS_RATE ?? 100);
const WORKERS = 4;
/** Mean time between two worker SIGKILLs, and between two server SIGKILLs. */
const WORKER_KILL_EVERY_MS = Number(process.env.OJS_CHAOS_WORKER_KILL_MS ?? 1500);
const SERVER_KILL_EVERY_MS = Number(process.env.OJS_CHAOS_SERVER_KILL_MS ?? 7000);
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
}

export function defineChaosSuite(kind: StoreKind): void {
  describe(`chaos on ${kind}: SIGKILLed workers and server`, () => {
    let store: string;
    let cleanup: () => Promise<void>;
    let port: number;
    let url: string;
    let server: ChildProcess;
    const workers: Child[] = [];

    before(async () => {
      if (kind === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'ojs-chaos-'));
        store = `sqlite:${join(dir, 'ojs.db')}`;
        cleanup = async () => rmSync(dir, { recursive: true, force: true });
      } else {
        const schema = `ojs_chaos_${process.pid}_${randomBytes(4).toString('hex')}`;
        const spec = new URL(POSTGRES_URL);
        spec.searchParams.set('schema', schema);
        store = spec.toString();
        cleanup = async () => {
          const { default: pg } = await import('pg');
          const client = new pg.Client({ connectionString: POSTGRES_URL });
          client.on('error', () => {});
          await client.connect();
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await client.end();
        };
      }
      port = await freePort();
      url = `http://127.0.0.1:${port}`;
      server = await startServerProcess(store, port);
    });

    after(async () => {
      for (const worker of workers) await kill(worker.process);
      if (server !== undefined) await kill(server);
      await cleanup?.();
    });

    it(`${SECONDS} s of enqueues under worker and server SIGKILLs: 0 lost, 0 completed twice`, async () => {
      const queue = 'chaos';
      const figures: Figures = {
        jobs: 0,
        lost: 0,
        duplicateCompletions: 0,
        reExecutions: 0,
        workerKills: 0,
        serverKills: 0,
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

      // The producer: batches with client ids, so a retried batch whose first
      // answer was lost is recognised (409 duplicate: the batch is atomic).
      const acknowledged: string[] = [];
      const post = async (path: string, body: unknown) =>
        fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
      const produce = async () => {
        const deadline = Date.now() + SECONDS * 1000;
        const perTick = Math.max(1, Math.round(RATE / 10));
        while (Date.now() < deadline) {
          const ids = Array.from({ length: perTick }, () => uuidv7());
          const jobs = ids.map((id) => ({
            id,
            type: 'e2e.work',
            args: [Math.floor(Math.random() * 30)],
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
      };

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
      const killers = [killWorkers(), killServer()];
      await produce();
      chaos = false;
      await Promise.all(killers);
      assert.ok(serverUp);

      // Drain: every acknowledged job completed, nothing left to run.
      figures.jobs = acknowledged.length;
      const counts = async () => {
        const res = await fetch(`${url}/ojs/v1/queues/${queue}/stats`);
        return ((await res.json()) as { queue: Record<string, number> }).queue;
      };
      await waitFor(
        async () => {
          const c = await counts();
          return (
            c.available + c.active + c.retryable + c.scheduled === 0 &&
            c.completed >= acknowledged.length
          );
        },
        { timeoutMs: 120_000, intervalMs: 250, what: 'the queue to drain' },
      );

      // Accepted ACKs per job, from the events committed with each completion.
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
      for (const id of acknowledged) {
        const count = completions.get(id) ?? 0;
        if (count === 0) figures.lost++;
        if (count > 1) figures.duplicateCompletions++;
      }
      // Worker side: at most one ACK accepted per job (lines of killed workers may be missing).
      const accepted = new Map<string, number>();
      for (const worker of workers) {
        for (const event of worker.events) {
          if (event.event !== 'completed') continue;
          accepted.set(String(event.id), (accepted.get(String(event.id)) ?? 0) + 1);
        }
      }
      const workerDuplicates = [...accepted.values()].filter((n) => n > 1).length;
      for (const id of acknowledged) {
        figures.reExecutions += Math.max(0, (starts.get(id) ?? 1) - 1);
      }

      const summary = `chaos ${kind}: ${figures.jobs} jobs, ${figures.lost} lost, ${figures.duplicateCompletions} duplicate completions, ${figures.reExecutions} re-executions (${figures.workerKills} worker SIGKILLs, ${figures.serverKills} server SIGKILLs)`;
      process.stdout.write(`# ${summary}\n`);
      assert.equal(figures.lost, 0, summary);
      assert.equal(figures.duplicateCompletions, 0, summary);
      assert.equal(workerDuplicates, 0, `${workerDuplicates} jobs ACKed twice by workers`);
      assert.ok(figures.workerKills > 0 && figures.serverKills > 0, summary);
      for (const worker of live) await kill(worker.process);
    });
  });
}
