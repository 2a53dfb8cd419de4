/**
 * POST /ojs/v1/workers/ack/batch (our extension `ack-batch`): one request
 * settles many jobs, each fenced on its own worker and attempt; a stale item
 * is refused in its slot while the rest of the batch commits; malformed
 * requests change nothing.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { assertError, assertWireHeaders, type Ctx, type Json, setup, snapshot } from './helpers.ts';

const PATH = '/ojs/v1/workers/ack/batch';

describe('batched acknowledgement', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  async function leased(count: number, workerId: string): Promise<Json[]> {
    for (let i = 0; i < count; i++) await ctx.enqueue({ type: 'email.send', args: [i] });
    return ctx.fetch({ queues: ['default'], count, worker_id: workerId });
  }

  it('is declared in the manifest', async () => {
    const manifest = (await ctx.req('GET', '/ojs/manifest')).json();
    assert.equal(manifest.endpoints.ack_batch, PATH);
    assert.equal(manifest.capabilities.ack_batch, true);
  });

  it("refuses a stale worker's ACK inside a batch while the rest commits", async () => {
    const jobs = await leased(4, 'w1');
    const [a, b, c, d] = jobs;
    // c's lease expires and another worker takes it: w1's attempt is now stale.
    ctx.clock.advance(31 * 60 * 1000);
    await ctx.engine.expireLeases();
    const retaken = await ctx.fetch({ queues: ['default'], count: 10, worker_id: 'w2' });
    assert.deepEqual(
      retaken.map((j: Json) => j.id).sort(),
      [a.id, b.id, c.id, d.id].sort(),
      'every lease expired and was retaken by w2',
    );
    const byId = new Map(retaken.map((j: Json) => [j.id, j]));
    const res = await ctx.req('POST', PATH, {
      acks: [
        { job_id: a.id, worker_id: 'w2', attempt: byId.get(a.id).attempt, result: { ok: 1 } },
        { job_id: c.id, worker_id: 'w1', attempt: c.attempt, result: { stale: true } },
        { job_id: 'no-such-job', worker_id: 'w2', attempt: 1 },
      ],
      nacks: [
        {
          job_id: b.id,
          worker_id: 'w2',
          attempt: byId.get(b.id).attempt,
          error: { code: 'smtp', message: 'down' },
        },
        { job_id: d.id, worker_id: 'w2', attempt: byId.get(d.id).attempt + 5, error: {} },
      ],
    });
    assert.equal(res.statusCode, 200, res.body);
    assertWireHeaders(res);
    const results = res.json().results;
    assert.deepEqual(
      results.map((r: Json) => [r.job_id, r.status]),
      [
        [a.id, 'ok'],
        [c.id, 'conflict'],
        ['no-such-job', 'not_found'],
        [b.id, 'ok'],
        [d.id, 'conflict'],
      ],
    );
    assert.equal(results[0].state, 'completed');
    assert.equal(results[1].error.code, 'conflict');
    assert.equal(results[3].state, 'retryable');
    const state = async (id: string) => (await ctx.req('GET', `/ojs/v1/jobs/${id}`)).json().job;
    assert.equal((await state(a.id)).state, 'completed');
    assert.equal((await state(b.id)).state, 'retryable');
    const stale = await state(c.id);
    assert.equal(stale.state, 'active', 'the stale ACK did not complete the job');
    assert.equal(stale.worker_id, 'w2');
    assert.equal(stale.result, undefined);
    assert.equal((await state(d.id)).state, 'active');
  });

  it('rejects malformed batches as a whole and changes nothing', async () => {
    const [job] = await leased(1, 'w1');
    const before = await snapshot(ctx.engine);
    const valid = { job_id: job.id, worker_id: 'w1', attempt: job.attempt };
    for (const body of [
      {},
      { acks: [] },
      { acks: 'x' },
      { acks: [valid, { worker_id: 'w1' }] },
      { acks: [valid], nacks: [{ job_id: job.id, attempt: 0 }] },
      { acks: [valid], nacks: [{ job_id: job.id, error: 'text' }] },
      { acks: Array.from({ length: 1001 }, () => valid) },
    ]) {
      assertError(await ctx.req('POST', PATH, body), 400, 'invalid_request');
    }
    assert.equal(await snapshot(ctx.engine), before, 'the store must be unchanged');
  });

  it('names the bounds: at least one item, at most 1000', async () => {
    const [job] = await leased(1, 'w1');
    const before = await snapshot(ctx.engine);
    const valid = { job_id: job.id, worker_id: 'w1', attempt: job.attempt };
    for (const body of [{}, { acks: [], nacks: [] }]) {
      const error = assertError(await ctx.req('POST', PATH, body), 400, 'invalid_request');
      assert.equal(error.message, 'Send at least one item in acks or nacks.');
      assert.deepEqual(error.details, { field: 'acks' });
    }
    const tooMany = {
      acks: Array.from({ length: 600 }, () => valid),
      nacks: Array.from({ length: 401 }, () => ({ ...valid, error: { code: 'E', message: 'x' } })),
    };
    const error = assertError(await ctx.req('POST', PATH, tooMany), 400, 'invalid_request');
    assert.equal(error.message, 'A batched acknowledgement holds at most 1000 items (got 1001).');
    assert.deepEqual(error.details, { field: 'acks', max: 1000, actual: 1001 });
    assert.equal(await snapshot(ctx.engine), before, 'the store must be unchanged');
  });

  it('completes a large batch in one request, each job exactly once', async () => {
    const jobs = await leased(300, 'w1');
    const acks = jobs.map((j: Json) => ({ job_id: j.id, worker_id: 'w1', attempt: j.attempt }));
    const first = (await ctx.req('POST', PATH, { acks })).json().results;
    assert.equal(first.filter((r: Json) => r.status === 'ok').length, 300);
    // A retried request (its answer was lost) refuses every item: nothing completes twice.
    const again = (await ctx.req('POST', PATH, { acks })).json().results;
    assert.equal(again.filter((r: Json) => r.status === 'conflict').length, 300);
    const completed = await ctx.engine.listEvents({ types: ['job.completed'], limit: 10_000 });
    assert.equal(completed.length, 300);
  });
});
