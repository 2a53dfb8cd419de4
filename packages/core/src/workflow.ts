/**
 * Workflows (features §3): chain, group and batch, and the graph form of
 * http-binding §4.15 (steps with ids and depends_on). Pure decisions only:
 * starting a workflow built from a request (workflow-build.ts), advancing
 * it when one of its members (a job, or a nested workflow) reaches a
 * terminal state, and cancelling it. The engine commits the advanced
 * records, the jobs and nested workflows they start and the transition that
 * triggered them in one atomic commit.
 */

import type { EnqueueDefaults } from './envelope.ts';
import { parseEnqueueRequest } from './envelope.ts';
import { OjsError } from './errors.ts';
import { makeEvent } from './events.ts';
import type { JobRecord, OjsEvent } from './job-types.ts';
import { cancel } from './lifecycle.ts';
import { isTerminal, type JobState } from './states.ts';
import { toIso } from './time.ts';
import { buildWorkflow, CALLBACK_KINDS, isWorkflowBody } from './workflow-build.ts';
import { dependencyResults, stepsById } from './workflow-graph.ts';
import type {
  CallbackKind,
  WorkflowRecord,
  WorkflowStep,
  WorkflowStepState,
} from './workflow-types.ts';

type Obj = Record<string, unknown>;

function jobForStep(
  workflow: WorkflowRecord,
  spec: Obj,
  index: number | undefined,
  now: number,
  defaults: EnqueueDefaults,
  parentResults?: unknown[],
): JobRecord {
  const job = parseEnqueueRequest({ args: [], ...spec }, now, defaults);
  job.workflow_id = workflow.id;
  if (index !== undefined) job.workflow_step = index;
  if (parentResults !== undefined) job.parent_results = parentResults;
  return job;
}

/** What a member receives from the steps before it (none for the first ones). */
interface StepInput {
  list: unknown[];
  byStep?: Record<string, unknown>;
}

/** Jobs, nested workflows and events that starting members produces. */
interface Started {
  jobs: JobRecord[];
  workflows: WorkflowRecord[];
  events: OjsEvent[];
}

/**
 * Starts one step: a job, or a nested workflow (created now, with its own
 * first members started, receiving the step's input as its first jobs do).
 */
function startStep(
  workflow: WorkflowRecord,
  step: WorkflowStep,
  now: number,
  defaults: EnqueueDefaults,
  input?: StepInput,
): Started {
  step.state = 'pending';
  if (isWorkflowBody(step.spec)) {
    const child = buildWorkflow(step.spec, now, defaults, { depth: (workflow.depth ?? 1) + 1 });
    child.parent = { workflow_id: workflow.id, step: step.index };
    step.workflow_id = child.id;
    const started = startWorkflow(child, now, defaults, input);
    return { ...started, workflows: [child, ...started.workflows] };
  }
  const job = jobForStep(workflow, step.spec, step.index, now, defaults, input?.list);
  if (step.id !== undefined) job.workflow_step_id = step.id;
  if (input?.byStep !== undefined) job.parent_results_by_step = input.byStep;
  step.job_id = job.id;
  return { jobs: [job], workflows: [], events: [] };
}

/** Chains start step 0, groups and batches every job, graphs their roots. */
function startWorkflow(
  workflow: WorkflowRecord,
  now: number,
  defaults: EnqueueDefaults,
  input?: StepInput,
): Started {
  const out: Started = {
    jobs: [],
    workflows: [],
    events: [
      workflowEvent('workflow.started', workflow, { total_steps: workflow.steps.length }, now),
    ],
  };
  const first =
    workflow.type === 'chain'
      ? [workflow.steps[0]!]
      : workflow.type === 'dag'
        ? workflow.steps.filter((step) => step.depends_on!.length === 0)
        : workflow.steps;
  for (const step of first) merge(out, startStep(workflow, step, now, defaults, input));
  return out;
}

function merge(into: Started, from: Started): void {
  into.jobs.push(...from.jobs);
  into.workflows.push(...from.workflows);
  into.events.push(...from.events);
}

