/**
 * Records of the orchestration features the store persists: workflows
 * (chain, group, batch) and cron registrations. Decisions about them live in
 * workflow.ts and cron.ts; stores only keep and guard these records.
 */

export type WorkflowType = 'chain' | 'group' | 'batch';
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
  /** The enqueue request of this step/job, validated at creation. */
  spec: Record<string, unknown>;
  state: WorkflowStepState;
  job_id?: string;
  result?: unknown;
  error?: { code: string; message: string; attempt?: number };
}

export interface WorkflowRecord {
  id: string;
  type: WorkflowType;
  name?: string;
  state: WorkflowState;
  steps: WorkflowStep[];
  callbacks?: Partial<Record<CallbackKind, Record<string, unknown>>>;
  /** Callback kind -> job id, set once when the callback is enqueued. */
  callback_jobs?: Partial<Record<CallbackKind, string>>;
  /** Callback kind -> state of its job once terminal. */
  callback_states?: Partial<Record<CallbackKind, WorkflowStepState>>;
  created_at: string;
  started_at?: string;
  completed_at?: string;
  cancelled_at?: string;
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
