/**
 * Graph workflows over HTTP (http-binding §4.15, the form clients in other
 * languages and the gRPC binding send): create, run to the end through
 * FETCH and ACK/NACK, inspect per-step state, cancel, and expiry of a step.
 * In-memory SQLite, an Engine on a ManualClock, inject().
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { isUuidv7 } from '@ojs/core';
import {
  assertError,
  type Ctx,
  createWorkflowOk,
  getWorkflowOk,
  type Json,
  setup,
  snapshot,
} from './helpers.ts';

type Obj = Record<string, unknown>;

const node = (id: string, dependsOn: string[] = [], extra: Obj = {}): Obj => ({
  id,
  type: 'graph.step',
  args: [id],
  depends_on: dependsOn,
  options: { queue: 'graph' },
  ...extra,
});

const DIAMOND = [node('a'), node('b', ['a']), node('c', ['a']), node('d', ['b', 'c'])];

describe('graph workflows over HTTP', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  const create = (body: Obj) => createWorkflowOk(ctx, body);
  const get = (id: string) => getWorkflowOk(ctx, id);

  const fetchAll = (count = 1000) =>
    ctx.fetch({ queues: ['graph'], count, worker_id: 'w1' }) as Promise<Json[]>;

  async function ack(job: Json, result: unknown = job.args[0]): Promise<void> {
    const res = await ctx.req('POST', '/ojs/v1/workers/ack', {
      job_id: job.id,
      worker_id: 'w1',
      attempt: job.attempt,
      result,
    });
    assert.equal(res.statusCode, 200, res.body);
  }

  /** Settles many fetched jobs in one request (the ack-batch extension). */
  async function ackAll(jobs: Json[]): Promise<void> {
    const acks = jobs.map((job) => ({ job_id: job.id, worker_id: 'w1', result: job.args[0] }));
    const res = await ctx.req('POST', '/ojs/v1/workers/ack/batch', { acks });
    assert.equal(res.statusCode, 200, res.body);
    assert.ok(
      res.json().results.every((r: Json) => r.status === 'ok'),
      res.body,
    );
  }

  const stepIds = (jobs: Json[]) => jobs.map((job) => job.workflow_step_id).sort();

  it('creates the §4.15 response: running, steps with ids, states, job ids and depends_on', async () => {
    const workflow = await create({ name: 'diamond', steps: DIAMOND });
    assert.ok(isUuidv7(workflow.id));
    assert.equal(workflow.name, 'diamond');
    assert.equal(workflow.state, 'running');
    assert.equal(typeof workflow.created_at, 'string');
    assert.deepEqual(
      workflow.steps.map((s: Json) => [s.id, s.type, s.state, s.depends_on]),
      [
        ['a', 'graph.step', 'pending', []],
        ['b', 'graph.step', 'waiting', ['a']],
        ['c', 'graph.step', 'waiting', ['a']],
        ['d', 'graph.step', 'waiting', ['b', 'c']],
      ],
    );
    assert.ok(isUuidv7(workflow.steps[0].job_id));
    assert.equal(workflow.steps[1].job_id, null);
  });

  it('runs a diamond: D is fetched once, after B and C, with their results', async () => {
    const workflow = await create({ name: 'diamond', steps: DIAMOND });
    const [a, ...none] = await fetchAll();
    assert.deepEqual(none, []);
    assert.equal(a.workflow_id, workflow.id);
    assert.equal(a.workflow_step_id, 'a');
    assert.equal((await get(workflow.id)).steps[0].state, 'active');
    await ack(a, { n: 1 });

    const bc = await fetchAll();
    assert.deepEqual(stepIds(bc), ['b', 'c']);
    for (const job of bc) {
      assert.deepEqual(job.parent_results, [{ n: 1 }]);
      assert.deepEqual(job.parent_results_by_step, { a: { n: 1 } });
    }
    const b = bc.find((job) => job.workflow_step_id === 'b');
    const c = bc.find((job) => job.workflow_step_id === 'c');
    await ack(c, 'rc');
    assert.deepEqual(await fetchAll(), [], 'D waits for B');
    const mid = await get(workflow.id);
    assert.deepEqual(
      mid.steps.map((s: Json) => s.state),
      ['completed', 'active', 'completed', 'waiting'],
    );
    assert.equal(mid.steps[2].result, 'rc');
    assert.equal(typeof mid.steps[2].completed_at, 'string');
    await ack(b, 'rb');

    const [d, ...rest] = await fetchAll();
    assert.deepEqual(rest, []);
    assert.equal(d.workflow_step_id, 'd');
    assert.deepEqual(d.parent_results, ['rb', 'rc']);
    assert.deepEqual(d.parent_results_by_step, { b: 'rb', c: 'rc' });
    await ack(d, 'done');
    const done = await get(workflow.id);
    assert.equal(done.state, 'completed');
    assert.equal(done.steps_completed, 4);
    assert.equal(typeof done.completed_at, 'string');

    const res = await ctx.req(
      'GET',
      '/ojs/v1/events?types=workflow.step_completed,workflow.completed',
    );
    const events = res.json().events as Json[];
    assert.deepEqual(
      events.map((e) => [e.type, e.data.step_id ?? null]),
      [
        ['workflow.step_completed', 'a'],
        ['workflow.step_completed', 'c'],
        ['workflow.step_completed', 'b'],
        ['workflow.step_completed', 'd'],
        ['workflow.completed', null],
      ],
    );
    assert.deepEqual(
      events.map((e) => e.data.steps_remaining ?? null),
      [3, 2, 1, 0, null],
    );
  });

  it('refuses a cycle with a 400 naming the step, and stores nothing', async () => {
    const before = await snapshot(ctx.engine);
    const res = await ctx.req('POST', '/ojs/v1/workflows', {
      name: 'loop',
      steps: [node('a', ['c']), node('b', ['a']), node('c', ['b']), node('root')],
    });
    const error = assertError(res, 400, 'invalid_request');
    assert.match(
      error.message,
      /Step 'a' \(steps\[0\]\) is part of a dependency cycle: a -> b -> c -> a/,
    );
    assert.equal(error.details.step_id, 'a');
    assert.deepEqual(error.details.validation_errors, [
      { path: 'steps[0].depends_on', message: error.message },
    ]);
    assert.equal(await snapshot(ctx.engine), before);
    assert.deepEqual(await fetchAll(), []);
  });

  it('refuses unknown and duplicate ids naming the step', async () => {
    const unknown = assertError(
      await ctx.req('POST', '/ojs/v1/workflows', {
        name: 'w',
        steps: [node('a'), node('b', ['x'])],
      }),
      400,
      'invalid_request',
    );
    assert.equal(unknown.details.step_id, 'b');
    assert.match(unknown.message, /depends on 'x'/);
    const duplicate = assertError(
      await ctx.req('POST', '/ojs/v1/workflows', { name: 'w', steps: [node('a'), node('a')] }),
      400,
      'invalid_request',
    );
    assert.equal(duplicate.details.step_id, 'a');
  });

  it('fans out to 100 steps and in to one that receives the 100 results', async () => {
    const leaves = Array.from({ length: 100 }, (_, i) => node(`leaf${i}`, ['root']));
    const workflow = await create({
      name: 'fan',
      steps: [
        node('root'),
        ...leaves,
        node(
          'sink',
          leaves.map((l) => l.id as string),
        ),
      ],
    });
    await ackAll(await fetchAll());
    const fanned = await fetchAll();
    assert.equal(fanned.length, 100);
    // 99 finish first: the sink is not enqueued until the last one.
    const last = fanned.pop();
    await ackAll(fanned);
    assert.deepEqual(await fetchAll(), []);
    await ack(last);
    const [sink] = await fetchAll();
    assert.equal(sink.workflow_step_id, 'sink');
    assert.deepEqual(
      sink.parent_results,
      leaves.map((l) => l.id),
    );
    assert.equal(Object.keys(sink.parent_results_by_step).length, 100);
    await ack(sink);
    assert.equal((await get(workflow.id)).state, 'completed');
  });

  it('a step failing for good fails the workflow; steps that can no longer run are cancelled', async () => {
    const workflow = await create({
      name: 'middle',
      steps: [
        node('a'),
        node('b', ['a']),
        node('c', ['a']),
        node('d', ['b']),
        node('e', ['c', 'd']),
      ],
    });
    await ackAll(await fetchAll());
    const [b, c] = (await fetchAll()).sort((x, y) =>
      x.workflow_step_id.localeCompare(y.workflow_step_id),
    );
    const nack = await ctx.req('POST', '/ojs/v1/workers/nack', {
      job_id: b.id,
      worker_id: 'w1',
      error: { code: 'handler_error', message: 'broken', retryable: false },
    });
    assert.equal(nack.statusCode, 200, nack.body);
    assert.equal(nack.json().state, 'discarded');
    const failed = await get(workflow.id);
    assert.equal(failed.state, 'failed');
    assert.deepEqual(
      failed.steps.map((s: Json) => [s.id, s.state]),
      [
        ['a', 'completed'],
        ['b', 'failed'],
        ['c', 'active'],
        ['d', 'cancelled'],
        ['e', 'cancelled'],
      ],
    );
    assert.equal(failed.steps[1].error.message, 'broken');
    // C was running: it finishes and is recorded; nothing after it is enqueued.
    await ack(c);
    assert.deepEqual(await fetchAll(), []);
    assert.equal((await get(workflow.id)).steps[2].state, 'completed');
    const events = (
      await ctx.req('GET', '/ojs/v1/events?types=workflow.step_failed,workflow.failed')
    ).json().events as Json[];
    assert.deepEqual(
      events.map((e) => e.type),
      ['workflow.step_failed', 'workflow.failed'],
    );
    assert.equal(events[1].data.failed_step_id, 'b');
    assert.deepEqual(events[1].data.cancelled_steps, ['d', 'e']);
  });

  it('cancel mid-run cancels every non-terminal step; a second cancel is 409', async () => {
    const workflow = await create({ name: 'stop', steps: DIAMOND });
    await ackAll(await fetchAll());
    const [b] = await fetchAll(1);
    const res = await ctx.req('DELETE', `/ojs/v1/workflows/${workflow.id}`);
    assert.equal(res.statusCode, 200, res.body);
    const cancelled = res.json().workflow;
    assert.equal(cancelled.id, workflow.id);
    assert.equal(cancelled.name, 'stop');
    assert.equal(cancelled.state, 'cancelled');
    assert.equal(typeof cancelled.cancelled_at, 'string');
    assert.equal(cancelled.steps_cancelled, 3);
    assert.equal(cancelled.steps_already_completed, 1);
    assert.deepEqual(await fetchAll(), [], 'no step is fetchable after the cancel');
    assert.equal((await ctx.engine.getJob(b.id)).state, 'cancelled');
    // The running job learns it from its heartbeat and cannot complete.
    const beat = await ctx.req('POST', '/ojs/v1/workers/heartbeat', {
      worker_id: 'w1',
      active_jobs: [b.id],
    });
    assert.deepEqual(beat.json().jobs_cancelled, [b.id]);
    assertError(
      await ctx.req('POST', '/ojs/v1/workers/ack', { job_id: b.id, worker_id: 'w1' }),
      409,
      'conflict',
    );
    assertError(await ctx.req('DELETE', `/ojs/v1/workflows/${workflow.id}`), 409, 'conflict');
  });

  it('runs a 1,000-step workflow to completion', async () => {
    const steps: Obj[] = [];
    for (let layer = 0; layer < 10; layer++) {
      for (let col = 0; col < 100; col++) {
        const deps =
          layer === 0 ? [] : [`s${layer - 1}-${col}`, `s${layer - 1}-${(col + 1) % 100}`];
        steps.push(node(`s${layer}-${col}`, deps));
      }
    }
    const workflow = await create({ name: 'thousand', steps });
    let ran = 0;
    for (;;) {
      const jobs = await fetchAll();
      if (jobs.length === 0) break;
      for (const job of jobs) {
        if (!job.workflow_step_id.startsWith('s0-')) assert.equal(job.parent_results.length, 2);
      }
      ran += jobs.length;
      await ackAll(jobs);
    }
    assert.equal(ran, 1000);
    const done = await get(workflow.id);
    assert.equal(done.state, 'completed');
    assert.equal(done.steps_completed, 1000);
  });

  it('an expired step advances its workflow like a failure', async () => {
    const workflow = await create({
      name: 'expiring',
      steps: [
        node('a'),
        node('late', [], { options: { queue: 'slow', expires_at: '2026-01-01T12:00:30Z' } }),
        node('join', ['a', 'late']),
      ],
    });
    await ackAll(await fetchAll());
    ctx.clock.advance(60_000);
    await ctx.engine.promoteDueJobs();
    const late = workflow.steps[1].job_id;
    const job = await ctx.engine.getJob(late);
    assert.equal(job.state, 'discarded');
    const after = await get(workflow.id);
    assert.equal(after.state, 'failed');
    assert.deepEqual(
      after.steps.map((s: Json) => s.state),
      ['completed', 'failed', 'cancelled'],
    );
    const types = (await ctx.engine.listEvents({ limit: 100 })).map((e) => e.type);
    assert.ok(types.includes('job.expired'));
    assert.ok(types.includes('workflow.failed'));
  });

  it('an expired chain step fails the chain (expiry of any workflow job advances it)', async () => {
    const res = await ctx.req('POST', '/ojs/v1/workflows', {
      type: 'chain',
      name: 'c',
      steps: [
        {
          type: 'graph.step',
          args: [],
          options: { queue: 'slow', expires_at: '2026-01-01T12:00:30Z' },
        },
        { type: 'graph.step', args: [] },
      ],
    });
    assert.equal(res.statusCode, 201, res.body);
    const { id } = res.json().workflow;
    ctx.clock.advance(60_000);
    assert.equal(await ctx.engine.expireWorkflowJobs(), 1);
    const chain = await get(id);
    assert.equal(chain.state, 'failed');
    assert.deepEqual(
      chain.steps.map((s: Json) => s.state),
      ['failed', 'cancelled'],
    );
    assert.equal(await ctx.engine.expireWorkflowJobs(), 0, 'nothing left to expire');
  });
});
