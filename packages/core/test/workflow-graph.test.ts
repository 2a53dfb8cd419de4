/**
 * The graph form of workflows (http-binding §4.15): validation at creation,
 * advancement step by step as pure decisions, cancellation and the wire
 * form. Jobs are moved to their terminal states with the lifecycle
 * functions, so no store or clock is involved.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OjsError } from '../src/errors.ts';
import type { JobRecord } from '../src/job-types.ts';
import { cancel, claim, complete, expire, fail } from '../src/lifecycle.ts';
import { advanceWorkflow, cancelWorkflow, createWorkflow } from '../src/workflow.ts';
import { findCycle, MAX_STEP_ID_BYTES } from '../src/workflow-graph.ts';
import type { WorkflowRecord } from '../src/workflow-types.ts';
import { workflowToWire } from '../src/workflow-wire.ts';
import { rejects } from './ojs-error.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const DEFAULTS = { visibilityTimeoutMs: 300_000 };

type Obj = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: wire bodies are read dynamically in assertions.
type Json = any;

const node = (id: string, dependsOn: string[] = [], type = `step.${id}`): Obj => ({
  id,
  type,
  args: [id],
  depends_on: dependsOn,
});

const DIAMOND = [node('a'), node('b', ['a']), node('c', ['a']), node('d', ['b', 'c'])];

const firstPath = (error: OjsError) =>
  (error.details?.validation_errors as { path: string }[] | undefined)?.[0]?.path;

/**
 * A graph workflow driven step by step: `run(id, outcome)` ends the job of
 * step `id` and applies the advancement as a store commit would.
 */
class Run {
  workflow: WorkflowRecord;
  /** Jobs enqueued so far, by step id. */
  readonly jobs = new Map<string, JobRecord>();
  readonly events: string[] = [];
  now = T0;

  constructor(body: Obj) {
    const created = createWorkflow(body, T0, DEFAULTS);
    this.workflow = created.workflow;
    for (const job of created.jobs) this.jobs.set(job.workflow_step_id!, job);
    this.events.push(...created.events.map((e) => e.type));
  }

  /** Step ids whose jobs are enqueued and not yet ended. */
  get open(): string[] {
    return [...this.jobs.entries()]
      .filter(([, job]) => job.state === 'available')
      .map(([id]) => id)
      .sort();
  }

  stepState(id: string): string {
    return this.workflow.steps.find((s) => s.id === id)!.state;
  }

  end(id: string, outcome: 'ok' | 'fail' | 'cancel' | 'expire' = 'ok', result: unknown = id) {
    const job = this.jobs.get(id);
    assert.ok(job !== undefined, `step ${id} has no job`);
    this.now += 1000;
    const active = () => claim(job, { now: this.now - 500, workerId: 'w1' });
    const ended =
      outcome === 'ok'
        ? complete(active(), result, this.now)
        : outcome === 'fail'
          ? fail(active(), { code: 'boom', message: 'failed', retryable: false }, this.now)
          : outcome === 'cancel'
            ? cancel(job, this.now)
            : expire(job, this.now);
    this.jobs.set(id, ended);
    const advance = advanceWorkflow(this.workflow, ended, this.now, DEFAULTS);
    assert.ok(advance !== null);
    assert.equal(advance.workflow.rev, this.workflow.rev + 1);
    this.workflow = advance.workflow;
    for (const insert of advance.inserts) this.jobs.set(insert.workflow_step_id!, insert);
    this.events.push(...advance.events.map((e) => e.type));
    return advance;
  }
}

