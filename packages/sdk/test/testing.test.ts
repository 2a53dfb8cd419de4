import assert, { AssertionError } from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import {
  ConflictError,
  DiscardError,
  DuplicateJobError,
  graph,
  OjsClient,
  OjsWorker,
  testing,
  traceContext,
  ValidationError,
} from '@ojs/sdk';

// An application's client, pointed at a server that does not exist: test modes must intercept it.
const client = new OjsClient({ url: 'http://127.0.0.1:9', retry: false });

async function signUp(email: string) {
  await client.enqueue('email.send', [email, 'welcome'], {
    queue: 'mail',
    meta: { tenant_id: 't1' },
  });
}

afterEach(() => testing.restore({ all: true }));

describe('fake mode', () => {
  it('captures enqueues in memory with full envelopes and real validation', async () => {
    const t = testing.fake();
    await signUp('ada@example.com');
    const [job] = t.assertEnqueued('email.send', {
      args: ['ada@example.com', 'welcome'],
      queue: 'mail',
      meta: { tenant_id: 't1' },
      count: 1,
    });
    assert.match(job!.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    assert.equal(job!.state, 'available');
    assert.equal(job!.attempt, 0);
    testing.refuteEnqueued('email.send', { args: ['someone@else'] });
    assert.equal(testing.allEnqueued({ queue: 'mail' }).length, 1);
    await assert.rejects(client.enqueue('Bad Type', []), ValidationError);
    await assert.rejects(client.enqueue('a.b', [], { id: job!.id }), DuplicateJobError);
    assert.equal((await client.getJob(job!.id)).type, 'email.send');
    await client.cancel(job!.id);
    await assert.rejects(client.cancel(job!.id), ConflictError);
  });

  it('failure messages list the jobs that did not match', async () => {
    testing.fake();
    await signUp('ada@example.com');
    assert.throws(
      () => testing.assertEnqueued('email.send', { args: ['bob@example.com'] }),
      (error: unknown) =>
        error instanceof AssertionError &&
        /found 0/.test(error.message) &&
        /email\.send\(\["ada@example\.com","welcome"\]\)/.test(error.message),
    );
    assert.throws(() => testing.refuteEnqueued('email.send'), AssertionError);
    assert.throws(() => testing.assertEnqueued('email.send', { count: 2 }), AssertionError);
  });

  it('runs enqueue middleware but no handler until drain', async () => {
    const t = testing.fake();
    const traced = new OjsClient({ url: 'http://127.0.0.1:9' });
    traced.enqueueMiddleware.add('trace', traceContext.enqueue());
    const ran: string[] = [];
    const worker = new OjsWorker({ url: 'http://127.0.0.1:9', handleSignals: false });
    worker.middleware.add('record', async (job, _ctx, next) => {
      ran.push(`mw:${job.type}`);
      return next();
    });
    worker.register('email.send', async (ctx) => {
      ran.push(`handler:${ctx.args[0]}`);
      // Follow-up jobs enqueued by handlers are drained too.
      if (ctx.args[0] === 'first') await traced.enqueue('email.send', ['second']);
      return 'sent';
    });
    t.useWorker(worker);
    await traced.enqueue('email.send', ['first']);
    assert.match(String(t.allEnqueued()[0]!.meta.traceparent), /^00-/);
    assert.deepEqual(ran, []);
    const result = await t.drain();
    assert.deepEqual(result, { processed: 2, completed: 2, failed: 0 });
    assert.deepEqual(ran, ['mw:email.send', 'handler:first', 'mw:email.send', 'handler:second']);
    t.assertPerformed('email.send', { count: 2 });
    t.assertCompleted('email.send', { args: ['second'] });
    assert.equal(t.allEnqueued()[0]!.result, 'sent');
  });

  it('failNext / failAll, retries while attempts remain, DiscardError, assertFailed', async () => {
    const t = testing.fake();
    t.register('charge.card', async () => 'charged');
    t.failNext('charge.card', new Error('gateway down'));
    const job = await client.enqueue('charge.card', [42], { retry: { maxAttempts: 3 } });
    await t.drain();
    const done = await client.getJob(job!.id);
    assert.equal(done.state, 'completed');
    assert.equal(done.attempt, 2);
    assert.equal(done.errors?.[0]?.message, 'gateway down');

    t.failAll('charge.card', new DiscardError('fraud'));
    const doomed = await client.enqueue('charge.card', [43]);
    await t.drain();
    t.assertJobState(doomed!.id, 'discarded');
    t.assertFailed('charge.card', { args: [43] });
    t.refutePerformed('refund.card');
  });

  it('drain moves the frozen clock to each due retry; the engine decides backoff and discards', async () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    const t = testing.fake().freezeTime(start);
    t.register('sync.account', async () => 'synced');
    t.failNext('sync.account', new Error('first')).failNext('sync.account', new Error('second'));
    const job = await client.enqueue('sync.account', [], {
      retry: { maxAttempts: 3, initialInterval: 'PT10S', backoffCoefficient: 2, jitter: false },
    });
    assert.deepEqual(await t.drain(), { processed: 3, completed: 1, failed: 2 });
    const done = t.assertCompleted('sync.account')[0]!;
    assert.equal(done.attempt, 3);
    // 10 s, then 20 s of backoff, in test time, without sleeping.
    assert.equal(t.now(), start + 30_000);
    assert.deepEqual(
      done.errors?.map((e) => [e.message, e.occurred_at]),
      [
        ['first', '2026-01-01T00:00:00.000Z'],
        ['second', '2026-01-01T00:00:10.000Z'],
      ],
    );
    assert.equal(done.id, job!.id);

    // A non-retryable error type is the engine's rule too.
    class FatalError extends Error {
      override name = 'fatal.config';
    }
    t.failNext('sync.account', new FatalError('bad config'));
    const doomed = await client.enqueue('sync.account', [1], {
      retry: { maxAttempts: 5, nonRetryableErrors: ['fatal.*'] },
    });
    assert.deepEqual(await t.drain(), { processed: 1, completed: 0, failed: 1 });
    t.assertJobState(doomed!.id, 'discarded');
  });

  it("a real OjsWorker on the context's transport runs against the context's engine", async () => {
    const t = testing.fake();
    // The test hook routes clients only (drain and useWorker are the test path); a worker given the transport runs.
    const worker = new OjsWorker({
      transport: t.transport,
      handleSignals: false,
      logLevel: 'silent',
      pollWaitMs: 200,
    });
    worker.register('email.send', async (ctx) => `sent to ${ctx.args[0]}`);
    const completed = new Promise<unknown>((resolve) =>
      worker.on('jobCompleted', ({ result }) => resolve(result)),
    );
    await worker.start();
    try {
      const job = await client.enqueue('email.send', ['ada']);
      assert.equal(await completed, 'sent to ada');
      assert.equal((await client.getJob(job!.id)).state, 'completed');
      t.assertCompleted('email.send', { args: ['ada'] });
    } finally {
      await worker.stop();
    }
  });

  it('drain refuses to leave a job behind for want of a handler', async () => {
    const t = testing.fake();
    await client.enqueue('nobody.home', []);
    await assert.rejects(t.drain(), /No handler registered for job type 'nobody\.home'/);
    t.assertEnqueued('nobody.home', { state: 'available' });
  });

  it('scheduled jobs wait for frozen time to advance', async () => {
    const t = testing.fake().freezeTime(new Date('2026-01-01T00:00:00Z'));
    t.register('reminder.send', async () => 'reminded');
    const job = await client.enqueue('reminder.send', [], { scheduledAt: '2026-01-01T01:00:00Z' });
    assert.equal(job!.state, 'scheduled');
    assert.equal(job!.created_at, '2026-01-01T00:00:00.000Z');
    assert.equal((await t.drain()).processed, 0);
    t.advanceTime(60 * 60 * 1000);
    assert.equal((await t.drain()).processed, 1);
    t.assertCompleted('reminder.send');
  });

  it('runs workflows as the engine does; stores cron entries; clearAll forgets everything', async () => {
    const t = testing.fake();
    t.register('a.one', async () => 1);
    t.register('a.two', async (ctx) => ctx.parentResults);
    const chain = await client.chain(
      [
        { type: 'a.one', args: [] },
        { type: 'a.two', args: [] },
      ],
      { name: 'pipeline' },
    );
    const wf = t.assertWorkflowCreated({ type: 'chain', name: 'pipeline' });
    assert.equal(wf.steps_total, 2);
    assert.throws(() => t.assertWorkflowCreated({ name: 'other' }), AssertionError);
    await client.workflowGraph(
      graph('etl')
        .step('a', { type: 'a.one' })
        .step('b', { type: 'a.two', dependsOn: ['a'] }),
    );
    const etl = t.assertWorkflowCreated({ name: 'etl' });
    assert.equal(etl.type, undefined);
    // The engine's states: a root step has its job, a dependent one waits.
    assert.deepEqual(
      etl.steps?.map((s) => [s.id, s.state, s.depends_on]),
      [
        ['a', 'pending', []],
        ['b', 'waiting', ['a']],
      ],
    );
    assert.deepEqual(await t.drain(), { processed: 4, completed: 4, failed: 0 });
    assert.equal((await client.getWorkflow(chain.id)).state, 'completed');
    assert.equal(t.assertWorkflowCreated({ name: 'etl' }).state, 'completed');
    // A chain step gets the previous step's result.
    assert.deepEqual(
      t.assertCompleted('a.two').map((j) => j.result),
      [[1], [1]],
    );
    await client.registerCron({ name: 'nightly', expression: '@daily', job: { type: 'a.one' } });
    assert.equal((await client.listCron()).length, 1);
    await signUp('x@example.com');
    t.clearAll();
    assert.deepEqual(t.allEnqueued(), []);
    assert.equal((await client.listCron()).length, 0);
    assert.deepEqual(testing.allEnqueued(), [], 'the reset left no job behind');
  });

  it("enqueueBatch is atomic and supports() answers from the engine's manifest", async () => {
    const t = testing.fake();
    await client.enqueueBatch([
      { type: 'a.b', args: [1] },
      { type: 'a.b', args: [2] },
    ]);
    t.assertEnqueued('a.b', { count: 2 });
    await assert.rejects(
      client.enqueueBatch([
        { type: 'a.b', args: [3] },
        { type: 'BAD', args: [] },
      ]),
      ValidationError,
    );
    t.assertEnqueued('a.b', { count: 2 });
    assert.equal(await client.supports('workflows'), true);
    assert.equal((await client.manifest()).backend, 'sqlite');
  });
});

