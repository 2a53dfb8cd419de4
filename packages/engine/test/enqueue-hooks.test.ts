/**
 * The built-in enqueue hooks and how specs load (enqueue-hooks.ts): the
 * rules each built-in applies, and a bad spec refused before serving.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, OjsError } from '@ojs/core';
import { SqliteStore } from '@ojs/store-sqlite';
import { Engine } from '../src/engine.ts';
import { loadEnqueueHooks } from '../src/enqueue-hooks.ts';

let store: SqliteStore;
let engine: Engine;

async function engineWith(specs: string[]): Promise<Engine> {
  engine = new Engine({
    store,
    clock: new ManualClock(Date.UTC(2026, 0, 1)),
    enqueueHooks: await loadEnqueueHooks(specs),
  });
  return engine;
}

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
});

afterEach(async () => {
  await engine?.stop();
  await store.close();
});

async function refusal(body: Record<string, unknown>): Promise<OjsError> {
  try {
    await engine.enqueue(body);
  } catch (error) {
    assert.ok(error instanceof OjsError);
    return error;
  }
  throw new Error('the enqueue was not refused');
}

describe('built-in enqueue hooks', () => {
  it('ojs_validate refuses a flagged job with 422, lets false/absent through', async () => {
    await engineWith(['ojs_validate']);
    const error = await refusal({ type: 'a.b', args: [], meta: { ojs_validate: 'yes' } });
    assert.deepEqual(
      [error.status, error.code, error.details?.hook],
      [422, 'validation_error', 'ojs_validate'],
    );
    const ok = await engine.enqueue({ type: 'a.b', args: [], meta: { ojs_validate: false } });
    assert.equal(ok.status, 'created');
  });

  it('required_meta names the missing keys', async () => {
    await engineWith(['required_meta:tenant_id, trace_id']);
    const error = await refusal({ type: 'a.b', args: [], meta: { trace_id: 't' } });
    assert.equal(error.status, 422);
    assert.deepEqual(error.details?.missing, ['tenant_id']);
    const ok = await engine.enqueue({
      type: 'a.b',
      args: [],
      meta: { trace_id: 't', tenant_id: 'x' },
    });
    assert.equal(ok.status, 'created');
  });

  it('max_args_bytes bounds a queue, `*` the others, and leaves unbounded queues alone', async () => {
    await engineWith(['max_args_bytes:small=10,*=50']);
    const big = 'x'.repeat(20);
    const small = await refusal({ type: 'a.b', args: [big], options: { queue: 'small' } });
    assert.deepEqual(
      [small.status, small.details?.max_bytes, small.details?.actual_bytes],
      [422, 10, 24],
    );
    assert.equal((await engine.enqueue({ type: 'a.b', args: [big] })).status, 'created');
    await refusal({ type: 'a.b', args: ['x'.repeat(60)] });
    await engine.stop();
    await engineWith(['max_args_bytes:only=10']);
    assert.equal((await engine.enqueue({ type: 'a.b', args: ['x'.repeat(60)] })).status, 'created');
  });

  it('an unknown name, a bad argument or a name used twice is refused when loading', async () => {
    await assert.rejects(loadEnqueueHooks(['no_such_hook']), /Unknown enqueue hook 'no_such_hook'/);
    await assert.rejects(loadEnqueueHooks(['required_meta']), /required_meta needs keys/);
    await assert.rejects(loadEnqueueHooks(['max_args_bytes:q=zero']), /max_args_bytes/);
    await assert.rejects(
      loadEnqueueHooks(['ojs_validate', 'ojs_validate']),
      /named 'ojs_validate'/,
    );
    await assert.rejects(loadEnqueueHooks(['./no-such-module.mjs']), /Cannot find module/);
    await engineWith([]);
  });

  it('no hooks configured: the chain is empty (enqueue skips it)', async () => {
    await engineWith([]);
    assert.equal(engine.enqueueMiddleware.size, 0);
  });
});
