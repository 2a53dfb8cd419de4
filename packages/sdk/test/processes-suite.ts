/**
 * Multi-process end-to-end suites, over HTTP and in-process (each child then
 * runs its own engine on the same database). processes-sqlite.test.ts and
 * processes-postgres.test.ts run them per store, as separate files so the
 * two stores run in parallel:
 *
 * - SIGTERM mid-job: the worker finishes what fits in its grace period,
 *   requeues the rest, exits 0; the requeued job is later completed once.
 * - 10,000 jobs through 4 worker processes x concurrency 16: every job is
 *   completed exactly once (job states, `job.completed` events, executions).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { OjsClient } from '@ojs/sdk';
import { type Child, spawnWorker } from './children.ts';
import {
  PROCESS_MODES,
  type StoreKind,
  startTestServer,
  type TestServer,
  waitFor,
} from './helpers.ts';

const TOTAL = Number(process.env.OJS_SDK_E2E_JOBS ?? 10_000);

/** Defines the suites for one store, over both transports. */
export function defineProcessSuites(store: StoreKind): void {
  for (const mode of PROCESS_MODES) {
    describe(`worker processes (${mode}, ${store})`, () => {
      let server: TestServer;
      let client: OjsClient;
      let stats: OjsClient;
      const children: Child[] = [];
      const spawnChild = (env: Record<string, string>) => {
        const child = spawnWorker(server, mode, env);
        children.push(child);
        return child;
      };
      before(async () => {
        server = await startTestServer({ store });
        client = server.client(mode);
        // Queue totals (completed) are not in the gRPC QueueStatistics: read them over HTTP.
        stats = server.client('http');
      });
      after(async () => {
        for (const child of children)
          if (child.process.exitCode === null) child.process.kill('SIGKILL');
        await server.close();
      });

      it('SIGTERM mid-job: short job finishes, long job is requeued, then completed exactly once', async () => {
        const queue = `sigterm-${mode}`;
        const slow = await client.enqueue('e2e.slow', [60_000], {
          queue,
          retry: { maxAttempts: 1 },
        });
        const short = await client.enqueue('e2e.slow', [700], { queue });
        const first = spawnChild({
          CHILD_QUEUE: queue,
          CHILD_CONCURRENCY: '2',
          CHILD_SHUTDOWN_MS: '1500',
        });
        await first.waitEvent(
          (e) => e.event === 'started' && e.id === slow!.id,
          'slow job started',
        );
        await first.waitEvent(
          (e) => e.event === 'started' && e.id === short!.id,
          'short job started',
        );

        first.process.kill('SIGTERM');
        assert.equal(await first.exited, 0, `exit code (stderr: ${first.stderr.join('')})`);
        const byEvent = (name: string) =>
          first.events.filter((e) => e.event === name).map((e) => e.id);
        assert.deepEqual(
          byEvent('completed'),
          [short!.id],
          'the short job finished within the grace period',
        );
        assert.deepEqual(byEvent('aborted'), [slow!.id]);
        assert.deepEqual(byEvent('requeued'), [slow!.id]);
        assert.equal(first.events.at(-1)?.event, 'stopped');

        assert.equal((await client.getJob(short!.id)).state, 'completed');
        const requeued = await client.getJob(slow!.id);
        assert.equal(requeued.state, 'available', 'requeued, not lost and not failed');
        assert.equal(requeued.error, undefined);

        const second = spawnChild({ CHILD_QUEUE: queue, CHILD_CONCURRENCY: '2', CHILD_FAST: '1' });
        await second.waitEvent(
          (e) => e.event === 'completed' && e.id === slow!.id,
          'requeued job completed',
        );
        second.process.kill('SIGTERM');
        assert.equal(await second.exited, 0);
        const done = await client.getJob(slow!.id);
        assert.equal(done.state, 'completed');
        assert.equal(done.result, 'fast');
        const completions = await server.engine.listEvents({
          types: ['job.completed'],
          queues: [queue],
          limit: 100,
        });
        const ids = completions.map((e) => (e.data as { job_id?: string }).job_id ?? e.subject);
        assert.deepEqual(
          ids.sort(),
          [short!.id, slow!.id].sort(),
          'each job completed exactly once',
        );
      });

      it('a second SIGTERM skips the grace period and requeues at once', async () => {
        const queue = `sigterm2-${mode}`;
        const slow = await client.enqueue('e2e.slow', [60_000], { queue });
        const child = spawnChild({
          CHILD_QUEUE: queue,
          CHILD_CONCURRENCY: '1',
          CHILD_SHUTDOWN_MS: '60000',
        });
        await child.waitEvent(
          (e) => e.event === 'started' && e.id === slow!.id,
          'slow job started',
        );
        await child.waitEvent((e) => e.event === 'ready', 'worker ready');
        const signalled = Date.now();
        child.process.kill('SIGTERM');
        // The worker has handled the signal: it is stopping, with the job still its own.
        const first = await child.waitEvent((e) => e.event === 'signal', 'first signal handled');
        assert.deepEqual(
          { state: first.state, active: first.active },
          { state: 'terminate', active: 1 },
        );
        assert.equal((await client.getJob(slow!.id)).state, 'active', 'not requeued yet');
        assert.equal(child.process.exitCode, null, 'still waiting for the job after one signal');
        child.process.kill('SIGTERM');
        assert.equal(await child.exited, 0);
        assert.ok(Date.now() - signalled < 10_000, 'did not wait for the 60 s grace period');
        assert.equal((await client.getJob(slow!.id)).state, 'available');
        await client.cancel(slow!.id);
      });

      it(`${TOTAL} jobs through 4 worker processes x concurrency 16 complete exactly once`, async () => {
        const queue = `bulk-${mode}`;
        // The workers are up and polling before the first job exists, so the
        // spread below does not depend on how fast each process starts.
        const workers = Array.from({ length: 4 }, () =>
          spawnChild({ CHILD_QUEUE: queue, CHILD_CONCURRENCY: '16' }),
        );
        for (const w of workers) await w.waitEvent((e) => e.event === 'ready', 'worker ready');
        const started = Date.now();
        const ids: string[] = [];
        for (let offset = 0; offset < TOTAL; offset += 5_000) {
          const size = Math.min(5_000, TOTAL - offset);
          const jobs = await client.enqueueBatch(
            Array.from({ length: size }, (_, i) => ({
              type: 'e2e.work',
              args: [(offset + i) % 3],
              options: { queue },
            })),
          );
          ids.push(...jobs.map((j) => j.id));
        }
        assert.equal(new Set(ids).size, TOTAL);
        await waitFor(
          async () => {
            const counts = await stats.queueStats(queue);
            return counts.completed === TOTAL;
          },
          { timeoutMs: 180_000, intervalMs: 250, what: `${TOTAL} completions` },
        );
        const elapsed = Date.now() - started;
        for (const w of workers) w.process.kill('SIGTERM');
        for (const w of workers)
          assert.equal(await w.exited, 0, `worker exit (stderr: ${w.stderr.join('')})`);

        const counts = await stats.queueStats(queue);
        assert.equal(counts.completed, TOTAL);
        for (const state of [
          'available',
          'active',
          'retryable',
          'scheduled',
          'discarded',
        ] as const) {
          assert.equal(counts[state] ?? 0, 0, `${state} jobs left`);
        }

        // Server side: exactly one job.completed event per job.
        const completedIds: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          const page = await server.engine.listEvents({
            types: ['job.completed'],
            queues: [queue],
            after: cursor,
            limit: 1000,
          });
          if (page.length === 0) break;
          completedIds.push(
            ...page.map((e) => String((e.data as { job_id?: string }).job_id ?? e.subject)),
          );
          cursor = page.at(-1)!.id;
        }
        assert.equal(completedIds.length, TOTAL, 'one completion event per job');
        assert.equal(new Set(completedIds).size, TOTAL);

        // Worker side: every job ran exactly once, spread over the four processes.
        const ran = workers.flatMap((w) =>
          w.events.filter((e) => e.event === 'ran').map((e) => String(e.id)),
        );
        assert.equal(ran.length, TOTAL, 'no job executed twice');
        assert.equal(new Set(ran).size, TOTAL);
        const perWorker = workers.map((w) => w.events.filter((e) => e.event === 'ran').length);
        if (TOTAL >= 2_000) {
          // Through a server, every long-polling worker is served. In-process
          // on SQLite each child takes the file's write lock itself, and
          // SQLite's busy handler is not fair: a child sleeping in it can
          // find the lock taken each time it wakes, until the others drained
          // everything (seen in CI: 233/6167/3600/0). Exactly-once must hold
          // with more than one process at work; an even spread is not promised.
          const working = perWorker.filter((count) => count > 0).length;
          const fair = mode !== 'in-process' || store !== 'sqlite';
          assert.ok(fair ? working === 4 : working >= 2, `work spread: ${perWorker}`);
        }
        const failures = await server.engine.listEvents({
          types: ['job.failed'],
          queues: [queue],
          limit: 10,
        });
        assert.equal(failures.length, 0);
        process.stdout.write(
          `# ${mode}, ${store}: ${TOTAL} jobs in ${elapsed} ms (${Math.round((TOTAL / elapsed) * 1000)} jobs/s), per worker ${perWorker.join('/')}\n`,
        );
      });
    });
  }
}