export interface WorkflowCreation {
  workflow: WorkflowRecord;
  /** Nested workflows started with it (their records are inserted with it). */
  workflows: WorkflowRecord[];
  jobs: JobRecord[];
  events: OjsEvent[];
}

/** Validates POST /ojs/v1/workflows and returns the records plus the jobs to enqueue now. */
export function createWorkflow(
  body: unknown,
  now: number,
  defaults: EnqueueDefaults,
): WorkflowCreation {
  const workflow = buildWorkflow(body, now, defaults);
  return { workflow, ...startWorkflow(workflow, now, defaults) };
}

function workflowEvent(type: string, workflow: WorkflowRecord, data: Obj, now: number): OjsEvent {
  return makeEvent(
    type,
    workflow.id,
    {
      workflow_id: workflow.id,
      workflow_name: workflow.name ?? null,
      workflow_type: workflow.type,
      ...data,
    },
    now,
  );
}

/**
 * What ended in a workflow: one of its jobs (a JobRecord is one), or a
 * nested workflow seen through childOutcome.
 */
export interface WorkflowMember {
  id: string;
  type: string;
  state: JobState;
  result?: unknown;
  error?: { code: string; message: string; attempt?: number };
  started_at?: string;
}

function stepStateOf(job: WorkflowMember): WorkflowStepState {
  switch (job.state) {
    case 'completed':
      return 'completed';
    case 'discarded':
      return 'failed';
    case 'cancelled':
      return 'cancelled';
    case 'active':
      return 'active';
    default:
      return 'pending';
  }
}

export interface WorkflowAdvance {
  workflow: WorkflowRecord;
  inserts: JobRecord[];
  /** Nested workflows started by this advancement (records to insert). */
  workflows: WorkflowRecord[];
  events: OjsEvent[];
}

const succeeded = (step: WorkflowStep) => step.state === 'completed';
const finished = (step: WorkflowStep) =>
  step.state === 'completed' || step.state === 'failed' || step.state === 'cancelled';

/**
 * A member of `workflow` reached a terminal state (a job as it will be
 * written, or a nested workflow's childOutcome). Returns the advanced
 * workflow, the jobs and nested workflows to start with it and the events;
 * null when the member changes nothing (e.g. workflow already finished).
 */