describe('graph workflows: validation at creation', () => {
  it('creates a workflow of type dag and enqueues only the roots', () => {
    const { workflow, jobs, events } = createWorkflow(
      { name: 'diamond', steps: DIAMOND },
      T0,
      DEFAULTS,
    );
    assert.equal(workflow.type, 'dag');
    assert.equal(workflow.state, 'running');
    assert.deepEqual(
      workflow.steps.map((s) => [s.id, s.state]),
      [
        ['a', 'pending'],
        ['b', 'waiting'],
        ['c', 'waiting'],
        ['d', 'waiting'],
      ],
    );
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0]!.type, 'step.a');
    assert.equal(jobs[0]!.workflow_id, workflow.id);
    assert.equal(jobs[0]!.workflow_step_id, 'a');
    assert.equal(jobs[0]!.parent_results, undefined);
    assert.equal(workflow.steps[0]!.job_id, jobs[0]!.id);
    assert.deepEqual(
      events.map((e) => [e.type, e.data.total_steps]),
      [['workflow.started', 4]],
    );
  });

  it("uses the step id as the step's name, never as the job id", () => {
    const id = '019539a4-0000-7000-8000-000000000001';
    const { jobs } = createWorkflow({ steps: [node(id, [], 'step.run')] }, T0, DEFAULTS);
    assert.notEqual(jobs[0]!.id, id);
    assert.equal(jobs[0]!.workflow_step_id, id);
    assert.equal(jobs[0]!.extensions.depends_on, undefined);
  });

  it('applies workflow options under each step options', () => {
    const { workflow, jobs } = createWorkflow(
      {
        options: { queue: 'graphs', priority: 5 },
        steps: [{ ...node('a'), options: { priority: 9 } }, node('b')],
      },
      T0,
      DEFAULTS,
    );
    assert.deepEqual(
      jobs.map((j) => [j.queue, j.priority]),
      [
        ['graphs', 9],
        ['graphs', 5],
      ],
    );
    assert.deepEqual(workflow.steps[0]!.spec.options, { queue: 'graphs', priority: 9 });
  });

  const refusals: [string, unknown[], RegExp, string, string | undefined][] = [
    [
      'an unknown dependency',
      [node('a'), node('b', ['zz'])],
      /'zz'/,
      'steps[1].depends_on[0]',
      'b',
    ],
    ['a duplicate id', [node('a'), node('a')], /already the id of steps\[0\]/, 'steps[1].id', 'a'],
    [
      'a missing id',
      [node('a'), { type: 'x', depends_on: [] }],
      /id is required/,
      'steps[1].id',
      undefined,
    ],
    ['a self dependency', [node('a', ['a'])], /depends on itself/, 'steps[0].depends_on[0]', 'a'],
    [
      'a repeated dependency',
      [node('a'), node('b', ['a', 'a'])],
      /twice/,
      'steps[1].depends_on[1]',
      'b',
    ],
    [
      'depends_on not a list of ids',
      [node('a'), { ...node('b'), depends_on: 'a' }],
      /array of step ids/,
      'steps[1].depends_on',
      'b',
    ],
    ['a step that is not an object', [node('a'), 7], /step object/, 'steps[1]', undefined],
    [
      'a too long id',
      [node('x'.repeat(MAX_STEP_ID_BYTES + 1))],
      /longer than 255 bytes/,
      'steps[0].id',
      'x'.repeat(64),
    ],
    [
      'an invalid job in a step',
      [node('a'), { ...node('b', ['a']), type: 'Bad Type' }],
      /steps\[1\]/,
      'steps[1]',
      'b',
    ],
    [
      'an invalid job in a nested workflow',
      [node('a'), { id: 'b', type: 'group', jobs: [{ type: 'x.y', args: 'no' }] }],
      /^steps\[1\]\.jobs\[0\]: /,
      'steps[1].jobs[0]',
      'b',
    ],
  ];
  for (const [what, steps, message, path, stepId] of refusals) {
    it(`refuses ${what} with a 400 naming the step`, () => {
      const error = rejects(() => createWorkflow({ name: 'w', steps }, T0, DEFAULTS));
      assert.equal(error.status, 400);
      assert.equal(error.code, 'invalid_request');
      assert.match(error.message, message);
      assert.equal(firstPath(error), path);
      assert.equal(error.details?.step_id, stepId);
    });
  }

  it('refuses a cycle, naming a step of it and the cycle', () => {
    const steps = [node('a'), node('b', ['a', 'd']), node('c', ['b']), node('d', ['c'])];
    const error = rejects(() => createWorkflow({ name: 'w', steps }, T0, DEFAULTS));
    assert.equal(error.status, 400);
    assert.match(error.message, /dependency cycle: b -> c -> d -> b/);
    assert.equal(error.details?.step_id, 'b');
    assert.equal(firstPath(error), 'steps[1].depends_on');
  });

  it('finds cycles iteratively, even through a 10,000-step path', () => {
    const nodes = Array.from({ length: 10_000 }, (_, i) => ({
      id: `s${i}`,
      depends_on: i === 0 ? ['s9999'] : [`s${i - 1}`],
    }));
    assert.equal(findCycle(nodes)?.length, 10_001);
    nodes[0]!.depends_on = [];
    assert.equal(findCycle(nodes), null);
  });

  it('refuses an empty list, more than 10,000 steps, a bad name and bad options', () => {
    const big = Array.from({ length: 10_001 }, (_, i) => node(`s${i}`));
    for (const [body, path] of [
      [{ steps: big }, 'steps'],
      [{ name: 5, steps: [node('a')] }, 'name'],
      [{ options: [], steps: [node('a')] }, 'options'],
    ] as const) {
      const error = rejects(() => createWorkflow(body, T0, DEFAULTS));
      assert.equal(error.status, 400);
      assert.equal(firstPath(error), path);
    }
  });

  it('keeps bodies without type and without graph fields on the typed forms', () => {
    const error = rejects(() => createWorkflow({ steps: [{ type: 'a', args: [] }] }, T0, DEFAULTS));
    assert.match(error.message, /type must be one of chain, group, batch/);
  });
});

