/**
 * The types the rest of core is built on: the job as the server keeps it
 * (JobRecord, with its policies, errors and progress) and the event
 * (OjsEvent). Types only, importing nothing but other leaves, so every
 * module can use them and dependencies point one way (decision 0092).
 * The record uses the wire's field names so `toWire` (job.ts) is a
 * projection, not a translation; fields that only drive scheduling are
 * plain numbers (epoch ms).
 */
import type { RetryPolicy } from './retry.ts';
import type { JobState } from './states.ts';

/** One entry of `errors[]`; `error` is the latest entry (core §8, ER §6.1). */
export interface JobError {
  code: string;
  type: string;
  message: string;
  retryable?: boolean;
  details?: Record<string, unknown>;
  backtrace?: string[];
  attempt: number;
  occurred_at: string;
}

export interface UniquePolicy {
  keys: string[];
  args_keys?: string[];
  meta_keys?: string[];
  period_ms?: number;
  period?: string;
  states: JobState[];
  on_conflict: 'reject' | 'ignore' | 'replace' | 'replace_except_schedule';
}

/**
 * Job-level rate limit (features §7), normalised: `key` partitions the limit
 * (default: the job's queue), `concurrency` caps active jobs with the key,
 * `rate` caps starts per fixed window. `{max_per_second: N}` (suite) becomes
 * rate {limit: N, period_ms: 1000}.
 */
export interface RateLimitPolicy {
  key: string;
  concurrency?: number;
  rate?: { limit: number; period_ms: number };
  max_per_second?: number;
}

export interface JobRecord {
  id: string;
  type: string;
  queue: string;
  args: unknown[];
  meta: Record<string, unknown>;
  state: JobState;
  priority: number;
  /** Number of times the job has been claimed; 0 until the first fetch. */
  attempt: number;
  retry: RetryPolicy;
  timeout_ms?: number;
  visibility_timeout_ms: number;
  tags?: string[];
  schema?: string;
  created_at: string;
  enqueued_at: string;
  scheduled_at?: string;
  expires_at?: string;
  started_at?: string;
  completed_at?: string;
  cancelled_at?: string;
  discarded_at?: string;
  result?: unknown;
  error?: JobError;
  errors: JobError[];
  worker_id?: string;
  /** Backoff that preceded the current attempt (suite reads it on fetched jobs). */
  retry_delay_ms?: number;
  next_attempt_at?: string;
  parent_results?: unknown[];
  /** Graph workflows: the results of the step's dependencies keyed by step id. */
  parent_results_by_step?: Record<string, unknown>;
  workflow_id?: string;
  workflow_step?: number;
  /** Graph workflows: the id of the step this job runs. */
  workflow_step_id?: string;
  /** Set on batch callback jobs: which callback this job is. */
  workflow_callback?: string;
  unique?: UniquePolicy;
  unique_key?: string;
  rate_limit?: RateLimitPolicy;
  /** Discarded into the dead letter queue (on_exhaustion dead_letter). */
  dead_letter?: boolean;
  /** Unknown top-level envelope fields, preserved and echoed (JF §9.2). */
  extensions: Record<string, unknown>;
  /** Due time (ms) while scheduled or retryable. */
  run_at?: number;
  /** Visibility deadline (ms) while active. */
  lease_until?: number;
  /** Execution deadline (ms) while active, from timeout_ms. */
  timeout_at?: number;
  /** expires_at in ms. */
  expires_at_ms?: number;
  /**
   * Canary routing (seed 004 §10): the version this job was routed to by
   * weighted rules, chosen deterministically at enqueue and recorded.
   */
  routed_version?: string;
  /** Comparable number of the version the job routes by (routed_version ?? version). */
  version_num?: number;
  /** The latest progress report of an attempt (progress.ts). */
  progress?: JobProgress;
  /** Set when an active job was cancelled, so its worker's BEAT learns it. */
  cancel_requested?: boolean;
  /** Monotonic enqueue order assigned by the store (FIFO within a priority). */
  seq?: number;
  /** Incremented on every write: part of the guard of the next write. */
  rev: number;
}

/** The latest progress report of an attempt (progress.ts). */
export interface JobProgress {
  value: number | null;
  message?: string;
  data?: Record<string, unknown>;
  updated_at: string;
  attempt: number;
}

/** An event (CloudEvents 1.0 shape) as the store keeps and the event APIs return it. */
export interface OjsEvent {
  specversion: '1.0';
  id: string;
  type: string;
  source: string;
  time: string;
  subject?: string;
  datacontenttype?: string;
  data: Record<string, unknown>;
}