describe('inline mode', () => {
  it('runs the handler at enqueue, through both chains, and returns the completed job', async () => {
    const t = testing.inline();
    const order: string[] = [];
    t.useMiddleware(async (_job, _ctx, next) => {
      order.push('mw');
      return next();
    });
    t.register('math.square', async (ctx) => {
      order.push('handler');
      return (ctx.args[0] as number) ** 2;
    });
    const job = await client.enqueue('math.square', [7], {
      scheduledAt: new Date(Date.now() + 3_600_000),
    });
    assert.equal(job!.state, 'completed', 'scheduled_at is ignored');
    assert.equal(job!.result, 49);
    assert.equal(job!.attempt, 1);
    assert.deepEqual(order, ['mw', 'handler']);
    assert.deepEqual(await t.drain(), { processed: 0, completed: 0, failed: 0 });
  });

  it('propagates handler errors without retrying', async () => {
    const t = testing.inline();
    let calls = 0;
    t.register('boom.job', async () => {
      calls++;
      throw new RangeError('kaboom');
    });
    await assert.rejects(client.enqueue('boom.job', [], { retry: { maxAttempts: 5 } }), RangeError);
    assert.equal(calls, 1);
    const [job] = t.allEnqueued({ type: 'boom.job' });
    assert.equal(job!.state, 'discarded');
    assert.equal(job!.error?.type, 'RangeError');
    await assert.rejects(client.enqueue('no.handler', []), /No handler registered/);
  });

  it('perform() runs a handler directly', async () => {
    const t = testing.inline();
    t.register('echo.back', async (ctx) => ctx.args);
    assert.deepEqual(await testing.perform('echo.back', [1, 2]), [1, 2]);
    t.assertPerformed('echo.back');
  });
});

describe('isolation', () => {
  it('testing.run scopes a context to its async call tree, in parallel', async () => {
    const results = await Promise.all(
      ['a', 'b', 'c'].map((name) =>
        testing.run('fake', async (t) => {
          await client.enqueue(`iso.${name}`, []);
          await new Promise((resolve) => setTimeout(resolve, 5));
          return t.allEnqueued().map((j) => j.type);
        }),
      ),
    );
    assert.deepEqual(results, [['iso.a'], ['iso.b'], ['iso.c']]);
    assert.equal(testing.current(), undefined);
  });

  it('restore() returns clients to the real backend', async () => {
    testing.fake();
    await client.enqueue('a.b', []);
    testing.restore();
    assert.equal(testing.current(), undefined);
    assert.equal(client.transport.kind, 'http');
    assert.throws(() => testing.allEnqueued(), /No test mode is active/);
  });
});
