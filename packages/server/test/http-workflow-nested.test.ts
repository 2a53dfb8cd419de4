/**
 * Nested workflows over HTTP (features §3.7): a step that is itself a
 * workflow runs as a workflow of its own (its own id, state and events),
 * started when its step becomes ready; its outcome ends the parent's step,
 * in the same commit as the job that ended it, up to the outermost level.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { type Ctx, createWorkflowOk, getWorkflowOk, type Json, setup } from './helpers.ts';

type Obj = Record<string, unknown>;

const job = (name: string): Obj => ({
  type: 'nest.step',
  args: [name],
  options: { queue: 'nest' },
});

describe('nested workflows over HTTP', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  const create = (body: Obj) => createWorkflowOk(ctx, body);
  const get = (id: string) => getWorkflowOk(ctx, id);

  const fetchAll = () =>
    ctx.fetch({ queues: ['nest'], count: 100, worker_id: 'w1' }) as Promise<Json[]>;

  async function ack(fetched: Json, result: unknown = `r-${fetched.args[0]}`): Promise<void> {
    const res = await ctx.req('POST', '/ojs/v1/workers/ack', { job_id: fetched.id, result });
    assert.equal(res.statusCode, 200, res.body);
  }

  async function nack(fetched: Json): Promise<void> {
    const res = await ctx.req('POST', '/ojs/v1/workers/nack', {
      job_id: fetched.id,
      error: { code: 'handler_error', message: `no ${fetched.args[0]}`, retryable: false },
    });
    assert.equal(res.statusCode, 200, res.body);
  }

  const names = (jobs: Json[]) => jobs.map((j) => j.args[0]).sort();

  it('three levels: a chain containing a group containing a chain, run to the end', async () => {
    const outer = await create({
      type: 'chain',
      name: 'outer',
      steps: [
        job('a'),
        {
          type: 'group',
          name: 'middle',
          jobs: [job('x'), { type: 'chain', name: 'inner', steps: [job('y1'), job('y2')] }],
        },
        job('b'),
      ],
    });
    assert.equal(outer.steps[1].state, 'waiting');
    const [a] = await fetchAll();
    await ack(a);

    // The group starts when its step is ready: its own record, linked to the chain.
    const started = await get(outer.id);
    const groupId = started.steps[1].workflow_id;
    assert.equal(started.steps[1].state, 'pending');
    const group = await get(groupId);
    assert.equal(group.type, 'group');
    assert.equal(group.parent_workflow_id, outer.id);
    assert.equal(group.parent_step, 1);
    const innerId = group.steps[1].workflow_id;
    assert.equal((await get(innerId)).parent_workflow_id, groupId);

    const first = await fetchAll();
    assert.deepEqual(names(first), ['x', 'y1']);
    // Both receive the step's input: the chain's previous result.
    for (const fetched of first) assert.deepEqual(fetched.parent_results, ['r-a']);
    for (const fetched of first) await ack(fetched);
    const [y2] = await fetchAll();
    assert.equal(y2.args[0], 'y2');
    assert.deepEqual(y2.parent_results, ['r-y1']);
    assert.equal((await get(outer.id)).steps[1].state, 'pending', 'the group still runs');
    await ack(y2);

    // y2 ended the inner chain, which ended the group, which advanced the outer chain: one commit.
    assert.equal((await get(innerId)).state, 'completed');
    assert.equal((await get(groupId)).state, 'completed');
    const [b] = await fetchAll();
    assert.equal(b.args[0], 'b');
    // A group's result, as a chain step sees it: keyed by job index.
    assert.deepEqual(b.parent_results, [{ 0: 'r-x', 1: 'r-y2' }]);
    await ack(b);
    const done = await get(outer.id);
    assert.equal(done.state, 'completed');
    assert.deepEqual(
      done.steps.map((s: Json) => s.state),
      ['completed', 'completed', 'completed'],
    );
  });

  it('a failure deep inside fails every level above it', async () => {
    const outer = await create({
      type: 'chain',
      steps: [{ type: 'chain', steps: [job('p'), job('q')] }, job('never')],
    });
    const [p] = await fetchAll();
    await nack(p);
    const failed = await get(outer.id);
    assert.equal(failed.state, 'failed');
    assert.deepEqual(
      failed.steps.map((s: Json) => s.state),
      ['failed', 'cancelled'],
    );
    assert.equal(failed.steps[0].error.message, 'no p');
    assert.equal((await get(failed.steps[0].workflow_id)).state, 'failed');
    assert.deepEqual(await fetchAll(), []);
  });

  it('a graph step that is a group; the graph continues with its results', async () => {
    const outer = await create({
      name: 'g',
      steps: [
        { id: 'fan', type: 'group', jobs: [job('m'), job('n')], depends_on: [] },
        { id: 'after', ...job('after'), depends_on: ['fan'] },
      ],
    });
    for (const fetched of await fetchAll()) await ack(fetched);
    const [after] = await fetchAll();
    assert.equal(after.workflow_step_id, 'after');
    assert.deepEqual(after.parent_results_by_step, { fan: { 0: 'r-m', 1: 'r-n' } });
    await ack(after);
    assert.equal((await get(outer.id)).state, 'completed');
  });

  it('cancelling the outer workflow cancels the nested ones and all their jobs', async () => {
    const outer = await create({
      type: 'group',
      jobs: [job('solo'), { type: 'chain', steps: [job('c1'), job('c2')] }],
    });
    assert.equal((await fetchAll()).length, 2);
    const res = await ctx.req('DELETE', `/ojs/v1/workflows/${outer.id}`);
    assert.equal(res.statusCode, 200, res.body);
    const childId = (await get(outer.id)).steps[1].workflow_id;
    const child = await get(childId);
    assert.equal(child.state, 'cancelled');
    assert.deepEqual(
      child.steps.map((s: Json) => s.state),
      ['cancelled', 'cancelled'],
    );
    for (const listed of await ctx.engine.store.listWorkflowJobs(childId)) {
      assert.equal(listed.state, 'cancelled');
    }
    assert.deepEqual(await fetchAll(), []);
  });

  it('cancelling a nested workflow ends its step in the parent as cancelled', async () => {
    const outer = await create({
      type: 'chain',
      steps: [{ type: 'group', jobs: [job('g1')] }, job('next')],
    });
    const childId = outer.steps[0].workflow_id;
    const res = await ctx.req('DELETE', `/ojs/v1/workflows/${childId}`);
    assert.equal(res.statusCode, 200, res.body);
    const parent = await get(outer.id);
    assert.equal(parent.state, 'failed');
    assert.deepEqual(
      parent.steps.map((s: Json) => s.state),
      ['cancelled', 'cancelled'],
    );
    assert.deepEqual(await fetchAll(), []);
  });
});
