/**
 * Workflows (features §3): chain, group and batch. Pure decisions only:
 * creating a workflow from a request, and advancing it when one of its jobs
 * reaches a terminal state. The engine commits the advanced record, the jobs
 * it enqueues and the job transition that triggered it in one atomic commit.
 */

import { type EnqueueDefaults, parseEnqueueRequest } from './envelope.ts';
import { invalidRequest, OjsError } from './errors.ts';
import { makeEvent } from './events.ts';
import type { JobRecord } from './job.ts';
import { cancel } from './lifecycle.ts';
import { isTerminal } from './states.ts';
import type { OjsEvent } from './store.ts';
import { toIso } from './time.ts';
import { uuidv7 } from './uuid.ts';
import type {
  CallbackKind,
  WorkflowRecord,
  WorkflowStep,
  WorkflowStepState,
  WorkflowType,
} from './workflow-types.ts';

type Obj = Record<string, unknown>;

const TYPES: readonly WorkflowType[] = ['chain', 'group', 'batch'];
const CALLBACK_KINDS: readonly CallbackKind[] = ['on_complete', 'on_success', 'on_failure'];
/** Steps per workflow; each step is one job. */
export const MAX_WORKFLOW_STEPS = 10_000;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function invalidWorkflow(message: string, path: string): OjsError {
  return invalidRequest(message, { validation_errors: [{ path, message }] });
}

/** Validates a step/job spec by building the job it describes (errors name the path). */
function validateSpec(
  spec: unknown,
  path: string,
  now: number,
  defaults: EnqueueDefaults,
): JobRecord {
  if (!isObject(spec))
    throw invalidWorkflow(`${path} must be a job object with type and args.`, path);
  if (spec.type === 'chain' || spec.type === 'group' || spec.type === 'batch') {
    throw invalidWorkflow(`${path}: nested workflows are not supported (maximum depth 1).`, path);
  }
  try {
    return parseEnqueueRequest({ args: [], ...spec }, now, defaults);
  } catch (error) {
    // Any invalid step makes the workflow invalid: 400 with the step's path (features §3.8).
    if (error instanceof OjsError) {
      const message = `${path}: ${error.message}`;
      throw invalidRequest(message, {
        ...error.details,
        path,
        step_error_code: error.code,
        validation_errors: [{ path, message: error.message }],
      });
    }
    throw error;
  }
}

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

export interface WorkflowCreation {
  workflow: WorkflowRecord;
  jobs: JobRecord[];
  events: OjsEvent[];
}

