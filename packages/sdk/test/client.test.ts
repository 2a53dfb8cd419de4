/**
 * The client against a real server, over HTTP and in-process.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ConflictError,
  DuplicateJobError,
  JobNotFoundError,
  manifestSupports,
  NotFoundError,
  OjsClient,
  traceContext,
  uuidv7,
  ValidationError,
} from '@ojs/sdk';
import { MODES, startTestServer, type TestServer, testStores, waitFor } from './helpers.ts';

for (const store of await testStores())
  for (const mode of MODES) {
    describe(`client (${mode}, ${store})`, () => {
      let server: TestServer;
      const q = (name: string) => `${mode === 'http' ? 'h' : 'p'}-${name}`;
      let client: OjsClient;
      before(async () => {
        server = await startTestServer({ store });
        client = server.client(mode);
      });
      after(() => server.close());

      it('enqueues with every option and reads the job back', async () => {
        const id = uuidv7();
        const scheduledAt = new Date(Date.now() + 60_000);
        const expiresAt = new Date(Date.now() + 120_000);
        const job = await client.enqueue('email.send', ['ada@example.com', { html: true }], {
          id,
          queue: q('mail'),
          priority: 5,
          timeoutMs: 10_000,
          visibilityTimeoutMs: 20_000,
          scheduledAt,
          expiresAt,
          retry: {
            maxAttempts: 5,
            initialInterval: 1500,
            backoffCoefficient: 3,
            maxInterval: 'PT1M',
            jitter: false,
            nonRetryableErrors: ['auth.*'],
            onExhaustion: 'dead_letter',
          },
          tags: ['welcome'],
          meta: { tenant_id: 't1' },
          extensions: { x_custom: { keep: true } },
        });
        assert.ok(job);
        assert.equal(job.id, id);
        assert.equal(job.state, 'scheduled');
        assert.equal(job.queue, q('mail'));
        assert.equal(job.priority, 5);
        assert.equal(job.timeout_ms, 10_000);
        assert.equal(job.max_attempts, 5);
        assert.deepEqual(job.tags, ['welcome']);
        assert.equal(job.meta.tenant_id, 't1');
        assert.deepEqual(job.x_custom, { keep: true });
        assert.equal(Date.parse(job.scheduled_at!), scheduledAt.getTime());
        assert.equal(Date.parse(job.expires_at!), expiresAt.getTime());
        assert.equal(job.retry?.initial_interval, 'PT1.5S');
        assert.equal(job.retry?.backoff_coefficient, 3);
        assert.deepEqual(job.retry?.non_retryable_errors, ['auth.*']);
        const read = await client.getJob(id);
        assert.deepEqual(read.args, ['ada@example.com', { html: true }]);
        // A repeat of the same id is a duplicate, not a second job.
        await assert.rejects(client.enqueue('email.send', [], { id }), DuplicateJobError);
      });

      it('delayMs schedules, pending + activate, cancel and its conflicts', async () => {
        const delayed = await client.enqueue('report.build', [1], {
          queue: q('misc'),
          delayMs: 60_000,
        });
        assert.equal(delayed?.state, 'scheduled');
        const pending = await client.enqueue('report.build', [2], {
          queue: q('misc'),
          pending: true,
        });
        assert.equal(pending?.state, 'pending');
        const activated = await client.activate(pending!.id);
        assert.equal(activated.state, 'available');
        await assert.rejects(client.activate(pending!.id), ConflictError);
        const cancelled = await client.cancel(delayed!.id);
        assert.equal(cancelled.state, 'cancelled');
        await assert.rejects(client.cancel(delayed!.id), ConflictError);
        await assert.rejects(client.getJob(uuidv7()), JobNotFoundError);
      });

      it('rejects invalid input with typed errors (promise rejections, never throws)', async () => {
        const bad = client.enqueue('Bad Type', []);
        assert.ok(bad instanceof Promise);
        await assert.rejects(bad, ValidationError);
        await assert.rejects(client.enqueue('a.b', [], { queue: 'Not Valid' }), ValidationError);
        await assert.rejects(client.enqueue('a.b', [], { priority: 1000 }), ValidationError);
        await assert.rejects(
          client.enqueue('a.b', 'nope' as unknown as unknown[]),
          ValidationError,
        );
      });

      it('batch enqueue runs middleware per job and leaves dropped jobs out', async () => {
        const batchClient = server.client(mode);
        batchClient.enqueueMiddleware.add('drop-odd', (job, next) =>
          (job.args[0] as number) % 2 === 1 ? null : next(job),
        );
        const jobs = await batchClient.enqueueBatch(
          [0, 1, 2, 3, 4].map((n) => ({
            type: 'batch.item',
            args: [n],
            options: { queue: q('batch') },
          })),
        );
        assert.deepEqual(
          jobs.map((j) => j.args[0]),
          [0, 2, 4],
        );
        assert.equal((await batchClient.queueStats(q('batch'))).available, 3);
        batchClient.enqueueMiddleware.add('boom', () => {
          throw new Error('nope');
        });
        await assert.rejects(
          batchClient.enqueueBatch([{ type: 'batch.item', args: [6] }]),
          /batch entry 0: nope/,
        );
      });

      it('enqueue middleware: modify, drop (null, not an error) and trace context', async () => {
        const traced = server.client(mode);
        traced.enqueueMiddleware
          .add('trace', traceContext.enqueue())
          .add('stamp', (job, next) => next({ ...job, meta: { ...job.meta, stamped: true } }))
          .insertBefore('stamp', 'skip', (job, next) =>
            job.type === 'skip.me' ? null : next(job),
          );
        assert.deepEqual(traced.enqueueMiddleware.names(), ['trace', 'skip', 'stamp']);
        const job = await traced.enqueue('keep.me', [], { queue: q('mw') });
        assert.equal(job?.meta.stamped, true);
        assert.match(String(job?.meta.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
        assert.equal(await traced.enqueue('skip.me', [], { queue: q('mw') }), null);
        assert.equal((await traced.queueStats(q('mw'))).available, 1);
      });

      it('queues: list, stats, pause and resume', async () => {
        await client.enqueue('queue.job', [], { queue: q('pausable') });
        const paused = await client.pauseQueue(q('pausable'));
        assert.equal(paused.paused, true);
        assert.equal(paused.status, 'paused');
        const stats = await client.queueStats(q('pausable'));
        assert.equal(stats.name, q('pausable'));
        assert.equal(stats.paused, true);
        assert.equal(stats.available, 1);
        const listed = await client.listQueues({ limit: 200 });
        assert.ok(listed.some((queue) => queue.name === q('pausable') && queue.paused));
        const resumed = await client.resumeQueue(q('pausable'));
        assert.equal(resumed.paused, false);
        assert.equal((await client.queueStats(q('pausable'))).paused, false);
      });

      it('dead letter: list, retry, delete', async () => {
        const queue = q('dlq');
        const job = await client.enqueue('dlq.job', [], {
          queue,
          retry: { maxAttempts: 1, onExhaustion: 'dead_letter' },
        });
        const transport = client.transport;
        const [fetched] = await transport.fetchJobs({
          queues: [queue],
          count: 1,
          worker_id: 'dlq-w',
        });
        assert.equal(fetched?.id, job?.id);
        await transport.nack({
          job_id: fetched!.id,
          worker_id: 'dlq-w',
          error: { code: 'handler_error', message: 'boom' },
        });
        const page = await client.listDeadLetter({ queue });
        assert.deepEqual(
          page.items.map((j) => j.id),
          [job!.id],
        );
        assert.equal(page.pagination.total, 1);
        const retried = await client.retryDeadLetter(job!.id);
        assert.equal(retried.state, 'available');
        assert.equal(retried.attempt, 0);
        assert.equal((await client.listDeadLetter({ queue })).items.length, 0);

        const [again] = await transport.fetchJobs({
          queues: [queue],
          count: 1,
          worker_id: 'dlq-w',
        });
        await transport.nack({
          job_id: again!.id,
          worker_id: 'dlq-w',
          error: { code: 'handler_error', message: 'again' },
        });
        await client.deleteDeadLetter(job!.id);
        await assert.rejects(client.getJob(job!.id), NotFoundError);
        await assert.rejects(client.retryDeadLetter(job!.id), NotFoundError);
      });

      it('manifest and feature detection', async () => {
        const manifest = await client.manifest();
        assert.equal(manifest.specversion, '1.0');
        assert.equal(await client.supports('dead_letter'), true);
        assert.equal(await client.supports('no_such_feature'), false);
        assert.equal(await client.supports('level:1'), true);
        assert.equal(client.specVersion, '1.0.0');
        assert.equal(OjsClient.specVersion, '1.0.0');
        assert.equal((await client.health()).status, 'ok');
      });

      it('events are readable with filters and a cursor', async () => {
        const queue = q('events');
        const a = await client.enqueue('event.job', [1], { queue });
        const b = await client.enqueue('event.job', [2], { queue });
        const first = await client.events({ types: ['job.enqueued'], queues: [queue], limit: 1 });
        assert.equal(first.events.length, 1);
        assert.equal(first.hasMore, true);
        const second = await client.events({
          types: ['job.enqueued'],
          queues: [queue],
          after: first.cursor ?? undefined,
        });
        assert.equal(second.events.length, 1);
        const ids = [...first.events, ...second.events].map(
          (e) => (e.data as { job_id?: string })?.job_id ?? e.subject,
        );
        assert.deepEqual(ids, [a!.id, b!.id]);
      });

      it('cron: register, list, get, unregister', async () => {
        const name = `${q('nightly')}.report`;
        const cron = await client.registerCron({
          name,
          expression: '0 3 * * *',
          timezone: 'UTC',
          overlapPolicy: 'skip',
          description: 'nightly report',
          job: { type: 'report.nightly', args: ['all'], options: { queue: q('cron') } },
        });
        assert.equal(cron.name, name);
        assert.equal(cron.expression, '0 3 * * *');
        assert.equal(cron.job_template?.type, 'report.nightly');
        assert.ok(cron.next_run_at);
        const listed = await client.listCron();
        assert.ok(listed.some((c) => c.name === name));
        assert.equal((await client.getCron(name)).timezone, 'UTC');
        await client.unregisterCron(name);
        await assert.rejects(client.getCron(name), NotFoundError);
        await assert.rejects(
          client.registerCron({
            name: `${q('bad')}.cron`,
            expression: '61 * * * *',
            job: { type: 'x.y' },
          }),
          ValidationError,
        );
      });

      it('workflows: chain, group and batch are created, read and cancelled', async () => {
        const chain = await client.chain(
          [
            { type: 'etl.extract', args: ['s3://bucket'], options: { queue: q('wf') } },
            { type: 'etl.transform', args: [], options: { queue: q('wf') } },
          ],
          { name: 'etl' },
        );
        assert.equal(chain.type, 'chain');
        assert.equal(chain.state, 'running');
        assert.equal(chain.steps_total, 2);
        const group = await client.group([
          { type: 'img.resize', args: [1], options: { queue: q('wf') } },
          { type: 'img.resize', args: [2], options: { queue: q('wf') } },
        ]);
        assert.equal(group.jobs_total, 2);
        const batch = await client.batch(
          [{ type: 'mail.one', args: [], options: { queue: q('wf') } }],
          { onComplete: { type: 'mail.done', args: ['summary'] } },
          { name: 'mailing' },
        );
        assert.equal(batch.type, 'batch');
        assert.equal((await client.getWorkflow(batch.id)).name, 'mailing');
        const cancelled = await client.cancelWorkflow(group.id);
        assert.equal(cancelled.state, 'cancelled');
        await assert.rejects(client.getWorkflow(uuidv7()), NotFoundError);
        await assert.rejects(client.group([]), ValidationError);
      });

      it('waitForJob polls until a terminal state', async () => {
        const job = await client.enqueue('wait.job', [], { queue: q('wait') });
        const waiting = client.waitForJob(job!.id, { timeoutMs: 5_000, intervalMs: 20 });
        await client.cancel(job!.id);
        assert.equal((await waiting).state, 'cancelled');
        await waitFor(async () => (await client.getJob(job!.id)).state === 'cancelled');
      });
    });
  }

describe('manifestSupports', () => {
  it('reads capability flags, both extension forms and levels', () => {
    const manifest = {
      conformance_level: 2,
      capabilities: { workflows: false, batch_enqueue: true },
      extensions: {
        official: [{ name: 'dead-letter', uri: 'urn:ojs:ext:dead-letter', version: '1' }],
      },
    };
    assert.equal(manifestSupports(manifest, 'batch_enqueue'), true);
    assert.equal(manifestSupports(manifest, 'workflows'), false);
    assert.equal(manifestSupports(manifest, 'dead_letter'), true);
    assert.equal(manifestSupports(manifest, 'urn:ojs:ext:dead-letter'), true);
    assert.equal(manifestSupports(manifest, 'cron_jobs'), true, 'implied by level 2');
    assert.equal(manifestSupports(manifest, 'level:3'), false);
    assert.equal(manifestSupports({ extensions: ['urn:ojs:ext:admin-api'] }, 'admin-api'), true);
  });
});
