/**
 * Bulk actions in steps (for progress bars): `limit` caps one request,
 * `next_cursor` continues after the last job it visited, so every job is
 * acted on exactly once across the steps; bad step fields are refused.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { assertError, type Ctx, type Json, setup, snapshot } from './helpers.ts';

describe('bulk actions in steps', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  it('limit 2 over 5 jobs: three steps, each job once, matched stays the total', async () => {
    for (let i = 0; i < 5; i++)
      await ctx.enqueue({ type: 'a.b', args: [i], options: { queue: 's' } });
    const steps: Json[] = [];
    let cursor: string | undefined;
    do {
      const res = await ctx.req('POST', '/ojs/v1/admin/jobs/bulk/cancel', {
        filter: { queue: 's' },
        confirm: true,
        limit: 2,
        ...(cursor ? { cursor } : {}),
      });
      assert.equal(res.statusCode, 200, res.body);
      steps.push(res.json());
      cursor = res.json().next_cursor;
    } while (cursor !== undefined);
    assert.deepEqual(
      steps.map((s) => [s.matched, s.succeeded, s.failed, s.truncated]),
      [
        [5, 2, 0, true],
        [5, 2, 0, true],
        [5, 1, 0, false],
      ],
    );
    const left = (await ctx.req('GET', '/ojs/v1/admin/jobs?queue=s&state=available')).json();
    assert.equal(left.pagination.total, 0);
  });

  for (const [label, extra] of [
    ['limit 0', { limit: 0 }],
    ['limit not an integer', { limit: 'x' }],
    ['an empty cursor', { cursor: '' }],
    ['an unknown field', { limt: 2 }],
  ] as const) {
    it(`refuses ${label} with invalid_request, nothing changed`, async () => {
      await ctx.enqueue({ type: 'a.b', args: [] });
      const before = await snapshot(ctx.engine);
      const res = await ctx.req('POST', '/ojs/v1/admin/jobs/bulk/cancel', {
        filter: {},
        confirm: true,
        ...extra,
      });
      assertError(res, 400, 'invalid_request');
      assert.equal(await snapshot(ctx.engine), before);
    });
  }
});
