/**
 * Workflows (features §3) as pure decisions: createWorkflow validates and
 * plans the first jobs, advanceWorkflow reacts to a job that reached a
 * terminal state, cancelWorkflow stops a running workflow, workflowToWire
 * projects the counters. Jobs are moved to their terminal states by hand
 * with the lifecycle functions, so no store or clock is involved.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OjsError } from '../src/errors.ts';
import type { JobRecord, OjsEvent } from '../src/job-types.ts';
import { cancel, claim, complete, fail, reviveDeadLetter } from '../src/lifecycle.ts';
import { isUuidv7 } from '../src/uuid.ts';
import {
  advanceWorkflow,
  cancelWorkflow,
  createWorkflow,
  type WorkflowAdvance,
} from '../src/workflow.ts';
import type { WorkflowRecord } from '../src/workflow-types.ts';
import { workflowToWire } from '../src/workflow-wire.ts';
import { rejects } from './ojs-error.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const DEFAULTS = { visibilityTimeoutMs: 300_000 };

type Obj = Record<string, unknown>;

const step = (type: string, args: unknown[] = [], options?: Obj): Obj =>
  options === undefined ? { type, args } : { type, args, options };

/** The job, fetched by a worker and acknowledged with `result`. */
function completed(job: JobRecord, result: unknown, now = T0 + 1000): JobRecord {
  return complete(claim(job, { now: now - 500, workerId: 'w1' }), result, now);
}

/** The job, fetched and failed with a non-retryable error (terminal: discarded). */
function discarded(job: JobRecord, message = 'boom', now = T0 + 1000): JobRecord {
  return fail(
    claim(job, { now: now - 500, workerId: 'w1' }),
    { code: 'handler_error', message, retryable: false },
    now,
  );
}

/** Advances and requires a non-null result. */
function advance(workflow: WorkflowRecord, job: JobRecord, now = T0 + 1000): WorkflowAdvance {
  const result = advanceWorkflow(workflow, job, now, DEFAULTS);
  assert.ok(result !== null, 'advanceWorkflow returned null');
  return result;
}

const eventTypes = (events: OjsEvent[]) => events.map((e) => e.type);

/** The path of the first details.validation_errors entry, if any. */
function firstPath(error: OjsError): string | undefined {
  const errors = error.details?.validation_errors;
  return Array.isArray(errors) ? (errors[0] as { path?: string } | undefined)?.path : undefined;
}

// ---------------------------------------------------------------------------------------------

