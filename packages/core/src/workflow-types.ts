/**
 * Records of the orchestration features the store persists: workflows
 * (chain, group, batch, and the graph form `dag`) and cron registrations. Decisions about them live in
 * workflow.ts and cron.ts; stores only keep and guard these records.
 */

/**
 * `dag` is the graph form of http-binding §4.15 and grpc-proto (steps with
 * ids and depends_on); a request of that form carries no type.
 */
export type WorkflowType = 'chain' | 'group' | 'batch' | 'dag';
export type WorkflowState = 'running' | 'completed' | 'failed' | 'cancelled';
export type WorkflowStepState =
  | 'waiting'
  | 'pending'
  | 'active'
  | 'completed'
  | 'failed'
  | 'cancelled';
export type CallbackKind = 'on_complete' | 'on_success' | 'on_failure';

export interface WorkflowStep {
  index: number;
  /** Graph form only: the step id the client chose, and the ids it waits for. */
  id?: string;
  depends_on?: string[];
  /** The enqueue request of this step/job, validated at creation. */
  spec: Record<string, unknown>;
  state: WorkflowStepState;
  job_id?: string;
  result?: unknown;
  error?: { code: string; message: string; attempt?: number };
  /** Graph form only: when the step's job reached its terminal state. */
  finished_at?: string;
  /** A step that is itself a workflow: the nested workflow's id once started. */
  workflow_id?: string;
}

export interface WorkflowRecord {
  id: string;
  type: WorkflowType;
  name?: string;
  state: WorkflowState;
  steps: WorkflowStep[];
  /** Nested workflows: level (absent = 1) and the step of the parent it runs. */
  depth?: number;
  parent?: { workflow_id: string; step: number };
  callbacks?: Partial<Record<CallbackKind, Record<string, unknown>>>;
  /** Callback kind -> job id, set once when the callback is enqueued. */
  callback_jobs?: Partial<Record<CallbackKind, string>>;
  /** Callback kind -> state of its job once terminal. */
  callback_states?: Partial<Record<CallbackKind, WorkflowStepState>>;
  created_at: string;
  started_at?: string;
  completed_at?: string;
  cancelled_at?: string;
  /** The tenant it was created for (ext-multi-tenancy); absent: its jobs' (workflow-tenancy.ts). */
  tenant_id?: string;
  rev: number;
}

export type OverlapPolicy = 'skip' | 'allow' | 'cancel_previous' | 'enqueue';

export interface CronRecord {
  name: string;
  expression: string;
  timezone: string;
  overlap_policy: OverlapPolicy;
  enabled: boolean;
  description?: string;
  /** The enqueue request each firing submits (type, args, meta, options). */
  job_template: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  /** Next fire time, ISO and ms; absent when disabled. */
  next_run_at?: string;
  next_run_ms?: number;
  last_run_at?: string;
  last_job_id?: string;
  run_count: number;
  rev: number;
}