export function advanceWorkflow(
  workflow: WorkflowRecord,
  job: WorkflowMember,
  now: number,
  defaults: EnqueueDefaults,
): WorkflowAdvance | null {
  if (!isTerminal(job.state)) return null;
  const next: WorkflowRecord = structuredClone(workflow);
  next.rev = workflow.rev + 1;
  const inserts: JobRecord[] = [];
  const workflows: WorkflowRecord[] = [];
  const events: OjsEvent[] = [];
  const result = (): WorkflowAdvance => ({ workflow: next, inserts, workflows, events });
  const start = (step: WorkflowStep, input: StepInput) => {
    const started = startStep(next, step, now, defaults, input);
    inserts.push(...started.jobs);
    workflows.push(...started.workflows);
    events.push(...started.events);
  };
  const finish: Finish = (state, data = {}) => {
    next.state = state;
    next.completed_at = toIso(now);
    events.push(
      workflowEvent(`workflow.${state}`, next, { total_steps: next.steps.length, ...data }, now),
    );
  };

  const callbackKind = CALLBACK_KINDS.find((kind) => next.callback_jobs?.[kind] === job.id);
  if (callbackKind !== undefined) {
    // A batch finishes with the outcome of the callbacks it triggered.
    if (next.state !== 'running') return null;
    next.callback_states = { ...next.callback_states, [callbackKind]: stepStateOf(job) };
    const kinds = Object.keys(next.callback_jobs ?? {}) as CallbackKind[];
    const states = kinds.map((kind) => next.callback_states?.[kind]);
    if (
      states.every((state) => state === 'completed' || state === 'failed' || state === 'cancelled')
    ) {
      const ok = states.every((state) => state === 'completed');
      finish(ok ? 'completed' : 'failed', ok ? {} : { failed_callback: callbackKind });
    }
    return result();
  }

  const step = next.steps.find((s) => s.job_id === job.id || s.workflow_id === job.id);
  if (step === undefined) return null;
  step.state = stepStateOf(job);
  if (job.state === 'completed') step.result = job.result ?? null;
  else if (job.error !== undefined) {
    step.error = { code: job.error.code, message: job.error.message, attempt: job.error.attempt };
  }
  if (next.type === 'dag') step.finished_at = toIso(now);
  if (next.state !== 'running') return result();

  if (next.type === 'dag') {
    advanceGraph(next, step, job, { now, events, finish, start });
    return result();
  }

  if (next.type === 'chain') {
    if (step.state !== 'completed') {
      for (const later of next.steps.slice(step.index + 1)) later.state = 'cancelled';
      finish('failed', {
        failed_step_id: job.id,
        failed_step_type: job.type,
        failed_step_index: step.index,
        error: step.error ?? { code: job.state, message: `Step ${step.index} was ${job.state}.` },
      });
    } else if (step.index + 1 < next.steps.length) {
      start(next.steps[step.index + 1]!, { list: [step.result] });
      events.push(
        workflowEvent(
          'workflow.step_completed',
          next,
          {
            step_id: job.id,
            step_type: job.type,
            steps_remaining: next.steps.length - step.index - 1,
          },
          now,
        ),
      );
    } else {
      finish('completed');
    }
    return result();
  }

  if (!next.steps.every(finished)) return result();
  const allSucceeded = next.steps.every(succeeded);
  if (next.type === 'batch' && next.callbacks !== undefined) {
    const results = next.steps.map((s) =>
      s.state === 'completed' ? s.result : { error: s.error ?? null },
    );
    // Callbacks fire once: a member job ending again later (dead letter retry) changes nothing.
    if (next.callback_jobs !== undefined) return result();
    const fire = CALLBACK_KINDS.filter(
      (kind) =>
        next.callbacks![kind] !== undefined &&
        (kind === 'on_complete' || (kind === 'on_success') === allSucceeded),
    );
    next.callback_jobs = {};
    for (const kind of fire) {
      const callback = jobForStep(next, next.callbacks[kind]!, undefined, now, defaults, results);
      callback.workflow_callback = kind;
      next.callback_jobs[kind] = callback.id;
      inserts.push(callback);
      events.push(
        workflowEvent(
          'workflow.callback_fired',
          next,
          { callback: kind, job_id: callback.id },
          now,
        ),
      );
    }
    if (fire.length > 0) return result();
  }
  finish(allSucceeded ? 'completed' : 'failed');
  return result();
}

type Finish = (state: 'completed' | 'failed', data?: Obj) => void;

interface AdvanceContext {
  now: number;
  events: OjsEvent[];
  finish: Finish;
  start: (step: WorkflowStep, input: StepInput) => void;
}

/** Milliseconds from the member's start (a job's latest attempt) to `now`. */
function durationOf(job: WorkflowMember, now: number): number {
  return job.started_at === undefined ? 0 : Math.max(0, now - Date.parse(job.started_at));
}

/**
 * A step of a running graph workflow ended. Completed: every waiting step
 * whose dependencies have now all completed is enqueued with their results;
 * the workflow completes with its last step. Failed for good (discarded,
 * also by expiry) or cancelled: the workflow fails at once, as a chain
 * does; steps not yet enqueued are cancelled (they can no longer run), and
 * steps already enqueued on other branches run to their end, their outcome
 * recorded on the failed workflow.
 */
