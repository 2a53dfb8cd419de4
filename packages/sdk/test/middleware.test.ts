import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type EnqueueMiddleware,
  type ExecutionMiddleware,
  type Job,
  type JobContext,
  type JobEnvelope,
  MiddlewareChain,
  newTraceparent,
  parseTraceparent,
  traceContext,
  withTraceContext,
} from '@ojs/sdk';
import { runEnqueueChain, runExecutionChain } from '../src/middleware.ts';

const envelope = (): JobEnvelope => ({
  specversion: '1.0',
  id: '01900000-0000-7000-8000-000000000001',
  type: 'a.b',
  queue: 'default',
  args: [1],
  meta: {},
});

const fakeCtx = (job: Job): JobContext => ({
  job,
  args: job.args,
  id: job.id,
  type: job.type,
  queue: job.queue,
  attempt: 1,
  maxAttempts: 3,
  workerId: 'w',
  signal: new AbortController().signal,
  workflowId: undefined,
  parentResults: undefined,
  metadata: {},
  setResult() {},
  heartbeat: async () => {},
  progress: async () => {},
  log() {},
});

describe('MiddlewareChain management', () => {
  it('add, prepend, insertBefore, insertAfter and remove by name', () => {
    const chain = new MiddlewareChain<string>();
    chain.add('b', 'B').add('d', 'D').prepend('a', 'A');
    chain.insertBefore('d', 'c', 'C').insertAfter('d', 'e', 'E');
    assert.deepEqual(chain.names(), ['a', 'b', 'c', 'd', 'e']);
    assert.deepEqual(chain.list(), ['A', 'B', 'C', 'D', 'E']);
    chain.remove('c');
    assert.deepEqual(chain.names(), ['a', 'b', 'd', 'e']);
    assert.equal(chain.has('c'), false);
    assert.throws(() => chain.remove('nope'), /No middleware named 'nope'/);
    assert.throws(() => chain.insertAfter('nope', 'x', 'X'), /nope/);
  });

  it('allows duplicates and acts on the first one', () => {
    const chain = new MiddlewareChain<number>();
    chain.add('x', 1).add('x', 2).remove('x');
    assert.deepEqual(chain.list(), [2]);
  });

  it('refuses changes once frozen and snapshots are unaffected by later changes', () => {
    const chain = new MiddlewareChain<number>();
    chain.add('one', 1);
    const snapshot = chain.list();
    chain.add('two', 2);
    assert.deepEqual(snapshot, [1]);
    chain.freeze('started');
    assert.throws(() => chain.add('three', 3), /frozen: started/);
    chain.unfreeze();
    chain.add('three', 3);
    assert.equal(chain.size, 3);
  });
});

describe('enqueue chain', () => {
  it('runs in insertion order and passes modifications downstream', async () => {
    const chain = new MiddlewareChain<EnqueueMiddleware>();
    const order: string[] = [];
    chain.add('first', (job, next) => {
      order.push('first');
      job.meta.first = true;
      return next(job);
    });
    chain.add('second', async (job, next) => {
      order.push(`second:${job.meta.first}`);
      return next({ ...job, queue: 'changed' });
    });
    const out = await runEnqueueChain(chain, envelope());
    assert.deepEqual(order, ['first', 'second:true']);
    assert.equal(out?.queue, 'changed');
  });

  it('drops on null without running later middleware, and restores a changed id', async () => {
    const chain = new MiddlewareChain<EnqueueMiddleware>();
    let later = false;
    chain
      .add('drop', () => null)
      .add('later', (job, next) => {
        later = true;
        return next(job);
      });
    assert.equal(await runEnqueueChain(chain, envelope()), null);
    assert.equal(later, false);

    const idChanger = new MiddlewareChain<EnqueueMiddleware>();
    idChanger.add('id', (job, next) => next({ ...job, id: 'other' }));
    assert.equal((await runEnqueueChain(idChanger, envelope()))?.id, envelope().id);
  });

  it('propagates errors and works when empty', async () => {
    const chain = new MiddlewareChain<EnqueueMiddleware>();
    assert.deepEqual(await runEnqueueChain(chain, envelope()), envelope());
    chain.add('boom', () => {
      throw new Error('rejected');
    });
    await assert.rejects(runEnqueueChain(chain, envelope()), /rejected/);
  });
});

