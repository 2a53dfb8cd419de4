/**
 * The worker end to end against a real server, over HTTP and in-process:
 * processing and concurrency, retry, structured errors, discard, execution
 * timeout, cancellation through the heartbeat, heartbeat directives,
 * graceful stop with requeue, execution middleware and trace propagation,
 * workflows.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  DiscardError,
  HttpTransport,
  type Job,
  JobCancelledError,
  JobTimeoutError,
  type OjsClient,
  OjsWorker,
  parseTraceparent,
  ShutdownError,
  traceContext,
} from '@ojs/sdk';
import { InProcessTransport } from '@ojs/sdk/in-process';
import {
  MODES,
  type Mode,
  sleep,
  startTestServer,
  type TestServer,
  testStores,
  waitFor,
} from './helpers.ts';

class PaymentDeclined extends Error {
  override name = 'PaymentDeclined';
}

/** Resolves when `signal` aborts, with its reason. */
const aborted = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });

for (const store of await testStores())
  for (const mode of MODES) {
    describe(`worker (${mode}, ${store})`, () => {
      let server: TestServer;
      let n = 0;
      /** A fresh queue per test so tests never see each other's jobs. */
      const queue = () => `${mode === 'http' ? 'wh' : 'wp'}-${++n}`;
      let client: OjsClient;
      const workers: OjsWorker[] = [];
      const worker = (m: Mode, options: Parameters<TestServer['worker']>[1]) => {
        const w = server.worker(m, { heartbeatIntervalMs: 100, ...options });
        workers.push(w);
        return w;
      };
      before(async () => {
        server = await startTestServer({ store });
        client = server.client(mode);
      });
      after(async () => {
        await Promise.all(workers.map((w) => w.stop({ timeoutMs: 0 })));
        await server.close();
      });

      it('processes jobs with typed args and never exceeds its concurrency', async () => {
        const q = queue();
        type Jobs = { 'math.add': [a: number, b: number] };
        const w = server.worker(mode, {
          queues: [q],
          concurrency: 4,
        }) as unknown as OjsWorker<Jobs>;
        workers.push(w as unknown as OjsWorker);
        let running = 0;
        let peak = 0;
        w.register('math.add', async (ctx) => {
          running++;
          peak = Math.max(peak, running);
          await sleep(10);
          running--;
          const [a, b] = ctx.args;
          return a + b;
        });
        const counts: number[] = [];
        const fetchJobs = w.transport.fetchJobs.bind(w.transport);
        w.transport.fetchJobs = (request, options) => {
          counts.push(request.count);
          return fetchJobs(request, options);
        };
        const jobs = await client.enqueueBatch(
          Array.from({ length: 40 }, (_, i) => ({
            type: 'math.add',
            args: [i, 1],
            options: { queue: q },
          })),
        );
        await w.start();
        const done = await Promise.all(
          jobs.map((j) => client.waitForJob(j.id, { intervalMs: 20 })),
        );
        assert.ok(done.every((j) => j.state === 'completed'));
        assert.equal(done[5]!.result, 6);
        assert.ok(peak <= 4, `peak concurrency ${peak}`);
        assert.ok(peak >= 2, 'jobs ran in parallel');
        // A fetch asks for its share of the room: free slots plus what 'auto'
        // prefetch leases ahead (the jobs finished during one round trip,
        // which on a loaded machine can exceed the concurrency).
        assert.ok(
          counts.every((c) => c >= 1 && c <= 500),
          `fetch counts ${counts}`,
        );
        await w.stop();
        assert.equal(w.state, 'terminated');
      });

      it('an idle worker keeps one fetch waiting at the server, not one per fetch loop', async () => {
        const q = queue();
        const w = worker(mode, { queues: [q], concurrency: 8 });
        w.register('idle.job', async () => 'ok');
        let inFlight = 0;
        let peak = 0;
        const fetchJobs = w.transport.fetchJobs.bind(w.transport);
        w.transport.fetchJobs = (request, options) => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          return fetchJobs(request, options).finally(() => inFlight--);
        };
        await w.start();
        // The first job shows the worker that the queue is drained.
        const first = await client.enqueue('idle.job', [], { queue: q });
        await client.waitForJob(first!.id, { intervalMs: 10 });
        peak = inFlight;
        // One job at a time, each delivered by the one waiting fetch.
        for (let i = 0; i < 5; i++) {
          const job = await client.enqueue('idle.job', [], { queue: q });
          assert.equal((await client.waitForJob(job!.id, { intervalMs: 10 })).state, 'completed');
        }
        assert.equal(peak, 1, 'fetches in flight while the queue was drained');
        await w.stop();
      });

      it('retries a failed job; the NACK carries type, message and a bounded backtrace', async () => {
        const q = queue();
        const w = worker(mode, { queues: [q] });
        const attempts: number[] = [];
        w.register('flaky.job', async (ctx) => {
          attempts.push(ctx.attempt);
          if (ctx.attempt === 1) throw new TypeError('first try fails');
          return 'ok';
        });
        const job = await client.enqueue('flaky.job', [], {
          queue: q,
          retry: { maxAttempts: 3, initialInterval: 50, jitter: false },
        });
        await w.start();
        const done = await client.waitForJob(job!.id, { intervalMs: 20 });
        assert.equal(done.state, 'completed');
        assert.equal(done.result, 'ok');
        assert.equal(done.attempt, 2);
        assert.deepEqual(attempts, [1, 2]);
        const [first] = done.errors ?? [];
        assert.equal(first?.type, 'TypeError');
        assert.equal(first?.message, 'first try fails');
        assert.equal(first?.code, 'handler_error');
        assert.equal(first?.details?.error_class, 'TypeError');
        assert.ok(Array.isArray(first?.backtrace) && first.backtrace.length > 0);
        assert.ok(first!.backtrace!.every((f) => typeof f === 'string' && f.startsWith('at ')));
      });

      it('discards on non_retryable_errors, DiscardError and retryable:false; caps huge backtraces', async () => {
        const q = queue();
        const w = worker(mode, { queues: [q], maxBacktraceFrames: 5 });
        const deep = (depth: number): never => {
          if (depth === 0) throw new PaymentDeclined('card declined');
          return deep(depth - 1);
        };
        w.register('pay.charge', async () => deep(200));
        w.register('pay.discard', async () => {
          throw new DiscardError('not worth retrying');
        });
        const retry = {
          maxAttempts: 5,
          initialInterval: 10,
          nonRetryableErrors: ['PaymentDeclined'],
        };
        const charge = await client.enqueue('pay.charge', [], { queue: q, retry });
        const discard = await client.enqueue('pay.discard', [], {
          queue: q,
          retry: { maxAttempts: 5 },
        });
        await w.start();
        const charged = await client.waitForJob(charge!.id);
        assert.equal(charged.state, 'discarded');
        assert.equal(charged.attempt, 1);
        assert.equal(charged.error?.type, 'PaymentDeclined');
        assert.equal(charged.error?.backtrace?.length, 5);
        const discarded = await client.waitForJob(discard!.id);
        assert.equal(discarded.state, 'discarded');
        assert.equal(discarded.attempt, 1);
        assert.equal(discarded.error?.retryable, false);
      });

      it('execution timeout aborts the handler and NACKs with type timeout', async () => {
        const q = queue();
        const w = worker(mode, { queues: [q] });
        const reasons: unknown[] = [];
        w.register(
          'slow.job',
          async (ctx) => {
            reasons.push(await aborted(ctx.signal));
            throw ctx.signal.reason;
          },
          { timeoutMs: 150 },
        );
        const timedOut: Job[] = [];
        w.on('jobTimedOut', ({ job }) => timedOut.push(job));
        const job = await client.enqueue('slow.job', [], { queue: q, retry: { maxAttempts: 1 } });
        await w.start();
        const done = await client.waitForJob(job!.id);
        assert.equal(done.state, 'discarded');
        assert.equal(done.error?.type, 'timeout');
        assert.equal(done.error?.code, 'timeout');
        assert.ok(reasons[0] instanceof JobTimeoutError);
        assert.equal(timedOut.length, 1);
      });

      it("the job's own timeout_ms is enforced too", async () => {
        const q = queue();
        const w = worker(mode, { queues: [q] });
        let reason: unknown;
        w.register('slow.job', async (ctx) => {
          reason = await aborted(ctx.signal);
        });
        const job = await client.enqueue('slow.job', [], {
          queue: q,
          timeoutMs: 200,
          retry: { maxAttempts: 1 },
        });
        await w.start();
        const done = await client.waitForJob(job!.id);
        assert.equal(done.state, 'discarded');
        assert.equal(done.error?.type, 'timeout');
        await waitFor(() => reason !== undefined);
      });

      it('a client cancel reaches the running handler through the heartbeat', async () => {
        const q = queue();
        const w = worker(mode, { queues: [q] });
        let started!: () => void;
        const running = new Promise<void>((resolve) => {
          started = resolve;
        });
        let reason: unknown;
        w.register('long.job', async (ctx) => {
          started();
          reason = await aborted(ctx.signal);
          throw reason;
        });
        const errors: unknown[] = [];
        const cancelled: string[] = [];
        w.on('error', ({ error }) => errors.push(error));
        w.on('jobCancelled', ({ job }) => cancelled.push(job.id));
        const job = await client.enqueue('long.job', [], { queue: q });
        await w.start();
        await running;
        await client.cancel(job!.id);
        await waitFor(() => reason !== undefined, { what: 'handler abort' });
        assert.ok(reason instanceof JobCancelledError);
        assert.deepEqual(cancelled, [job!.id]);
        await waitFor(() => w.activeJobIds.length === 0);
        assert.equal((await client.getJob(job!.id)).state, 'cancelled');
        assert.deepEqual(errors, []);
      });

      it('obeys heartbeat directives: quiet stops fetching, terminate stops the worker', async () => {
        const q = queue();
        // Calls the worker makes, counted on their way to the server.
        const calls = { fetch: 0, heartbeat: 0 };
        const inner = server.transport(mode) ?? new HttpTransport({ url: server.url });
        const counting = new Proxy(inner, {
          get(target, name, receiver) {
            const value = Reflect.get(target, name, receiver);
            // Methods run on the transport itself (it keeps private fields).
            if (typeof value !== 'function') return value;
            if (name !== 'fetchJobs' && name !== 'heartbeat') return value.bind(target);
            return async (...args: unknown[]) => {
              // Fetches count when sent, heartbeats when answered.
              if (name === 'fetchJobs') calls.fetch++;
              const answer = await (value as (...a: unknown[]) => Promise<unknown>).apply(
                target,
                args,
              );
              if (name === 'heartbeat') calls.heartbeat++;
              return answer;
            };
          },
        });
        const quiet = worker(mode, { queues: [q], transport: counting });
        let quietRan = 0;
        quiet.register('directive.job', async () => {
          quietRan++;
          await sleep(300);
        });
        const directives: string[] = [];
        quiet.on('directive', ({ directive }) => directives.push(directive));
        const first = await client.enqueue('directive.job', [], {
          queue: q,
          meta: { test_directive: 'quiet' },
        });
        await quiet.start();
        await waitFor(() => quiet.state === 'quiet', { what: 'quiet state' });
        assert.equal((await client.waitForJob(first!.id)).state, 'completed');
        const second = await client.enqueue('directive.job', [], { queue: q });
        // No waiting for something not to happen: the worker's own heartbeats
        // (every 100 ms, independent of its fetch loop) mark its time. Over
        // three of them after the enqueue, a worker that still fetched would
        // have fetched the job (its long poll answers at once when one is
        // available): the fetch count must not move.
        const fetchesWhenQuiet = calls.fetch;
        const beats = calls.heartbeat;
        await waitFor(() => calls.heartbeat >= beats + 3, { what: 'three heartbeats' });
        assert.equal(calls.fetch, fetchesWhenQuiet, 'a quiet worker sends no fetch');
        assert.equal(
          (await client.getJob(second!.id)).state,
          'available',
          'a quiet worker does not fetch',
        );
        assert.equal(quietRan, 1);
        assert.deepEqual(directives, ['quiet']);
        await quiet.stop();

        const q2 = queue();
        const terminating = worker(mode, { queues: [q2] });
        terminating.register('directive.job', async () => {
          await sleep(300);
          return 'finished';
        });
        const job = await client.enqueue('directive.job', [], {
          queue: q2,
          meta: { test_directive: 'terminate' },
        });
        await terminating.start();
        await waitFor(() => terminating.state === 'terminated', { what: 'terminated state' });
        const done = await client.getJob(job!.id);
        assert.equal(done.state, 'completed', 'the active job finished before the worker stopped');
      });

      it('graceful stop: finishes short jobs, requeues long ones without burning an attempt', async () => {
        const q = queue();
        const w = worker(mode, { queues: [q], concurrency: 2 });
        const reasons: unknown[] = [];
        let startedCount = 0;
        w.register('short.job', async () => {
          startedCount++;
          await sleep(100);
          return 'done';
        });
        w.register('long.job', async (ctx) => {
          startedCount++;
          reasons.push(await aborted(ctx.signal));
        });
        const short = await client.enqueue('short.job', [], { queue: q });
        const long = await client.enqueue('long.job', [], { queue: q, retry: { maxAttempts: 1 } });
        await w.start();
        await waitFor(() => startedCount === 2, { what: 'both jobs running' });
        await w.stop({ timeoutMs: 400 });
        assert.equal((await client.getJob(short!.id)).state, 'completed');
        const requeued = await client.getJob(long!.id);
        assert.equal(requeued.state, 'available');
        assert.equal(requeued.error, undefined, 'a requeue records no failure');
        assert.ok(reasons[0] instanceof ShutdownError);
        // maxAttempts 1, yet the requeued job runs again, as attempt 1: the requeue refunded it.
        const next = worker(mode, { queues: [q] });
        next.register('long.job', async (ctx) => `attempt ${ctx.attempt}`);
        await next.start();
        const finished = await client.waitForJob(long!.id);
        assert.equal(finished.state, 'completed');
        assert.equal(finished.result, 'attempt 1');
      });

      it('execution middleware wraps handlers; trace context flows into follow-up jobs', async () => {
        const q = queue();
        const producer = server.client(mode);
        producer.enqueueMiddleware.add('trace', traceContext.enqueue());
        const w = worker(mode, { queues: [q] });
        const order: string[] = [];
        w.middleware.add('outer', async (_job, _ctx, next) => {
          order.push('outer>');
          const result = await next();
          order.push('<outer');
          return result;
        });
        w.middleware.add('trace', traceContext.execution());
        w.middleware.insertAfter('outer', 'inner', async (_job, ctx, next) => {
          order.push('inner>');
          ctx.metadata.seen = true;
          return { wrapped: await next() };
        });
        let followUpId: string | undefined;
        w.register('parent.job', async (ctx) => {
          order.push('handler');
          const followUp = await producer.enqueue('child.job', [], { queue: `${q}-child` });
          followUpId = followUp!.id;
          return ctx.metadata.seen;
        });
        const parent = await producer.enqueue('parent.job', [], { queue: q });
        await w.start();
        assert.throws(() => w.middleware.add('late', async (_j, _c, next) => next()), /frozen/);
        const done = await client.waitForJob(parent!.id);
        assert.deepEqual(done.result, { wrapped: true });
        assert.deepEqual(order, ['outer>', 'inner>', 'handler', '<outer']);
        const child = await client.getJob(followUpId!);
        assert.equal(
          parseTraceparent(child.meta.traceparent)?.traceId,
          parseTraceparent(parent!.meta.traceparent)?.traceId,
        );
      });

      it('runs a chain workflow: each step sees the previous results', async () => {
        const q = queue();
        const w = worker(mode, { queues: [q] });
        const seen: unknown[] = [];
        w.register('etl.extract', async () => ({ rows: 3 }));
        w.register('etl.load', async (ctx) => {
          seen.push(ctx.parentResults, ctx.workflowId);
          return 'loaded';
        });
        const flow = await client.chain(
          [
            { type: 'etl.extract', args: [], options: { queue: q } },
            { type: 'etl.load', args: [], options: { queue: q } },
          ],
          { name: 'etl' },
        );
        await w.start();
        const done = await waitFor(async () => {
          const current = await client.getWorkflow(flow.id);
          return current.state === 'completed' ? current : undefined;
        });
        assert.equal(done.steps_completed, 2);
        assert.deepEqual(seen[0], [{ rows: 3 }]);
        assert.equal(seen[1], flow.id);
      });

      it('without handler routing (server lacks the extension), a job with no handler fails as retryable', async () => {
        const q = queue();
        // A transport whose manifest does not list job-versioning: the worker
        // cannot declare its handlers, so it must fail what it cannot run.
        const transport = new InProcessTransport(server.engine, {
          manifest: {
            specversion: '1.0',
            conformance_level: 1,
            capabilities: { long_poll_fetch: true },
          },
        });
        const w = new OjsWorker({
          transport,
          queues: [q],
          heartbeatIntervalMs: 100,
          exitOnSignal: false,
        });
        workers.push(w);
        w.register('known.job', async () => 1);
        const job = await client.enqueue('unknown.job', [], {
          queue: q,
          retry: { maxAttempts: 2, initialInterval: 'PT60S' },
        });
        await w.start();
        const failed = await client.waitForJob(job!.id, { states: ['retryable', 'discarded'] });
        assert.equal(failed.state, 'retryable');
        assert.equal(failed.error?.type, 'no_handler_registered');
      });

      it('a job of a type without a handler is left for a worker that has one', async () => {
        // The worker declares its handlers with each fetch (the server lists the
        // job-versioning extension), so the server never hands it this job.
        const q = queue();
        const w = worker(mode, { queues: [q] });
        w.register('known.job', async () => 1);
        const unknown = await client.enqueue('unknown.job', [], { queue: q });
        const known = await client.enqueue('known.job', [], { queue: q });
        await w.start();
        await client.waitForJob(known!.id, { states: ['completed'] });
        const held = await client.getJob(unknown!.id);
        assert.equal(held.state, 'available');
        assert.equal(held.attempt, 0);
      });
    });
  }
