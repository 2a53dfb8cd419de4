/**
 * POST /ojs/v1/jobs/many (our extension `push-many`): many independent
 * PUSHes in one request. Each item is answered as POST /jobs would answer
 * it alone; a refused item stores nothing and does not refuse the others
 * (unlike the atomic /jobs/batch); a malformed request changes nothing.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { assertError, assertWireHeaders, type Ctx, type Json, setup, snapshot } from './helpers.ts';

const PATH = '/ojs/v1/jobs/many';
const ID = (n: number) => `019a0000-0000-7000-8000-${String(n).padStart(12, '0')}`;

describe('independent pushes in one request', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  it('is declared in the manifest', async () => {
    const manifest = (await ctx.req('GET', '/ojs/manifest')).json();
    assert.equal(manifest.endpoints.push_many, PATH);
    assert.equal(manifest.capabilities.push_many, true);
    assert.ok(
      manifest.extensions.experimental.some((e: Json) => e.name === 'push-many'),
      'listed as an experimental extension',
    );
  });

  it('answers each item on its own: created, refused, duplicate, deduplicated', async () => {
    const held = await ctx.enqueue({
      type: 'report.build',
      args: [1],
      options: { unique: { keys: ['type'], on_conflict: 'ignore' } },
    });
    const taken = await ctx.enqueue({ id: ID(1), type: 'email.send', args: ['taken'] });
    const res = await ctx.req('POST', PATH, {
      jobs: [
        { id: ID(2), type: 'email.send', args: ['a'], options: { queue: 'mail' } },
        { type: 'email.send', args: 'not-a-list' },
        { id: taken.id, type: 'email.send', args: ['again'] },
        {
          type: 'report.build',
          args: [2],
          options: { unique: { keys: ['type'], on_conflict: 'ignore' } },
        },
        { id: ID(3), type: 'email.send', args: ['b'], options: { priority: 5 } },
      ],
    });
    assert.equal(res.statusCode, 200, res.body);
    assertWireHeaders(res);
    const { results } = res.json();
    assert.equal(results.length, 5);

    assert.equal(results[0].status, 201);
    assert.equal(results[0].job.id, ID(2));
    assert.equal(results[0].job.state, 'available');
    assert.equal(results[0].job.queue, 'mail');

    assert.equal(results[1].status, 400);
    assert.equal(results[1].error.code, 'invalid_payload');
    assert.equal(results[1].error.retryable, false);

    assert.equal(results[2].status, 409);
    assert.equal(results[2].error.code, 'duplicate');
    assert.equal(results[2].error.details.existing_job_id, taken.id);

    assert.equal(results[3].status, 200);
    assert.equal(results[3].job.id, held.id);
    assert.equal(results[3].deduplicated, true);

    assert.equal(results[4].status, 201);
    assert.equal(results[4].job.priority, 5);

    // What was stored: the two created jobs, and nothing of the refused ones.
    for (const id of [ID(2), ID(3)]) {
      const got = await ctx.req('GET', `/ojs/v1/jobs/${id}`);
      assert.equal(got.statusCode, 200, got.body);
    }
    const again = (await ctx.req('GET', `/ojs/v1/jobs/${taken.id}`)).json();
    assert.deepEqual(again.job.args, ['taken'], 'the duplicate did not overwrite the stored job');
    const stats = (await ctx.req('GET', '/ojs/v1/queues/default/stats')).json();
    assert.equal(stats.available ?? stats.stats?.available, 3, 'taken, held and the last item');
  });

  it('items that collide with each other: the first wins, as if sent one after the other', async () => {
    const unique = { keys: ['type'], on_conflict: 'reject' };
    const res = await ctx.req('POST', PATH, {
      jobs: [
        { id: ID(7), type: 'email.send', args: [1] },
        { id: ID(7), type: 'email.send', args: [2] },
        { type: 'report.build', args: [1], options: { unique } },
        { type: 'report.build', args: [2], options: { unique } },
        { type: 'email.send', args: [3] },
      ],
    });
    assert.equal(res.statusCode, 200, res.body);
    const statuses = res.json().results.map((r: Json) => r.status);
    assert.deepEqual(statuses, [201, 409, 201, 409, 201]);
    const stored = (await ctx.req('GET', `/ojs/v1/jobs/${ID(7)}`)).json();
    assert.deepEqual(stored.job.args, [1]);
    const stats = (await ctx.req('GET', '/ojs/v1/queues/default/stats')).json();
    assert.equal(stats.available ?? stats.stats?.available, 3);
  });

  it('the jobs it creates can be fetched and acknowledged like any other', async () => {
    const res = await ctx.req('POST', PATH, {
      jobs: [1, 2, 3].map((n) => ({ type: 'email.send', args: [n] })),
    });
    assert.equal(res.statusCode, 200, res.body);
    const created = res.json().results.map((r: Json) => r.job.id);
    const fetched = await ctx.fetch({ queues: ['default'], count: 10, worker_id: 'w1' });
    assert.deepEqual(fetched.map((j: Json) => j.id).sort(), [...created].sort());
    assert.deepEqual(
      fetched.map((j: Json) => j.args[0]),
      [1, 2, 3],
      'FIFO in the order of the request',
    );
  });

  // Codes as /jobs/batch answers the same mistakes (docs/error-codes.md).
  for (const [label, body, code] of [
    ['no jobs field', {}, 'invalid_payload'],
    ['jobs not a list', { jobs: { type: 'email.send', args: [] } }, 'invalid_payload'],
    ['an empty list', { jobs: [] }, 'invalid_payload'],
    [
      'more than 1000 items',
      { jobs: Array.from({ length: 1001 }, () => ({ type: 'a.b' })) },
      'invalid_request',
    ],
  ] as const) {
    it(`refuses ${label} whole and changes nothing`, async () => {
      const before = await snapshot(ctx.engine);
      assertError(await ctx.req('POST', PATH, body), 400, code);
      assert.equal(await snapshot(ctx.engine), before);
    });
  }
});