describe('execution chain', () => {
  const job = { ...envelope(), state: 'active', attempt: 1 } as Job;

  it('is an onion: first added is outermost', async () => {
    const order: string[] = [];
    const mw =
      (name: string): ExecutionMiddleware =>
      async (_job, _ctx, next) => {
        order.push(`${name}>`);
        const result = await next();
        order.push(`<${name}`);
        return result;
      };
    const result = await runExecutionChain([mw('a'), mw('b')], job, fakeCtx(job), async () => {
      order.push('handler');
      return 42;
    });
    assert.equal(result, 42);
    assert.deepEqual(order, ['a>', 'b>', 'handler', '<b', '<a']);
  });

  it('can short-circuit, transform results and sees errors propagate', async () => {
    let ran = false;
    const short: ExecutionMiddleware = () => 'skipped';
    assert.equal(
      await runExecutionChain([short], job, fakeCtx(job), async () => {
        ran = true;
      }),
      'skipped',
    );
    assert.equal(ran, false);
    const seen: string[] = [];
    const observer: ExecutionMiddleware = async (_j, _c, next) => {
      try {
        return await next();
      } catch (error) {
        seen.push((error as Error).message);
        throw error;
      }
    };
    await assert.rejects(
      runExecutionChain([observer], job, fakeCtx(job), async () => {
        throw new Error('handler failed');
      }),
      /handler failed/,
    );
    assert.deepEqual(seen, ['handler failed']);
  });

  it('rejects a second next() call', async () => {
    const twice: ExecutionMiddleware = async (_j, _c, next) => {
      await next();
      return next();
    };
    await assert.rejects(
      runExecutionChain([twice], job, fakeCtx(job), async () => 1),
      /more than once/,
    );
  });
});

describe('trace context', () => {
  it('parses and creates W3C traceparents', () => {
    const root = newTraceparent();
    const parsed = parseTraceparent(root);
    assert.ok(parsed);
    assert.equal(parsed.version, '00');
    const child = newTraceparent(root);
    assert.equal(parseTraceparent(child)?.traceId, parsed.traceId);
    assert.notEqual(parseTraceparent(child)?.parentId, parsed.parentId);
    assert.equal(
      parseTraceparent('00-00000000000000000000000000000000-0000000000000001-01'),
      undefined,
    );
    assert.equal(parseTraceparent('garbage'), undefined);
  });

  it('injects a root context, keeps an existing one and continues the current trace', async () => {
    const chain = new MiddlewareChain<EnqueueMiddleware>();
    chain.add('trace', traceContext.enqueue());
    const rooted = await runEnqueueChain(chain, envelope());
    assert.ok(parseTraceparent(rooted?.meta.traceparent));

    const existing = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const kept = await runEnqueueChain(chain, { ...envelope(), meta: { traceparent: existing } });
    assert.equal(kept?.meta.traceparent, existing);

    const inside = await withTraceContext({ traceparent: existing, tracestate: 'k=v' }, () =>
      runEnqueueChain(chain, envelope()),
    );
    assert.equal(
      parseTraceparent(inside?.meta.traceparent)?.traceId,
      '4bf92f3577b34da6a3ce929d0e0e4736',
    );
    assert.equal(inside?.meta.tracestate, 'k=v');
  });

  it('execution middleware makes the job trace current for the handler', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const job = { ...envelope(), meta: { traceparent }, state: 'active', attempt: 1 } as Job;
    const ctx = fakeCtx(job);
    const seen = await runExecutionChain([traceContext.execution()], job, ctx, async () =>
      traceContext.current(),
    );
    const current = seen as { traceparent: string };
    assert.equal(
      parseTraceparent(current.traceparent)?.traceId,
      '4bf92f3577b34da6a3ce929d0e0e4736',
    );
    assert.equal(ctx.metadata.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(ctx.metadata.parent_span_id, '00f067aa0ba902b7');
    assert.equal(traceContext.current(), undefined);
  });
});
