/** POST /ojs/v1/cron/:name/trigger (ours): the cron's job now, the schedule unchanged. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { assertError, type Ctx, setup } from './helpers.ts';

describe('cron trigger', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  it('enqueues one job from the template, marked manual; next_run_at is unchanged', async () => {
    const created = await ctx.req('POST', '/ojs/v1/cron', {
      name: 'nightly',
      expression: '0 3 * * *',
      job_template: { type: 'report.build', args: [7], options: { queue: 'reports' } },
    });
    const before = created.json().cron;
    const res = await ctx.req('POST', '/ojs/v1/cron/nightly/trigger', {});
    assert.equal(res.statusCode, 201, res.body);
    const job = res.json().job;
    assert.equal(job.type, 'report.build');
    assert.deepEqual(job.args, [7]);
    assert.equal(job.queue, 'reports');
    assert.equal(job.state, 'available');
    assert.equal(job.meta.cron_name, 'nightly');
    assert.equal(job.meta.cron_manual, true);
    const after = (await ctx.req('GET', '/ojs/v1/cron/nightly')).json().cron;
    assert.equal(after.next_run_at, before.next_run_at);
    const [fetched] = await ctx.fetch({ queues: ['reports'] });
    assert.equal(fetched.id, job.id);
  });

  it('404 for an unknown cron, nothing enqueued', async () => {
    assertError(await ctx.req('POST', '/ojs/v1/cron/nope/trigger', {}), 404, 'not_found');
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
  });
});
