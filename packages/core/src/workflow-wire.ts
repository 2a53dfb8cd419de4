/**
 * The wire form of a workflow. Chain, group and batch answer the OA/suite
 * shape (type, counters, steps by index); the graph form answers the
 * http-binding §4.15 shape (steps by id with depends_on, no type).
 */
import type { JobRecord } from './job-types.ts';
import type { WorkflowRecord, WorkflowStep } from './workflow-types.ts';

type Obj = Record<string, unknown>;

const succeeded = (step: WorkflowStep) => step.state === 'completed';

/**
 * `jobs` (the workflow's jobs, when the caller read them) refine the step
 * states the record keeps: the record changes only when a step's job ends,
 * so a step whose job is running is `active` with its `started_at` only here.
 */
export function workflowToWire(workflow: WorkflowRecord, jobs?: readonly JobRecord[]): Obj {
  if (workflow.type === 'dag') return graphToWire(workflow, jobs);
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
    if (s.workflow_id !== undefined) step.workflow_id = s.workflow_id;
    if (s.result !== undefined) step.result = s.result;
    if (s.error !== undefined) step.error = s.error;
    return step;
  });
  if (workflow.callbacks !== undefined) out.callbacks = workflow.callbacks;
  if (workflow.callback_jobs !== undefined) out.callback_jobs = workflow.callback_jobs;
  addTimes(out, workflow);
  out.metadata = metadata(workflow, completed, failed);
  return out;
}

function graphToWire(workflow: WorkflowRecord, jobs?: readonly JobRecord[]): Obj {
  const jobsById = new Map((jobs ?? []).map((job) => [job.id, job]));
  const completed = workflow.steps.filter(succeeded).length;
  const failed = workflow.steps.filter((s) => s.state === 'failed').length;
  const out: Obj = { id: workflow.id };
  if (workflow.name !== undefined) out.name = workflow.name;
  out.state = workflow.state;
  out.created_at = workflow.created_at;
  out.steps_total = workflow.steps.length;
  out.steps_completed = completed;
  out.steps_failed = failed;
  if (workflow.state === 'cancelled') {
    out.steps_cancelled = workflow.steps.filter((s) => s.state === 'cancelled').length;
    out.steps_already_completed = completed;
  }
  out.steps = workflow.steps.map((s) => {
    const job = s.job_id === undefined ? undefined : jobsById.get(s.job_id);
    const step: Obj = {
      id: s.id,
      type: s.spec.type,
      state: s.state === 'pending' && job?.state === 'active' ? 'active' : s.state,
      job_id: s.job_id ?? null,
      depends_on: s.depends_on ?? [],
    };
    if (s.workflow_id !== undefined) step.workflow_id = s.workflow_id;
    if (job?.started_at !== undefined) step.started_at = job.started_at;
    if (s.finished_at !== undefined) step.completed_at = s.finished_at;
    if (s.result !== undefined) step.result = s.result;
    if (s.error !== undefined) step.error = s.error;
    return step;
  });
  addTimes(out, workflow);
  out.metadata = metadata(workflow, completed, failed);
  return out;
}

/** Timestamps, and the parent of a nested workflow. */
function addTimes(out: Obj, workflow: WorkflowRecord): void {
  if (workflow.parent !== undefined) {
    out.parent_workflow_id = workflow.parent.workflow_id;
    out.parent_step = workflow.parent.step;
  }
  for (const key of ['started_at', 'completed_at', 'cancelled_at'] as const) {
    if (workflow[key] !== undefined) out[key] = workflow[key];
  }
}

function metadata(workflow: WorkflowRecord, completed: number, failed: number): Obj {
  return {
    created_at: workflow.created_at,
    started_at: workflow.started_at,
    completed_at: workflow.completed_at,
    job_count: workflow.steps.length,
    completed_count: completed,
    failed_count: failed,
  };
}