describe('graph workflows: advancement', () => {
  it('runs a diamond: D starts once, after B and C, with both results', () => {
    const run = new Run({ name: 'diamond', steps: DIAMOND });
    assert.deepEqual(run.open, ['a']);
    run.end('a', 'ok', { from: 'a' });
    assert.deepEqual(run.open, ['b', 'c']);
    const b = run.jobs.get('b')!;
    assert.deepEqual(b.parent_results, [{ from: 'a' }]);
    assert.deepEqual(b.parent_results_by_step, { a: { from: 'a' } });
    const afterC = run.end('c', 'ok', 'rc');
    assert.deepEqual(afterC.inserts, [], 'D waits for B');
    assert.equal(run.stepState('d'), 'waiting');
    run.end('b', 'ok', 'rb');
    const d = run.jobs.get('d')!;
    // parent_results follow depends_on order (b, c), not completion order.
    assert.deepEqual(d.parent_results, ['rb', 'rc']);
    assert.deepEqual(d.parent_results_by_step, { b: 'rb', c: 'rc' });
    assert.equal(run.workflow.state, 'running');
    run.end('d');
    assert.equal(run.workflow.state, 'completed');
    assert.ok(run.workflow.completed_at !== undefined);
    assert.deepEqual(run.events, [
      'workflow.started',
      'workflow.step_completed',
      'workflow.step_completed',
      'workflow.step_completed',
      'workflow.step_completed',
      'workflow.completed',
    ]);
  });

  it('fans out to 100 steps and in to one that receives all 100 results', () => {
    const leaves = Array.from({ length: 100 }, (_, i) => node(`leaf${i}`, ['root']));
    const run = new Run({
      steps: [
        node('root'),
        ...leaves,
        node(
          'sink',
          leaves.map((l) => l.id as string),
        ),
      ],
    });
    run.end('root');
    assert.equal(run.open.length, 100);
    // Complete in reverse order: the sink still lists results in depends_on order.
    for (let i = 99; i >= 0; i--) {
      assert.equal(run.jobs.has('sink'), false);
      run.end(`leaf${i}`, 'ok', i);
    }
    const sink = run.jobs.get('sink')!;
    assert.deepEqual(
      sink.parent_results,
      Array.from({ length: 100 }, (_, i) => i),
    );
    assert.equal(Object.keys(sink.parent_results_by_step!).length, 100);
    run.end('sink');
    assert.equal(run.workflow.state, 'completed');
  });

  it('a step failing in the middle fails the workflow and cancels what can no longer run', () => {
    // a -> (b, c); b -> d; c -> e; d, e -> f.  b fails while c is running.
    const run = new Run({
      name: 'middle',
      steps: [
        node('a'),
        node('b', ['a']),
        node('c', ['a']),
        node('d', ['b']),
        node('e', ['c']),
        node('f', ['d', 'e']),
      ],
    });
    run.end('a');
    const advance = run.end('b', 'fail');
    assert.equal(run.workflow.state, 'failed');
    assert.deepEqual(
      run.workflow.steps.map((s) => [s.id, s.state]),
      [
        ['a', 'completed'],
        ['b', 'failed'],
        ['c', 'pending'],
        ['d', 'cancelled'],
        ['e', 'cancelled'],
        ['f', 'cancelled'],
      ],
    );
    const failed = advance.events.find((e) => e.type === 'workflow.failed')!;
    assert.equal(failed.data.failed_step_id, 'b');
    assert.equal(failed.data.failed_step_type, 'step.b');
    assert.deepEqual(failed.data.error, { code: 'boom', message: 'failed', attempt: 1 });
    assert.deepEqual(failed.data.cancelled_steps, ['d', 'e', 'f']);
    assert.deepEqual(
      advance.events.map((e) => e.type),
      ['workflow.step_failed', 'workflow.failed'],
    );
    // c was already enqueued: it runs to its end, recorded, and enqueues nothing.
    const late = run.end('c');
    assert.deepEqual(late.inserts, []);
    assert.equal(run.stepState('c'), 'completed');
    assert.equal(run.workflow.state, 'failed');
  });

  it('an expired or cancelled step ends the workflow like a failed one', () => {
    for (const outcome of ['expire', 'cancel'] as const) {
      const run = new Run({ steps: DIAMOND });
      run.end('a');
      run.end('b', outcome);
      assert.equal(run.workflow.state, 'failed');
      assert.equal(run.stepState('b'), outcome === 'expire' ? 'failed' : 'cancelled');
      assert.equal(run.stepState('d'), 'cancelled');
    }
  });

  it('runs a 1,000-step workflow: ten layers of 100, each step after its column above', () => {
    const steps: Obj[] = [];
    for (let layer = 0; layer < 10; layer++) {
      for (let col = 0; col < 100; col++) {
        steps.push(
          node(`s${layer}.${col}`, layer === 0 ? [] : [`s${layer - 1}.${col}`], 'step.run'),
        );
      }
    }
    const run = new Run({ name: 'thousand', steps });
    let ended = 0;
    while (run.open.length > 0) {
      for (const id of run.open) {
        const job = run.jobs.get(id)!;
        const [layer] = id.slice(1).split('.');
        if (layer !== '0') assert.equal(job.parent_results!.length, 1);
        run.end(id, 'ok', id);
        ended++;
      }
    }
    assert.equal(ended, 1000);
    assert.equal(run.workflow.state, 'completed');
    assert.equal(run.events.filter((e) => e === 'workflow.step_completed').length, 1000);
  });
});