describe('createWorkflow: validation', () => {
  it('rejects a non-object body', () => {
    for (const body of [null, 'chain', [], 42]) {
      const error = rejects(() => createWorkflow(body, T0, DEFAULTS));
      assert.equal(error.status, 400);
    }
  });

  it('rejects an unknown or missing workflow type, naming type', () => {
    for (const type of ['dag', 'CHAIN', undefined, 3]) {
      const error = rejects(() =>
        createWorkflow({ type, steps: [step('a.b')], jobs: [step('a.b')] }, T0, DEFAULTS),
      );
      assert.equal(error.code, 'invalid_request');
      assert.equal(error.status, 400);
      assert.match(error.message, /chain, group, batch/);
      assert.deepEqual(error.details?.validation_errors, [
        { path: 'type', message: error.message },
      ]);
    }
  });

  it('rejects a chain with an empty or non-array steps value', () => {
    for (const body of [
      { type: 'chain', steps: [] },
      { type: 'chain', steps: {} },
    ]) {
      const error = rejects(() => createWorkflow(body, T0, DEFAULTS));
      assert.equal(error.code, 'invalid_request');
      assert.match(error.message, /steps must be a non-empty array/);
      assert.equal(firstPath(error), 'steps');
    }
  });

  it('rejects a chain with no list at all, the message and the path both naming steps', () => {
    const error = rejects(() => createWorkflow({ type: 'chain' }, T0, DEFAULTS));
    assert.equal(error.code, 'invalid_request');
    assert.match(error.message, /steps must be a non-empty array/);
  });

  it('a missing list is reported at the path its message names (steps for a chain, jobs for a group)', () => {
    const chain = rejects(() => createWorkflow({ type: 'chain' }, T0, DEFAULTS));
    assert.equal(firstPath(chain), 'steps');
    const group = rejects(() => createWorkflow({ type: 'group' }, T0, DEFAULTS));
    assert.match(group.message, /jobs must be/);
    assert.equal(firstPath(group), 'jobs');
  });

  it('rejects a group or batch with an empty jobs array', () => {
    for (const type of ['group', 'batch']) {
      const error = rejects(() =>
        createWorkflow(
          { type, jobs: [], callbacks: { on_complete: step('cb.done') } },
          T0,
          DEFAULTS,
        ),
      );
      assert.equal(error.code, 'invalid_request');
      assert.match(error.message, /jobs must be a non-empty array/);
      assert.equal(firstPath(error), 'jobs');
    }
  });

  it('rejects an invalid step job with the enqueue error code and a message naming steps[1]', () => {
    const error = rejects(() =>
      createWorkflow(
        { type: 'chain', steps: [step('ok.first'), step('Bad Type!'), step('ok.third')] },
        T0,
        DEFAULTS,
      ),
    );
    assert.equal(error.status, 400);
    assert.ok(
      ['invalid_request', 'invalid_payload'].includes(error.code),
      `unexpected code ${error.code}`,
    );
    assert.match(error.message, /^steps\[1\]: /);
    assert.match(error.message, /Bad Type!/);
    assert.equal(error.details?.path, 'steps[1]');
  });

  it('names the index of an invalid job in a group (jobs[2]) and of a bad args value', () => {
    const error = rejects(() =>
      createWorkflow(
        { type: 'group', jobs: [step('a.one'), step('a.two'), { type: 'a.three', args: 'x' }] },
        T0,
        DEFAULTS,
      ),
    );
    assert.match(error.message, /^jobs\[2\]: .*args/);
    assert.equal(error.details?.path, 'jobs[2]');
  });

  it('rejects a step that is not an object', () => {
    const error = rejects(() =>
      createWorkflow({ type: 'chain', steps: [step('a.b'), 'a.c'] }, T0, DEFAULTS),
    );
    assert.match(error.message, /steps\[1\]/);
  });

  it('an invalid step error carries details.validation_errors [{path, message}] like the other workflow errors', () => {
    const error = rejects(() =>
      createWorkflow({ type: 'chain', steps: [step('a.b'), step('Bad Type!')] }, T0, DEFAULTS),
    );
    const errors = error.details?.validation_errors as { path: string; message: string }[];
    assert.ok(Array.isArray(errors), 'validation_errors missing');
    assert.equal(errors[0]?.path, 'steps[1]');
  });

  it('rejects a batch without callbacks, with empty callbacks, or with an invalid callback', () => {
    const jobs = [step('a.b')];
    const missing = rejects(() => createWorkflow({ type: 'batch', jobs }, T0, DEFAULTS));
    assert.equal(missing.code, 'invalid_request');
    assert.match(missing.message, /callbacks/);
    assert.equal(firstPath(missing), 'callbacks');

    const empty = rejects(() =>
      createWorkflow({ type: 'batch', jobs, callbacks: {} }, T0, DEFAULTS),
    );
    assert.match(empty.message, /at least one of on_complete, on_success, on_failure/);

    const unknownOnly = rejects(() =>
      createWorkflow({ type: 'batch', jobs, callbacks: { on_done: step('x.y') } }, T0, DEFAULTS),
    );
    assert.match(unknownOnly.message, /at least one of/);

    const bad = rejects(() =>
      createWorkflow(
        { type: 'batch', jobs, callbacks: { on_success: { type: 'NOPE', args: [] } } },
        T0,
        DEFAULTS,
      ),
    );
    assert.match(bad.message, /^callbacks\.on_success: /);
  });

  it('rejects workflows nested deeper than MAX_WORKFLOW_DEPTH, naming the path', () => {
    let body: Obj = { type: 'group', jobs: [step('c.d')] };
    for (let level = 2; level <= 6; level++) body = { type: 'chain', steps: [step('a.b'), body] };
    const error = rejects(() => createWorkflow(body, T0, DEFAULTS));
    assert.equal(error.code, 'invalid_request');
    assert.match(error.message, /nest at most 5 levels/);
    assert.equal(firstPath(error), 'steps[1].steps[1].steps[1].steps[1].steps[1]');
    // One level less is accepted.
    assert.ok(createWorkflow((body.steps as Obj[])[1], T0, DEFAULTS));
  });

  it('rejects a non-string name', () => {
    const error = rejects(() =>
      createWorkflow({ type: 'chain', name: 7, steps: [step('a.b')] }, T0, DEFAULTS),
    );
    assert.match(error.message, /name must be a string/);
  });
});