/** Validates POST /ojs/v1/workflows and returns the record plus the jobs to enqueue now. */
export function createWorkflow(
  body: unknown,
  now: number,
  defaults: EnqueueDefaults,
): WorkflowCreation {
  if (!isObject(body)) throw invalidWorkflow('The workflow must be a JSON object.', '$');
  const type = body.type;
  if (typeof type !== 'string' || !TYPES.includes(type as WorkflowType)) {
    throw invalidWorkflow('type must be one of chain, group, batch.', 'type');
  }
  // Chains list `steps`, groups and batches `jobs`; the other name is accepted as an alias.
  const primary = type === 'chain' ? 'steps' : 'jobs';
  const alias = type === 'chain' ? 'jobs' : 'steps';
  const listName = body[primary] === undefined && body[alias] !== undefined ? alias : primary;
  const list = body[listName];
  if (!Array.isArray(list) || list.length === 0) {
    throw invalidWorkflow(`${listName} must be a non-empty array of jobs.`, listName);
  }
  if (list.length > MAX_WORKFLOW_STEPS) {
    throw invalidWorkflow(`A workflow may hold at most ${MAX_WORKFLOW_STEPS} jobs.`, listName);
  }
  if (body.name !== undefined && typeof body.name !== 'string') {
    throw invalidWorkflow('name must be a string.', 'name');
  }
  for (const [index, spec] of list.entries()) {
    validateSpec(spec, `${listName}[${index}]`, now, defaults);
  }

  let callbacks: WorkflowRecord['callbacks'];
  if (body.callbacks !== undefined || type === 'batch') {
    if (!isObject(body.callbacks)) {
      throw invalidWorkflow(
        'A batch needs callbacks with on_complete, on_success or on_failure.',
        'callbacks',
      );
    }
    callbacks = {};
    for (const kind of CALLBACK_KINDS) {
      const spec = body.callbacks[kind];
      if (spec === undefined || spec === null) continue;
      validateSpec(spec, `callbacks.${kind}`, now, defaults);
      callbacks[kind] = spec as Obj;
    }
    if (Object.keys(callbacks).length === 0) {
      throw invalidWorkflow(
        'callbacks must define at least one of on_complete, on_success, on_failure.',
        'callbacks',
      );
    }
  }

  const workflow: WorkflowRecord = {
    id: uuidv7(now),
    type: type as WorkflowType,
    state: 'running',
    steps: list.map(
      (spec, index): WorkflowStep => ({ index, spec: spec as Obj, state: 'waiting' }),
    ),
    created_at: toIso(now),
    started_at: toIso(now),
    rev: 0,
  };
  if (typeof body.name === 'string') workflow.name = body.name;
  if (callbacks !== undefined) workflow.callbacks = callbacks;

  // Chains enqueue step 0 only; groups and batches enqueue every job at once.
  const initial = workflow.type === 'chain' ? [workflow.steps[0]!] : workflow.steps;
  const jobs = initial.map((step) => {
    const job = jobForStep(workflow, step.spec, step.index, now, defaults);
    step.state = 'pending';
    step.job_id = job.id;
    return job;
  });
  const events = [
    workflowEvent('workflow.started', workflow, { total_steps: workflow.steps.length }, now),
  ];
  return { workflow, jobs, events };
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

function stepStateOf(job: JobRecord): WorkflowStepState {
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
  events: OjsEvent[];
}

const succeeded = (step: WorkflowStep) => step.state === 'completed';
const finished = (step: WorkflowStep) =>
  step.state === 'completed' || step.state === 'failed' || step.state === 'cancelled';

/**
 * A job of `workflow` reached a terminal state (`job` is the job as it will
 * be written). Returns the advanced workflow, the jobs to enqueue with it
 * and the events; null when the job changes nothing (e.g. workflow already
 * finished).
 */
export function advanceWorkflow(
  workflow: WorkflowRecord,
  job: JobRecord,
  now: number,
  defaults: EnqueueDefaults,
): WorkflowAdvance | null {
  if (!isTerminal(job.state)) return null;
  const next: WorkflowRecord = structuredClone(workflow);
  next.rev = workflow.rev + 1;
  const inserts: JobRecord[] = [];
  const events: OjsEvent[] = [];
  const finish = (state: 'completed' | 'failed', data: Obj = {}) => {
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
    return { workflow: next, inserts, events };
  }

  const step = next.steps.find((s) => s.job_id === job.id);
  if (step === undefined) return null;
  step.state = stepStateOf(job);
  if (job.state === 'completed') step.result = job.result ?? null;
  else if (job.error !== undefined) {
    step.error = { code: job.error.code, message: job.error.message, attempt: job.error.attempt };
  }
  if (next.state !== 'running') return { workflow: next, inserts, events };

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
      const following = next.steps[step.index + 1]!;
      const nextJob = jobForStep(next, following.spec, following.index, now, defaults, [
        step.result,
      ]);
      following.state = 'pending';
      following.job_id = nextJob.id;
      inserts.push(nextJob);
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
    return { workflow: next, inserts, events };
  }

  if (!next.steps.every(finished)) return { workflow: next, inserts, events };
  const allSucceeded = next.steps.every(succeeded);
  if (next.type === 'batch' && next.callbacks !== undefined) {
    const results = next.steps.map((s) =>
      s.state === 'completed' ? s.result : { error: s.error ?? null },
    );
    // Callbacks fire once: a member job ending again later (dead letter retry) changes nothing.
    if (next.callback_jobs !== undefined) return { workflow: next, inserts, events };
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
    if (fire.length > 0) return { workflow: next, inserts, events };
  }
  finish(allSucceeded ? 'completed' : 'failed');
  return { workflow: next, inserts, events };
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
    if (step.state === 'waiting' || (step.job_id !== undefined && cancelledIds.has(step.job_id))) {
      step.state = 'cancelled';
    }
  }
  return {
    workflow: next,
    jobs: cancelled,
    events: [workflowEvent('workflow.cancelled', next, {}, now)],
  };
}

/** The wire form: OA/suite counters plus per-step states. */
export function workflowToWire(workflow: WorkflowRecord): Obj {
  const completed = workflow.steps.filter(succeeded).length;
  const failed = workflow.steps.filter((s) => s.state === 'failed').length;
  const out: Obj = {
    id: workflow.id,
    type: workflow.type,
    state: workflow.state,
    created_at: workflow.created_at,
  };
  if (workflow.name !== undefined) out.name = workflow.name;
  if (workflow.type === 'chain') {
    out.steps_total = workflow.steps.length;
    out.steps_completed = completed;
  } else {
    out.jobs_total = workflow.steps.length;
    out.jobs_completed = completed;
  }
  out.jobs_failed = failed;
  out.steps = workflow.steps.map((s) => {
    const step: Obj = {
      index: s.index,
      type: s.spec.type,
      state: s.state,
      job_id: s.job_id ?? null,
    };
    if (s.result !== undefined) step.result = s.result;
    if (s.error !== undefined) step.error = s.error;
    return step;
  });
  if (workflow.callbacks !== undefined) out.callbacks = workflow.callbacks;
  if (workflow.callback_jobs !== undefined) out.callback_jobs = workflow.callback_jobs;
  for (const key of ['started_at', 'completed_at', 'cancelled_at'] as const) {
    if (workflow[key] !== undefined) out[key] = workflow[key];
  }
  out.metadata = {
    created_at: workflow.created_at,
    started_at: workflow.started_at,
    completed_at: workflow.completed_at,
    job_count: workflow.steps.length,
    completed_count: completed,
    failed_count: failed,
  };
  return out;
}