function advanceGraph(
  workflow: WorkflowRecord,
  step: WorkflowStep,
  job: WorkflowMember,
  context: AdvanceContext,
): void {
  const { now, events, finish, start } = context;
  const stepData = { step_id: step.id, step_type: job.type, job_id: job.id };
  if (step.state !== 'completed') {
    const error = step.error ?? {
      code: job.state,
      message: `Step '${step.id}' was ${job.state}.`,
    };
    events.push(workflowEvent('workflow.step_failed', workflow, { ...stepData, error }, now));
    const cancelled: string[] = [];
    for (const other of workflow.steps) {
      if (other.state !== 'waiting') continue;
      other.state = 'cancelled';
      cancelled.push(other.id!);
    }
    finish('failed', {
      failed_step_id: step.id,
      failed_step_type: job.type,
      failed_job_id: job.id,
      error,
      cancelled_steps: cancelled,
      duration_ms: now - Date.parse(workflow.created_at),
    });
    return;
  }
  const remaining = workflow.steps.filter((s) => s.state !== 'completed').length;
  events.push(
    workflowEvent(
      'workflow.step_completed',
      workflow,
      { ...stepData, duration_ms: durationOf(job, now), steps_remaining: remaining },
      now,
    ),
  );
  if (remaining === 0) {
    finish('completed', { duration_ms: now - Date.parse(workflow.created_at) });
    return;
  }
  const byId = stepsById(workflow);
  for (const candidate of workflow.steps) {
    if (candidate.state !== 'waiting' || !candidate.depends_on!.includes(step.id!)) continue;
    if (!candidate.depends_on!.every((dep) => byId.get(dep)!.state === 'completed')) continue;
    start(candidate, dependencyResults(candidate, byId));
  }
}

/** Cancels a running workflow: waiting steps cancelled, and the non-terminal jobs to cancel. */
export function cancelWorkflow(
  workflow: WorkflowRecord,
  jobs: JobRecord[],
  now: number,
): { workflow: WorkflowRecord; jobs: JobRecord[]; events: OjsEvent[] } {
  if (workflow.state !== 'running') {
    throw new OjsError(
      'conflict',
      `Workflow '${workflow.id}' is ${workflow.state} and cannot be cancelled.`,
      {
        workflow_id: workflow.id,
        current_state: workflow.state,
      },
    );
  }
  const next: WorkflowRecord = structuredClone(workflow);
  next.rev = workflow.rev + 1;
  next.state = 'cancelled';
  next.cancelled_at = toIso(now);
  const cancelled = jobs.filter((job) => !isTerminal(job.state)).map((job) => cancel(job, now));
  const cancelledIds = new Set(cancelled.map((job) => job.id));
  for (const step of next.steps) {
    if (
      step.state === 'waiting' ||
      (step.job_id !== undefined && cancelledIds.has(step.job_id)) ||
      // A running nested workflow is cancelled with it (the engine cancels its record).
      (step.workflow_id !== undefined && step.state === 'pending')
    ) {
      step.state = 'cancelled';
    }
  }
  return {
    workflow: next,
    jobs: cancelled,
    events: [workflowEvent('workflow.cancelled', next, {}, now)],
  };
}

/**
 * A nested workflow that ended, as the member its parent's step sees: its
 * result (chain: its last step's; group and batch: by job index; graph: by
 * step id) or the error of its first failed step.
 */
export function childOutcome(child: WorkflowRecord): WorkflowMember {
  const state: JobState =
    child.state === 'completed'
      ? 'completed'
      : child.state === 'cancelled'
        ? 'cancelled'
        : child.state === 'failed'
          ? 'discarded'
          : 'active';
  const outcome: WorkflowMember = { id: child.id, type: child.type, state };
  if (child.started_at !== undefined) outcome.started_at = child.started_at;
  if (state === 'completed') {
    outcome.result =
      child.type === 'chain'
        ? (child.steps[child.steps.length - 1]!.result ?? null)
        : Object.fromEntries(
            child.steps.map((step) => [step.id ?? String(step.index), step.result ?? null]),
          );
  } else {
    const failed = child.steps.find((step) => step.error !== undefined);
    outcome.error = failed?.error ?? {
      code: `workflow_${child.state}`,
      message: `Nested workflow '${child.id}' ${child.state}.`,
    };
  }
  return outcome;
}
