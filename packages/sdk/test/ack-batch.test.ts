/**
 * Batched acknowledgement and prefetch, end to end against a real server
 * (HTTP and in-process): outcomes travel in batches and every job completes
 * exactly once; a stale item is refused on its own while the rest of its
 * batch commits; stop() sends pending outcomes; a server without the batch
 * endpoint (undeclared, or 404) gets single ACK/NACK calls; a batch whose
 * response was lost is repeated without reporting false conflicts; prefetch
 * stays within its bound and its buffer is requeued on stop.
 *
 * Nothing here waits for time to pass as proof: tests await worker events or
 * server state.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Engine } from '@ojs/engine';
import {
  type AckBatchRequest,
  ConflictError,
  type Job,
  OjsClient,
  OjsWorker,
  ValidationError,
  type WorkerOptions,
} from '@ojs/sdk';
import { InProcessTransport } from '@ojs/sdk/in-process';
import { buildApp } from '@ojs/server';
import { SqliteStore } from '@ojs/store-sqlite';
import {
  MODES,
  type Mode,
  startTestServer,
  type TestServer,
  testStores,
  waitFor,
} from './helpers.ts';

/** Rejects if `promise` has not settled by the deadline, so a broken worker fails instead of hanging. */
function within<T>(promise: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out waiting for ${what}.`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Resolves once `count` jobs have an outcome recorded (completed or failed). */
function outcomes(worker: OjsWorker, count: number): Promise<string[]> {
  const ids: string[] = [];
  const errors: string[] = [];
  worker.on('error', ({ error }) => errors.push(String(error)));
  const all = new Promise<string[]>((resolve) => {
    const seen = ({ job }: { job: Job }) => {
      ids.push(job.id);
      if (ids.length === count) resolve(ids);
    };
    worker.on('jobCompleted', seen);
    worker.on('jobFailed', seen);
  });
  return within(all, `${count} outcomes`).catch((error: Error) => {
    throw new Error(`${error.message} Got ${ids.length}; worker errors: ${errors.join('; ')}`);
  });
}

/** Records what the worker's transport sends. */
function spy(worker: OjsWorker) {
  const batches: AckBatchRequest[] = [];
  const singles: string[] = [];
  const t = worker.transport;
  const ackBatch = t.ackBatch?.bind(t);
  if (ackBatch !== undefined) {
    t.ackBatch = (request, options) => {
      batches.push(structuredClone(request));
      return ackBatch(request, options);
    };
  }
  const ack = t.ack.bind(t);
  const nack = t.nack.bind(t);
  t.ack = (request, options) => {
    singles.push(`ack:${request.job_id}`);
    return ack(request, options);
  };
  t.nack = (request, options) => {
    singles.push(`nack:${request.job_id}`);
    return nack(request, options);
  };
  return { batches, singles };
}

for (const store of await testStores())
  for (const mode of MODES) {
    describe(`batched acknowledgement (${mode}, ${store})`, () => {
      let server: TestServer;
      let client: OjsClient;
      let n = 0;
      const queue = () => `ab-${mode === 'http' ? 'h' : 'p'}-${++n}`;
      const workers: OjsWorker[] = [];
      const worker = (options: WorkerOptions, m: Mode = mode) => {
        const w = server.worker(m, { heartbeatIntervalMs: 200, ...options });
        workers.push(w);
        return w;
      };
      /** Ids of the jobs with a job.completed event in `q`, from the server. */
      const completedIds = async (q: string) => {
        const events = await server.engine.listEvents({
          types: ['job.completed'],
          queues: [q],
          limit: 10_000,
        });
        return events.map((e) => String((e.data as { job_id?: string }).job_id ?? e.subject));
      };

      before(async () => {
        server = await startTestServer({ store });
        client = server.client(mode);
      });
      after(async () => {
        await Promise.all(workers.map((w) => w.stop({ timeoutMs: 0 })));
        await server.close();
      });

      it('sends outcomes in batches; every job completes exactly once', async () => {
        const q = queue();
        const w = worker({ queues: [q], concurrency: 20, ackBatchSize: 25 });
        const sent = spy(w);
        w.register('ab.ok', async (ctx) => ({ n: ctx.args[0] }));
        w.register('ab.fail', async () => {
          throw new RangeError('no');
        });
        const jobs = await client.enqueueBatch(
          Array.from({ length: 300 }, (_, i) => ({
            type: i % 10 === 0 ? 'ab.fail' : 'ab.ok',
            args: [i],
            options: { queue: q, retry: { maxAttempts: 1 } },
          })),
        );
        const done = outcomes(w, jobs.length);
        const errors: unknown[] = [];
        w.on('error', ({ error }) => errors.push(error));
        await w.start();
        assert.equal(new Set(await done).size, jobs.length);
        assert.deepEqual(errors, []);

        assert.deepEqual(sent.singles, [], 'no single ACK/NACK calls');
        const items = sent.batches.flatMap((b) => [...b.acks, ...b.nacks]);
        assert.equal(items.length, jobs.length, 'one item per job');
        assert.equal(new Set(items.map((i) => i.job_id)).size, jobs.length);
        assert.ok(sent.batches.length < jobs.length / 5, `${sent.batches.length} batches`);
        assert.ok(sent.batches.every((b) => b.acks.length + b.nacks.length <= 25));
        for (const item of items) {
          assert.equal(item.worker_id, w.workerId);
          assert.equal(item.attempt, 1, 'the fetched attempt fences every item');
        }
        assert.ok(sent.batches.some((b) => b.nacks.length > 0 && b.acks.length > 0));

        const okIds = jobs.filter((j) => j.type === 'ab.ok').map((j) => j.id);
        const completed = await completedIds(q);
        assert.equal(completed.length, okIds.length, 'one job.completed event per job');
        assert.deepEqual([...completed].sort(), [...okIds].sort());
        const stats = await client.queueStats(q);
        assert.equal(stats.completed, okIds.length);
        assert.equal(stats.discarded, jobs.length - okIds.length);
        assert.equal(stats.active ?? 0, 0);
      });

      it('a stale item (wrong attempt) is reported on its own; the rest of its batch commits', async () => {
        const q = queue();
        const w = worker({ queues: [q], concurrency: 10 });
        const jobs = await client.enqueueBatch(
          Array.from({ length: 10 }, (_, i) => ({
            type: 'ab.ok',
            args: [i],
            options: { queue: q },
          })),
        );
        const victim = jobs[3]!.id;
        const batches: AckBatchRequest[] = [];
        const ackBatch = w.transport.ackBatch!.bind(w.transport);
        w.transport.ackBatch = (request, options) => {
          // As if this worker still held an earlier attempt of the victim.
          for (const item of request.acks) if (item.job_id === victim) item.attempt = 7;
          batches.push(structuredClone(request));
          return ackBatch(request, options);
        };
        w.register('ab.ok', async () => 'ok');
        const refused = new Promise<{ error: unknown; operation: string; job?: Job }>((resolve) =>
          w.on('error', resolve),
        );
        const done = outcomes(w, 9);
        await w.start();
        const report = await within(refused, 'the refused item');
        assert.ok(report.error instanceof ConflictError, String(report.error));
        assert.equal(report.operation, 'ack');
        assert.equal(report.job?.id, victim);
        const completedJobs = await done;
        assert.ok(!completedJobs.includes(victim));

        const batch = batches.find((b) => b.acks.some((a) => a.job_id === victim))!;
        assert.ok(batch.acks.length > 1, 'the stale item shared its batch with others');
        const completed = await completedIds(q);
        assert.deepEqual(
          completed.sort(),
          jobs
            .map((j) => j.id)
            .filter((id) => id !== victim)
            .sort(),
        );
        const held = await client.getJob(victim);
        assert.equal(held.state, 'active', 'the refused ACK changed nothing');
        assert.equal(held.attempt, 1);
        await client.cancel(victim);
      });

      it('an empty or oversized batch is refused whole, with the same error on every transport', async () => {
        const q = queue();
        const [job] = await client.enqueueBatch([
          { type: 'ab.ok', args: [], options: { queue: q } },
        ]);
        const { transport } = worker({ queues: [q] });
        const ack = { job_id: job!.id, worker_id: 'w-bounds', attempt: 1 };
        const refused = async (request: AckBatchRequest, message: string, details: object) => {
          await assert.rejects(transport.ackBatch!(request), (error: unknown) => {
            assert.ok(error instanceof ValidationError, String(error));
            assert.equal(error.code, 'invalid_request');
            assert.equal(error.message, message);
            assert.deepEqual(error.details, details);
            return true;
          });
        };
        await refused({ acks: [], nacks: [] }, 'Send at least one item in acks or nacks.', {
          field: 'acks',
        });
        await refused(
          { acks: Array.from({ length: 1001 }, () => ack), nacks: [] },
          'A batched acknowledgement holds at most 1000 items (got 1001).',
          { field: 'acks', max: 1000, actual: 1001 },
        );
        assert.equal((await client.getJob(job!.id)).state, 'available', 'nothing changed');
      });

      it('one result that cannot be sent does not sink the rest of its batch', async () => {
        const q = queue();
        const w = worker({ queues: [q], concurrency: 6 });
        const sent = spy(w);
        w.register('ab.ok', async (ctx) => (ctx.args[0] === 'bad' ? { n: 1n } : 'ok'));
        const jobs = await client.enqueueBatch(
          ['ok', 'ok', 'bad', 'ok', 'ok', 'ok'].map((kind) => ({
            type: 'ab.ok',
            args: [kind],
            options: { queue: q },
          })),
        );
        const bad = jobs[2]!.id;
        const refused = new Promise<{ error: unknown; job?: Job }>((resolve) =>
          w.on('error', resolve),
        );
        const done = outcomes(w, 5);
        await w.start();
        const completedJobs = await done;
        const report = await within(refused, 'the unsendable result');
        assert.equal(report.job?.id, bad);
        assert.ok(!completedJobs.includes(bad));
        assert.ok(sent.batches.length >= 1, 'a batch was tried first');
        assert.ok(sent.singles.includes(`ack:${bad}`), 'then one call per job');
        const completed = await completedIds(q);
        assert.deepEqual(
          completed.sort(),
          jobs
            .map((j) => j.id)
            .filter((id) => id !== bad)
            .sort(),
        );
        await client.cancel(bad);
      });

      it('stop() sends pending outcomes before it resolves', async () => {
        const q = queue();
        // A delay no test would wait for: only stop() can send the first outcome.
        const w = worker({ queues: [q], concurrency: 2, ackBatchDelayMs: 600_000 });
        const sent = spy(w);
        let quickReturned!: () => void;
        const quickDone = new Promise<void>((resolve) => {
          quickReturned = resolve;
        });
        let longStarted!: () => void;
        const longRunning = new Promise<void>((resolve) => {
          longStarted = resolve;
        });
        w.register('ab.quick', async () => {
          await longRunning;
          queueMicrotask(quickReturned);
          return 'quick';
        });
        w.register('ab.long', async (ctx) => {
          longStarted();
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          throw ctx.signal.reason;
        });
        const quick = await client.enqueue('ab.quick', [], { queue: q });
        const long = await client.enqueue('ab.long', [], { queue: q });
        const completed: string[] = [];
        w.on('jobCompleted', ({ job }) => completed.push(job.id));
        await w.start();
        await within(quickDone, 'the quick job');
        // The quick job's ACK waits for its batch while the long job runs.
        assert.equal((await client.getJob(quick!.id)).state, 'active');
        assert.equal(sent.batches.length, 0);

        await within(w.stop({ timeoutMs: 0 }), 'stop()');
        assert.deepEqual(completed, [quick!.id]);
        assert.equal((await client.getJob(quick!.id)).state, 'completed');
        const requeued = await client.getJob(long!.id);
        assert.equal(requeued.state, 'available', 'the long job went back (requeue NACK)');
        const items = sent.batches.flatMap((b) => [
          ...b.acks.map((a) => `ack:${a.job_id}`),
          ...b.nacks.map((x) => `nack:${x.job_id}${x.requeue ? ':requeue' : ''}`),
        ]);
        assert.deepEqual(items.sort(), [`ack:${quick!.id}`, `nack:${long!.id}:requeue`].sort());
        await client.cancel(long!.id);
      });

      it('refills a freed slot while other jobs still run', async () => {
        const q = queue();
        const w = worker({ queues: [q], concurrency: 2, prefetch: 0 });
        const counts: number[] = [];
        const fetchJobs = w.transport.fetchJobs.bind(w.transport);
        w.transport.fetchJobs = (request, options) => {
          counts.push(request.count);
          return fetchJobs(request, options);
        };
        let releaseLong!: () => void;
        const longMayEnd = new Promise<void>((resolve) => {
          releaseLong = resolve;
        });
        w.register('ab.long', async () => {
          await longMayEnd;
          return 'long';
        });
        w.register('ab.quick', async () => 'quick');
        const [long, quick, next] = await client.enqueueBatch([
          { type: 'ab.long', args: [], options: { queue: q } },
          { type: 'ab.quick', args: [], options: { queue: q } },
          { type: 'ab.quick', args: [], options: { queue: q } },
        ]);
        const nextStarted = new Promise<void>((resolve) =>
          w.on('jobStarted', ({ job }) => {
            if (job.id === next!.id) resolve();
          }),
        );
        const done = outcomes(w, 3);
        await w.start();
        // The third job starts while the first still holds its slot.
        await within(nextStarted, 'the third job to start');
        assert.equal((await client.getJob(long!.id)).state, 'active');
        // Two fetches in flight, each for its share of the two slots, then the freed one.
        assert.deepEqual(counts.slice(0, 3), [1, 1, 1]);
        releaseLong();
        await done;
        assert.equal((await client.getJob(quick!.id)).state, 'completed');
      });

      it('prefetch: holds at most concurrency + prefetch jobs, runs at most concurrency, requeues the buffer on stop', async () => {
        const q = queue();
        const w = worker({ queues: [q], concurrency: 2, prefetch: 3 });
        const counts: number[] = [];
        const fetchJobs = w.transport.fetchJobs.bind(w.transport);
        w.transport.fetchJobs = (request, options) => {
          counts.push(request.count);
          return fetchJobs(request, options);
        };
        const started: string[] = [];
        w.register('ab.block', async (ctx) => {
          started.push(ctx.id);
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          throw ctx.signal.reason;
        });
        const jobs = await client.enqueueBatch(
          Array.from({ length: 8 }, () => ({ type: 'ab.block', args: [], options: { queue: q } })),
        );
        await w.start();
        await waitFor(() => w.activeJobIds.length === 5 && started.length === 2, {
          what: '2 running and 3 buffered',
        });
        assert.ok(
          counts.every((c) => c >= 1 && c <= 5),
          `fetch counts ${counts}`,
        );
        const active = (await client.queueStats(q)).active;
        assert.equal(active, 5, 'five leases: two running, three buffered');

        await w.stop({ timeoutMs: 0 });
        assert.equal(started.length, 2, 'buffered jobs never started');
        const after = await Promise.all(jobs.map((j) => client.getJob(j.id)));
        assert.ok(
          after.every((j) => j.state === 'available'),
          `states ${after.map((j) => j.state)}`,
        );
        for (const j of after) await client.cancel(j.id);
      });

      it("prefetch 'auto' (the default): nothing leased ahead while jobs run long, a round trip's worth once they prove short", async () => {
        // Long jobs: none has finished, so there is no measure of a job yet and nothing is leased ahead.
        const q = queue();
        const slow = worker({ queues: [q], concurrency: 2 });
        const slowCounts: number[] = [];
        const slowFetch = slow.transport.fetchJobs.bind(slow.transport);
        slow.transport.fetchJobs = (request, options) => {
          slowCounts.push(request.count);
          return slowFetch(request, options);
        };
        slow.register('ab.block', async (ctx) => {
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          throw ctx.signal.reason;
        });
        const blocked = await client.enqueueBatch(
          Array.from({ length: 6 }, () => ({ type: 'ab.block', args: [], options: { queue: q } })),
        );
        await slow.start();
        await waitFor(() => slow.activeJobIds.length === 2, { what: 'two jobs running' });
        assert.deepEqual(slowCounts, [1, 1], 'two fetches in flight, one free slot each');
        assert.equal((await client.queueStats(q)).active, 2);
        await slow.stop({ timeoutMs: 0 });
        for (const j of blocked) await client.cancel(j.id);

        // Short jobs, with a fetch round trip of at least 5 ms: the buffer grows to concurrency.
        const q2 = queue();
        const quick = worker({ queues: [q2], concurrency: 2 });
        const quickCounts: number[] = [];
        const quickFetch = quick.transport.fetchJobs.bind(quick.transport);
        quick.transport.fetchJobs = async (request, options) => {
          quickCounts.push(request.count);
          await new Promise((resolve) => setTimeout(resolve, 5));
          return quickFetch(request, options);
        };
        quick.register('ab.ok', async () => 1);
        const done = outcomes(quick, 40);
        await client.enqueueBatch(
          Array.from({ length: 40 }, () => ({ type: 'ab.ok', args: [], options: { queue: q2 } })),
        );
        await quick.start();
        await within(done, '40 outcomes');
        // Each of the two fetches in flight asks for half the room: 1 of 2 slots
        // before any job ran; once jobs proved short, more than the slots, since
        // the worker finishes many jobs during a round trip of 5 ms or more and
        // leases that many ahead (bounded by the fetch limit, not concurrency).
        assert.equal(quickCounts[0], 1, 'the first fetch: its share of the free slots only');
        assert.ok(Math.max(...quickCounts) > 2, `fetch counts ${quickCounts}`);
        assert.ok(Math.max(...quickCounts) <= 500, `fetch counts ${quickCounts}`);
        assert.deepEqual(await completedIds(q2).then((ids) => ids.length), 40);
      });

      it('a worker holding more jobs than one heartbeat may name beats in shares, and every lease is extended', async () => {
        const q = queue();
        const w = worker({ queues: [q], concurrency: 8, prefetch: 0, heartbeatIntervalMs: 50 });
        // The server's limit, as its manifest states it, lowered for the test.
        const manifest = w.transport.manifest.bind(w.transport);
        w.transport.manifest = async (options) => {
          const m = await manifest(options);
          return { ...m, limits: { ...m.limits, max_heartbeat_jobs: 3 } };
        };
        const named: string[][] = [];
        const extended = new Set<string>();
        const heartbeat = w.transport.heartbeat.bind(w.transport);
        w.transport.heartbeat = async (request, options) => {
          named.push([...request.active_jobs]);
          const response = await heartbeat(request, options);
          for (const id of response.jobsExtended ?? []) extended.add(id);
          return response;
        };
        const lost: unknown[] = [];
        w.on('error', ({ error }) => lost.push(error));
        const running = new Set<string>();
        w.register('ab.block', async (ctx) => {
          running.add(ctx.id);
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          throw ctx.signal.reason;
        });
        const jobs = await client.enqueueBatch(
          Array.from({ length: 8 }, () => ({ type: 'ab.block', args: [], options: { queue: q } })),
        );
        await w.start();
        await waitFor(() => running.size === 8, { what: 'eight jobs running' });
        const ids = jobs.map((j) => j.id);
        await waitFor(() => ids.every((id) => extended.has(id)), {
          what: 'every lease extended by a heartbeat',
        });
        assert.ok(
          named.every((chunk) => chunk.length <= 3),
          `ids per heartbeat: ${named.map((c) => c.length)}`,
        );
        assert.deepEqual(lost, [], 'no heartbeat refused, no lease lost');
        await w.stop({ timeoutMs: 0 });
        for (const j of jobs) await client.cancel(j.id);
      });

      if (mode === 'in-process') {
        it('an engine manifest without ack_batch gets single ACK/NACK calls', async () => {
          const q = queue();
          const transport = new InProcessTransport(server.engine, {
            manifest: { specversion: '1.0', capabilities: { long_poll_fetch: true } },
          });
          const w = new OjsWorker({
            transport,
            queues: [q],
            handleSignals: false,
            logLevel: 'silent',
            pollWaitMs: 500,
          });
          workers.push(w);
          const sent = spy(w);
          w.register('ab.ok', async () => 1);
          const jobs = await client.enqueueBatch(
            Array.from({ length: 5 }, () => ({ type: 'ab.ok', args: [], options: { queue: q } })),
          );
          const done = outcomes(w, 5);
          await w.start();
          await done;
          assert.equal(sent.batches.length, 0);
          assert.deepEqual(sent.singles.sort(), jobs.map((j) => `ack:${j.id}`).sort());
        });
      }

      if (mode === 'http') {
        /** A fetch over the real one; `route` may answer instead (or rewrite the response). */
        const proxied = (
          route: (url: URL, init: RequestInit) => Promise<Response | undefined>,
          log: string[],
        ) =>
          (async (input: string | URL | Request, init: RequestInit = {}) => {
            const url = new URL(String(input));
            log.push(url.pathname);
            return (await route(url, init)) ?? fetch(input, init);
          }) as typeof fetch;

        it('a manifest without endpoints.ack_batch gets single ACK/NACK calls', async () => {
          const q = queue();
          const paths: string[] = [];
          const w = worker({
            queues: [q],
            concurrency: 5,
            fetch: proxied(async (url, init) => {
              if (url.pathname !== '/ojs/manifest') return undefined;
              const manifest = (await (await fetch(url, init)).json()) as Record<string, unknown>;
              delete manifest.endpoints;
              delete (manifest.capabilities as Record<string, unknown>).ack_batch;
              return Response.json(manifest);
            }, paths),
          });
          w.register('ab.ok', async () => 1);
          w.register('ab.fail', async () => {
            throw new Error('nope');
          });
          const jobs = await client.enqueueBatch(
            Array.from({ length: 12 }, (_, i) => ({
              type: i < 2 ? 'ab.fail' : 'ab.ok',
              args: [],
              options: { queue: q, retry: { maxAttempts: 1 } },
            })),
          );
          const done = outcomes(w, jobs.length);
          await w.start();
          await done;
          assert.ok(!paths.includes('/ojs/v1/workers/ack/batch'));
          assert.equal(paths.filter((p) => p === '/ojs/v1/workers/ack').length, 10);
          assert.equal(paths.filter((p) => p === '/ojs/v1/workers/nack').length, 2);
          assert.equal((await completedIds(q)).length, 10);
        });

        it('a 404 on the batch path switches to single calls for good', async () => {
          const q = queue();
          const paths: string[] = [];
          let refused = false;
          let batchAfterRefusal = 0;
          const w = worker({
            queues: [q],
            concurrency: 4,
            fetch: proxied(async (url) => {
              if (url.pathname !== '/ojs/v1/workers/ack/batch') return undefined;
              if (refused) batchAfterRefusal++;
              refused = true;
              return Response.json(
                { message: 'Route POST:/ojs/v1/workers/ack/batch not found', statusCode: 404 },
                { status: 404 },
              );
            }, paths),
          });
          w.register('ab.ok', async () => 1);
          const jobs = await client.enqueueBatch(
            Array.from({ length: 20 }, () => ({ type: 'ab.ok', args: [], options: { queue: q } })),
          );
          const done = outcomes(w, jobs.length);
          const errors: unknown[] = [];
          w.on('error', ({ error }) => errors.push(error));
          await w.start();
          await done;
          assert.ok(refused, 'the batch path was tried');
          assert.equal(batchAfterRefusal, 0, 'no batch call after the 404');
          assert.equal(paths.filter((p) => p === '/ojs/v1/workers/ack').length, 20);
          assert.deepEqual(errors, []);
          const completed = await completedIds(q);
          assert.equal(completed.length, 20);
          assert.equal(new Set(completed).size, 20);
        });

        it('a batch refused as a whole after it landed: resent one per call, nothing reported twice', async () => {
          const q = queue();
          let refusedOnce = false;
          let refusedIds: string[] = [];
          const w = worker({
            queues: [q],
            concurrency: 5,
            fetch: proxied(async (url, init) => {
              if (url.pathname !== '/ojs/v1/workers/ack/batch' || refusedOnce) return undefined;
              refusedOnce = true;
              const body = JSON.parse(String(init.body)) as { acks: { job_id: string }[] };
              refusedIds = body.acks.map((ack) => ack.job_id);
              // The server settles the items, then something in between answers 400.
              await (await fetch(url, init)).text();
              return Response.json(
                { error: { code: 'invalid_request', message: 'refused by a proxy' } },
                { status: 400 },
              );
            }, []),
          });
          const sent = spy(w);
          w.register('ab.ok', async () => 1);
          const jobs = await client.enqueueBatch(
            Array.from({ length: 5 }, () => ({ type: 'ab.ok', args: [], options: { queue: q } })),
          );
          const done = outcomes(w, jobs.length);
          const errors: unknown[] = [];
          w.on('error', ({ error }) => errors.push(error));
          await w.start();
          await done;
          assert.ok(refusedOnce && refusedIds.length > 0);
          // The refused batch's items, and only they, are resent one per call
          // (the jobs may have come in two fetches, so in two batches).
          assert.deepEqual(sent.singles.sort(), refusedIds.map((id) => `ack:${id}`).sort());
          assert.deepEqual(errors, [], 'the conflicts say the ACKs already landed');
          assert.deepEqual((await completedIds(q)).sort(), jobs.map((j) => j.id).sort());
        });

        it('a batch whose response was lost is repeated; items that landed count as done', async () => {
          const q = queue();
          let lost = 0;
          let batchCalls = 0;
          const w = worker({
            queues: [q],
            concurrency: 5,
            retry: { initialDelayMs: 1, maxDelayMs: 5 },
            fetch: proxied(async (url, init) => {
              if (url.pathname !== '/ojs/v1/workers/ack/batch') return undefined;
              batchCalls++;
              if (lost > 0) return undefined;
              lost++;
              // The server applies the batch, then the connection drops before the answer.
              await (await fetch(url, init)).text();
              throw Object.assign(new TypeError('fetch failed'), {
                cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
              });
            }, []),
          });
          w.register('ab.ok', async () => 1);
          const jobs = await client.enqueueBatch(
            Array.from({ length: 5 }, () => ({ type: 'ab.ok', args: [], options: { queue: q } })),
          );
          const done = outcomes(w, jobs.length);
          const errors: unknown[] = [];
          w.on('error', ({ error }) => errors.push(error));
          await w.start();
          await done;
          assert.equal(lost, 1);
          assert.ok(batchCalls >= 2, 'the batch was sent again');
          assert.deepEqual(errors, [], 'conflicts from the first, landed try are not errors');
          const completed = await completedIds(q);
          assert.deepEqual(completed.sort(), jobs.map((j) => j.id).sort());
        });
      }
    });
  }

describe('batched acknowledgement over the server body limit (http)', () => {
  it('a batch too large for the server is sent again in halves, not one call per job', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-ack-limit-'));
    const store = new SqliteStore({ path: join(dir, 'ojs.db'), synchronous: 'NORMAL' });
    await store.init();
    const engine = new Engine({ store, testMode: true });
    // 64 KiB: a batch of 16 results of 10,000 characters is refused (413), 4 of them are not.
    const app = await buildApp({ testMode: true, logger: false, bodyLimit: 64 * 1024 }, engine);
    engine.start();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    const client = new OjsClient({ url });
    // Sixteen outcomes in one batch: all sixteen jobs finish in the same turn,
    // and no delay would send the batch before it is full.
    const w = new OjsWorker({
      url,
      queues: ['big'],
      concurrency: 16,
      prefetch: 0,
      ackBatchSize: 16,
      ackBatchDelayMs: 600_000,
      handleSignals: false,
      logLevel: 'silent',
    });
    try {
      const sent = spy(w);
      let started = 0;
      let releaseAll!: () => void;
      const allStarted = new Promise<void>((resolve) => {
        releaseAll = resolve;
      });
      w.register('ab.big', async () => {
        if (++started === 16) releaseAll();
        await allStarted;
        return 'x'.repeat(10_000);
      });
      const jobs = await client.enqueueBatch(
        Array.from({ length: 16 }, () => ({ type: 'ab.big', args: [], options: { queue: 'big' } })),
      );
      const errors: unknown[] = [];
      w.on('error', ({ error }) => errors.push(error));
      const done = outcomes(w, 16);
      await w.start();
      await done;
      assert.deepEqual(errors, []);
      assert.deepEqual(sent.singles, [], 'no job reported on its own');
      assert.deepEqual(
        sent.batches.map((b) => b.acks.length),
        [16, 8, 8, 4, 4, 4, 4],
        'the refused batch, then its halves, down to batches under the limit',
      );
      const states = await Promise.all(jobs.map((j) => client.getJob(j.id)));
      assert.ok(states.every((j) => j.state === 'completed' && j.attempt === 1));
    } finally {
      await w.stop({ timeoutMs: 0 });
      await app.close();
      await engine.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('worker options', () => {
  it('rejects out-of-range batching and prefetch options', () => {
    const make = (options: WorkerOptions) => () =>
      new OjsWorker({ url: 'http://127.0.0.1:1', handleSignals: false, ...options });
    assert.throws(make({ ackBatchSize: 0 }), /ackBatchSize/);
    assert.throws(make({ ackBatchSize: 1001 }), /ackBatchSize/);
    assert.throws(make({ ackBatchSize: 2.5 }), /ackBatchSize/);
    assert.throws(make({ ackBatchDelayMs: -1 }), /ackBatchDelayMs/);
    assert.throws(make({ ackBatchDelayMs: Number.NaN }), /ackBatchDelayMs/);
    assert.throws(make({ prefetch: -1 }), /prefetch/);
    assert.throws(make({ prefetch: 1001 }), /prefetch/);
    assert.throws(make({ prefetch: 'fast' as never }), /prefetch must be 'auto' or an integer/);
    assert.doesNotThrow(make({ ackBatchSize: 1000, ackBatchDelayMs: 0, prefetch: 0 }));
    assert.doesNotThrow(make({ prefetch: 'auto' }));
  });
});