describe('graph workflows: cancel and wire form', () => {
  it('cancel mid-run cancels every non-terminal step and job', () => {
    const run = new Run({ name: 'c', steps: DIAMOND });
    run.end('a');
    const jobs = [...run.jobs.values()];
    const { workflow, jobs: cancelled } = cancelWorkflow(run.workflow, jobs, T0 + 5000);
    assert.equal(workflow.state, 'cancelled');
    assert.deepEqual(cancelled.map((j) => j.workflow_step_id).sort(), ['b', 'c']);
    assert.ok(cancelled.every((j) => j.state === 'cancelled'));
    assert.deepEqual(
      workflow.steps.map((s) => s.state),
      ['completed', 'cancelled', 'cancelled', 'cancelled'],
    );
    const wire: Json = workflowToWire(workflow);
    assert.equal(wire.state, 'cancelled');
    assert.equal(wire.steps_cancelled, 3);
    assert.equal(wire.steps_already_completed, 1);
    assert.ok(typeof wire.cancelled_at === 'string');
  });

  it('answers the http-binding §4.15 shape, with active steps from their jobs', () => {
    const run = new Run({ name: 'diamond', steps: DIAMOND });
    run.end('a', 'ok', 42);
    const b = claim(run.jobs.get('b')!, { now: run.now + 10, workerId: 'w9' });
    const wire: Json = workflowToWire(run.workflow, [...run.jobs.values(), b]);
    assert.equal(wire.type, undefined);
    assert.equal(wire.name, 'diamond');
    assert.equal(wire.state, 'running');
    assert.equal(wire.steps_total, 4);
    assert.equal(wire.steps_completed, 1);
    const [a, bStep, c, d] = wire.steps;
    assert.deepEqual(Object.keys(a).sort(), [
      'completed_at',
      'depends_on',
      'id',
      'job_id',
      'result',
      'started_at',
      'state',
      'type',
    ]);
    assert.equal(a.result, 42);
    assert.equal(bStep.state, 'active');
    assert.equal(bStep.started_at, b.started_at);
    assert.equal(c.state, 'pending');
    assert.deepEqual(d, {
      id: 'd',
      type: 'step.d',
      state: 'waiting',
      job_id: null,
      depends_on: ['b', 'c'],
    });
  });
});