describe('createWorkflow: plan', () => {
  it('a chain starts running with only step 0 enqueued, the rest waiting', () => {
    const { workflow, jobs, events } = createWorkflow(
      {
        type: 'chain',
        name: 'etl',
        steps: [
          step('etl.extract', [1]),
          step('etl.transform'),
          step('etl.load', [], { queue: 'io' }),
        ],
      },
      T0,
      DEFAULTS,
    );
    assert.ok(isUuidv7(workflow.id));
    assert.equal(workflow.type, 'chain');
    assert.equal(workflow.name, 'etl');
    assert.equal(workflow.state, 'running');
    assert.equal(workflow.rev, 0);
    assert.deepEqual(
      workflow.steps.map((s) => s.state),
      ['pending', 'waiting', 'waiting'],
    );
    assert.equal(jobs.length, 1);
    const [first] = jobs;
    assert.equal(first!.type, 'etl.extract');
    assert.deepEqual(first!.args, [1]);
    assert.equal(first!.state, 'available');
    assert.equal(first!.workflow_id, workflow.id);
    assert.equal(first!.workflow_step, 0);
    assert.equal(first!.parent_results, undefined);
    assert.equal(workflow.steps[0]!.job_id, first!.id);
    assert.deepEqual(eventTypes(events), ['workflow.started']);
    assert.equal(events[0]!.data.workflow_id, workflow.id);
  });

  it('a chain accepts `jobs` as its list', () => {
    const { workflow, jobs } = createWorkflow(
      { type: 'chain', jobs: [step('a.b'), step('c.d')] },
      T0,
      DEFAULTS,
    );
    assert.equal(workflow.steps.length, 2);
    assert.equal(jobs.length, 1);
  });

  it('a group and a batch enqueue every job at once, in array order', () => {
    for (const type of ['group', 'batch']) {
      const { workflow, jobs } = createWorkflow(
        {
          type,
          jobs: [step('g.a'), step('g.b', [], { queue: 'other' }), step('g.c')],
          callbacks: { on_complete: step('g.done') },
        },
        T0,
        DEFAULTS,
      );
      assert.deepEqual(
        jobs.map((j) => j.type),
        ['g.a', 'g.b', 'g.c'],
      );
      assert.deepEqual(
        jobs.map((j) => j.workflow_step),
        [0, 1, 2],
      );
      assert.equal(jobs[1]!.queue, 'other');
      assert.ok(workflow.steps.every((s) => s.state === 'pending'));
      assert.deepEqual(
        workflow.steps.map((s) => s.job_id),
        jobs.map((j) => j.id),
      );
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('advanceWorkflow: chain', () => {
  const create = () =>
    createWorkflow(
      {
        type: 'chain',
        steps: [
          step('c.one', ['a']),
          step('c.two', ['b'], { queue: 'q2' }),
          step('c.three', ['c']),
        ],
      },
      T0,
      DEFAULTS,
    );

  it('success: each completed step enqueues the next with parent_results [previous result]', () => {
    const { workflow: w0, jobs } = create();

    const a1 = advance(w0, completed(jobs[0]!, { rows: 10 }));
    assert.equal(a1.workflow.state, 'running');
    assert.equal(a1.workflow.rev, w0.rev + 1);
    assert.equal(a1.inserts.length, 1);
    const second = a1.inserts[0]!;
    assert.equal(second.type, 'c.two');
    assert.deepEqual(second.args, ['b'], 'args pass through unchanged');
    assert.equal(second.queue, 'q2');
    assert.equal(second.state, 'available');
    assert.equal(second.workflow_id, w0.id);
    assert.equal(second.workflow_step, 1);
    assert.deepEqual(second.parent_results, [{ rows: 10 }]);
    assert.deepEqual(
      a1.workflow.steps.map((s) => s.state),
      ['completed', 'pending', 'waiting'],
    );
    assert.deepEqual(a1.workflow.steps[0]!.result, { rows: 10 });
    assert.equal(a1.workflow.steps[1]!.job_id, second.id);
    assert.deepEqual(eventTypes(a1.events), ['workflow.step_completed']);
    assert.equal(a1.events[0]!.data.steps_remaining, 2);
    // The input record is not mutated.
    assert.equal(w0.steps[0]!.state, 'pending');

    const a2 = advance(a1.workflow, completed(second, 'two-done'));
    const third = a2.inserts[0]!;
    assert.equal(third.type, 'c.three');
    assert.deepEqual(third.parent_results, ['two-done']);
    assert.equal(a2.workflow.state, 'running');

    const a3 = advance(a2.workflow, completed(third, null), T0 + 5000);
    assert.equal(a3.inserts.length, 0);
    assert.equal(a3.workflow.state, 'completed');
    assert.equal(a3.workflow.completed_at, new Date(T0 + 5000).toISOString());
    assert.ok(a3.workflow.steps.every((s) => s.state === 'completed'));
    assert.deepEqual(eventTypes(a3.events), ['workflow.completed']);
  });

  it('a step without a result passes null to the next step', () => {
    const { workflow, jobs } = create();
    const a1 = advance(workflow, completed(jobs[0]!, undefined));
    assert.deepEqual(a1.inserts[0]!.parent_results, [null]);
  });

  it('failure: a discarded step fails the chain, cancels later steps, enqueues nothing', () => {
    const { workflow: w0, jobs } = create();
    const a1 = advance(w0, completed(jobs[0]!, 1));
    const failedJob = discarded(a1.inserts[0]!, 'db down');
    assert.equal(failedJob.state, 'discarded');
    const a2 = advance(a1.workflow, failedJob, T0 + 2000);
    assert.equal(a2.workflow.state, 'failed');
    assert.equal(a2.workflow.completed_at, new Date(T0 + 2000).toISOString());
    assert.equal(a2.inserts.length, 0);
    assert.deepEqual(
      a2.workflow.steps.map((s) => s.state),
      ['completed', 'failed', 'cancelled'],
    );
    assert.equal(a2.workflow.steps[1]!.error?.message, 'db down');
    assert.equal(a2.workflow.steps[1]!.error?.code, 'handler_error');
    assert.equal(a2.workflow.steps[2]!.job_id, undefined);
    assert.deepEqual(eventTypes(a2.events), ['workflow.failed']);
    assert.equal(a2.events[0]!.data.failed_step_index, 1);
    assert.equal(a2.events[0]!.data.failed_step_id, failedJob.id);
  });

  it('a cancelled step also fails the chain', () => {
    const { workflow, jobs } = create();
    const a1 = advance(workflow, cancel(jobs[0]!, T0 + 10));
    assert.equal(a1.workflow.state, 'failed');
    assert.deepEqual(
      a1.workflow.steps.map((s) => s.state),
      ['cancelled', 'cancelled', 'cancelled'],
    );
    assert.equal(a1.inserts.length, 0);
  });

  it('a retryable step is not a failure: nothing changes', () => {
    const { workflow, jobs } = create();
    const retrying = fail(
      claim(jobs[0]!, { now: T0, workerId: 'w1' }),
      { code: 'handler_error', message: 'try again', retryable: true },
      T0 + 100,
    );
    assert.equal(retrying.state, 'retryable');
    assert.equal(advanceWorkflow(workflow, retrying, T0 + 100, DEFAULTS), null);
  });

  it('a job that is not part of the workflow changes nothing', () => {
    const { workflow } = create();
    const other = create().jobs[0]!;
    assert.equal(advanceWorkflow(workflow, completed(other, 1), T0 + 1000, DEFAULTS), null);
  });

  it('a step finishing after the chain ended records the step but enqueues nothing', () => {
    const { workflow, jobs } = create();
    const { workflow: cancelled } = cancelWorkflow(workflow, [], T0 + 10);
    const a = advance(cancelled, completed(jobs[0]!, 'late'));
    assert.equal(a.workflow.state, 'cancelled');
    assert.equal(a.inserts.length, 0);
    assert.equal(a.events.length, 0);
  });
});

describe('advanceWorkflow: group', () => {
  const create = () =>
    createWorkflow(
      { type: 'group', name: 'fan', jobs: [step('g.a'), step('g.b'), step('g.c')] },
      T0,
      DEFAULTS,
    );

  it('completes when every job succeeded, and not before', () => {
    const { workflow: w0, jobs } = create();
    const a1 = advance(w0, completed(jobs[1]!, 'b'));
    assert.equal(a1.workflow.state, 'running');
    assert.equal(a1.inserts.length, 0);
    assert.equal(a1.events.length, 0);
    const a2 = advance(a1.workflow, completed(jobs[0]!, 'a'));
    assert.equal(a2.workflow.state, 'running');
    const a3 = advance(a2.workflow, completed(jobs[2]!, 'c'));
    assert.equal(a3.workflow.state, 'completed');
    assert.deepEqual(eventTypes(a3.events), ['workflow.completed']);
    assert.deepEqual(
      a3.workflow.steps.map((s) => s.result),
      ['a', 'b', 'c'],
    );
  });

  it('partial failure: siblings keep running; failed only once every job is terminal', () => {
    const { workflow: w0, jobs } = create();
    const a1 = advance(w0, discarded(jobs[0]!));
    assert.equal(a1.workflow.state, 'running', 'a failure must not end the group early');
    assert.equal(a1.inserts.length, 0);
    assert.deepEqual(
      a1.workflow.steps.map((s) => s.state),
      ['failed', 'pending', 'pending'],
    );
    const a2 = advance(a1.workflow, completed(jobs[1]!, 1));
    assert.equal(a2.workflow.state, 'running');
    const a3 = advance(a2.workflow, completed(jobs[2]!, 2));
    assert.equal(a3.workflow.state, 'failed');
    assert.deepEqual(eventTypes(a3.events), ['workflow.failed']);
    assert.equal(a3.inserts.length, 0);
  });
});

describe('advanceWorkflow: batch callbacks', () => {
  const CALLBACKS = {
    on_complete: step('cb.complete', ['c'], { queue: 'callbacks' }),
    on_success: step('cb.success', ['s']),
    on_failure: step('cb.failure', ['f']),
  };
  const create = (callbacks: Obj = CALLBACKS) =>
    createWorkflow({ type: 'batch', jobs: [step('b.a'), step('b.b')], callbacks }, T0, DEFAULTS);

  it('all succeeded: on_complete and on_success fire once, with every result; the batch waits for them', () => {
    const { workflow: w0, jobs } = create();
    const a1 = advance(w0, completed(jobs[0]!, 'ra'));
    assert.equal(a1.inserts.length, 0, 'no callback before every job is terminal');
    const a2 = advance(a1.workflow, completed(jobs[1]!, 'rb'));
    assert.equal(a2.workflow.state, 'running', 'the batch runs while its callbacks run');
    const kinds = a2.inserts.map((j) => j.workflow_callback);
    assert.deepEqual(kinds, ['on_complete', 'on_success']);
    const [onComplete, onSuccess] = a2.inserts;
    assert.equal(onComplete!.type, 'cb.complete');
    assert.deepEqual(onComplete!.args, ['c']);
    assert.equal(onComplete!.queue, 'callbacks');
    assert.equal(onComplete!.workflow_id, w0.id);
    assert.deepEqual(onComplete!.parent_results, ['ra', 'rb']);
    assert.equal(onSuccess!.type, 'cb.success');
    assert.deepEqual(a2.workflow.callback_jobs, {
      on_complete: onComplete!.id,
      on_success: onSuccess!.id,
    });
    assert.deepEqual(eventTypes(a2.events), ['workflow.callback_fired', 'workflow.callback_fired']);

    const a3 = advance(a2.workflow, completed(onSuccess!, 'ok'));
    assert.equal(a3.workflow.state, 'running');
    assert.equal(a3.inserts.length, 0);
    const a4 = advance(a3.workflow, completed(onComplete!, 'ok'));
    assert.equal(a4.workflow.state, 'completed');
    assert.equal(a4.inserts.length, 0);
    assert.deepEqual(eventTypes(a4.events), ['workflow.completed']);
  });

  it('one failure: on_complete and on_failure fire (not on_success), results include the error', () => {
    const { workflow: w0, jobs } = create();
    const a1 = advance(w0, discarded(jobs[0]!, 'bad row'));
    const a2 = advance(a1.workflow, completed(jobs[1]!, 'rb'));
    assert.deepEqual(
      a2.inserts.map((j) => j.workflow_callback),
      ['on_complete', 'on_failure'],
    );
    const results = a2.inserts[1]!.parent_results as [{ error: { message: string } }, string];
    assert.equal(results[0].error.message, 'bad row');
    assert.equal(results[1], 'rb');
    // The batch finishes with the callbacks' outcome (X-15): completed although a job failed.
    const a3 = advance(a2.workflow, completed(a2.inserts[0]!, 1));
    const a4 = advance(a3.workflow, completed(a2.inserts[1]!, 2));
    assert.equal(a4.workflow.state, 'completed');
  });

  it('a failed callback fails the batch once all triggered callbacks are terminal', () => {
    const { workflow: w0, jobs } = create();
    let w = advance(w0, completed(jobs[0]!, 1)).workflow;
    const a = advance(w, completed(jobs[1]!, 2));
    w = a.workflow;
    const [onComplete, onSuccess] = a.inserts;
    const b = advance(w, discarded(onSuccess!, 'callback broke'));
    assert.equal(b.workflow.state, 'running', 'on_complete is still running');
    const c = advance(b.workflow, completed(onComplete!, 'ok'));
    assert.equal(c.workflow.state, 'failed');
    assert.deepEqual(eventTypes(c.events), ['workflow.failed']);
    assert.equal(c.events[0]!.data.failed_callback, 'on_complete');
    assert.equal(c.workflow.callback_states?.on_success, 'failed');
  });

  it('only the defined callbacks fire; none applicable means the batch ends at once', () => {
    const { workflow: w0, jobs } = create({ on_success: step('cb.success') });
    const a1 = advance(w0, discarded(jobs[0]!));
    const a2 = advance(a1.workflow, completed(jobs[1]!, 1));
    assert.equal(a2.inserts.length, 0);
    assert.equal(a2.workflow.state, 'failed');
  });

  it('a repeated callback completion does not change a finished batch', () => {
    const { workflow: w0, jobs } = create({ on_complete: step('cb.complete') });
    let w = advance(w0, completed(jobs[0]!, 1)).workflow;
    const a = advance(w, completed(jobs[1]!, 2));
    w = advance(a.workflow, completed(a.inserts[0]!, 'x')).workflow;
    assert.equal(w.state, 'completed');
    assert.equal(advanceWorkflow(w, completed(a.inserts[0]!, 'x'), T0 + 9000, DEFAULTS), null);
  });

  it('each callback is enqueued once even when a member job ends again (dead-letter retry) while callbacks run', () => {
    const { workflow: w0, jobs } = create();
    const deadJob = fail(
      claim(
        { ...jobs[0]!, retry: { ...jobs[0]!.retry, on_exhaustion: 'dead_letter' } },
        {
          now: T0,
          workerId: 'w1',
        },
      ),
      { code: 'handler_error', message: 'x', retryable: false },
      T0 + 100,
    );
    assert.equal(deadJob.state, 'discarded');
    let w = advance(w0, deadJob).workflow;
    const fired = advance(w, completed(jobs[1]!, 2));
    w = fired.workflow;
    assert.equal(fired.inserts.length, 2); // on_complete + on_failure
    // The operator retries the dead job; it now completes while the callbacks still run.
    const revived = completed(reviveDeadLetter(deadJob, T0 + 200), 'second time');
    const again = advanceWorkflow(w, revived, T0 + 1500, DEFAULTS);
    assert.equal(again?.inserts.length ?? 0, 0, 'callbacks must not be enqueued a second time');
    assert.deepEqual(again?.workflow.callback_jobs ?? w.callback_jobs, w.callback_jobs);
  });
});

// ---------------------------------------------------------------------------------------------

describe('cancelWorkflow', () => {
  it('cancels non-terminal jobs and waiting steps; terminal jobs are left alone', () => {
    const { workflow: w0, jobs } = createWorkflow(
      { type: 'chain', name: 'c', steps: [step('a.one'), step('a.two'), step('a.three')] },
      T0,
      DEFAULTS,
    );
    const a1 = advance(w0, completed(jobs[0]!, 1));
    const secondActive = claim(a1.inserts[0]!, { now: T0 + 1500, workerId: 'w2' });
    const done = completed(jobs[0]!, 1);
    const result = cancelWorkflow(a1.workflow, [done, secondActive], T0 + 2000);
    assert.equal(result.workflow.state, 'cancelled');
    assert.equal(result.workflow.cancelled_at, new Date(T0 + 2000).toISOString());
    assert.equal(result.workflow.rev, a1.workflow.rev + 1);
    assert.deepEqual(
      result.jobs.map((j) => [j.id, j.state]),
      [[secondActive.id, 'cancelled']],
    );
    assert.equal(result.jobs[0]!.cancel_requested, true, 'the active job learns on its heartbeat');
    assert.deepEqual(
      result.workflow.steps.map((s) => s.state),
      ['completed', 'cancelled', 'cancelled'],
    );
    assert.deepEqual(eventTypes(result.events), ['workflow.cancelled']);
  });

  it('cancels every pending job of a group', () => {
    const { workflow, jobs } = createWorkflow(
      { type: 'group', jobs: [step('a.one'), step('a.two')] },
      T0,
      DEFAULTS,
    );
    const result = cancelWorkflow(workflow, jobs, T0 + 10);
    assert.equal(result.jobs.length, 2);
    assert.ok(result.jobs.every((j) => j.state === 'cancelled'));
    assert.ok(result.workflow.steps.every((s) => s.state === 'cancelled'));
  });

  it('a finished workflow cannot be cancelled: 409 conflict', () => {
    const { workflow: w0, jobs } = createWorkflow(
      { type: 'chain', steps: [step('a.one')] },
      T0,
      DEFAULTS,
    );
    const done = advance(w0, completed(jobs[0]!, 1)).workflow;
    assert.equal(done.state, 'completed');
    for (const finished of [done, cancelWorkflow(w0, jobs, T0).workflow]) {
      const error = rejects(() => cancelWorkflow(finished, [], T0 + 5000));
      assert.equal(error.code, 'conflict');
      assert.equal(error.status, 409);
      assert.match(error.message, new RegExp(`is ${finished.state}`));
      assert.equal(error.details?.current_state, finished.state);
    }
  });
});

describe('workflowToWire', () => {
  it('chain counters: steps_total, steps_completed, jobs_failed, metadata', () => {
    const { workflow: w0, jobs } = createWorkflow(
      { type: 'chain', name: 'n', steps: [step('a.one'), step('a.two'), step('a.three')] },
      T0,
      DEFAULTS,
    );
    const wire0 = workflowToWire(w0);
    assert.equal(wire0.id, w0.id);
    assert.equal(wire0.type, 'chain');
    assert.equal(wire0.name, 'n');
    assert.equal(wire0.state, 'running');
    assert.equal(wire0.steps_total, 3);
    assert.equal(wire0.steps_completed, 0);
    assert.equal(wire0.jobs_total, undefined);
    assert.deepEqual(wire0.steps, [
      { index: 0, type: 'a.one', state: 'pending', job_id: jobs[0]!.id },
      { index: 1, type: 'a.two', state: 'waiting', job_id: null },
      { index: 2, type: 'a.three', state: 'waiting', job_id: null },
    ]);

    const a1 = advance(w0, completed(jobs[0]!, { k: 1 }));
    const a2 = advance(a1.workflow, discarded(a1.inserts[0]!));
    const wire = workflowToWire(a2.workflow);
    assert.equal(wire.state, 'failed');
    assert.equal(wire.steps_completed, 1);
    assert.equal(wire.jobs_failed, 1);
    assert.equal(typeof wire.completed_at, 'string');
    assert.deepEqual((wire.steps as Obj[])[0]!.result, { k: 1 });
    assert.deepEqual(wire.metadata, {
      created_at: w0.created_at,
      started_at: w0.started_at,
      completed_at: a2.workflow.completed_at,
      job_count: 3,
      completed_count: 1,
      failed_count: 1,
    });
  });

  it('group/batch counters: jobs_total, jobs_completed, callbacks', () => {
    const { workflow: w0, jobs } = createWorkflow(
      {
        type: 'batch',
        jobs: [step('a.one'), step('a.two')],
        callbacks: { on_complete: step('cb.x') },
      },
      T0,
      DEFAULTS,
    );
    const a1 = advance(w0, completed(jobs[0]!, 1));
    const wire = workflowToWire(a1.workflow);
    assert.equal(wire.jobs_total, 2);
    assert.equal(wire.jobs_completed, 1);
    assert.equal(wire.jobs_failed, 0);
    assert.equal(wire.steps_total, undefined);
    assert.deepEqual(wire.callbacks, { on_complete: step('cb.x') });
    const a2 = advance(a1.workflow, completed(jobs[1]!, 2));
    assert.deepEqual(workflowToWire(a2.workflow).callback_jobs, {
      on_complete: a2.inserts[0]!.id,
    });
  });
});
