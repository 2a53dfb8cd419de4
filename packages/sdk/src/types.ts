/**
 * Public types. Jobs, workflows, cron entries and queue statistics are the
 * server's wire objects (snake_case, http-binding digest §5) so nothing is
 * lost in translation; the options a caller writes are camelCase and are
 * converted to the wire by the client.
 */

import type { OjsError } from './errors.ts';

export type JobState =
  | 'scheduled'
  | 'available'
  | 'pending'
  | 'active'
  | 'completed'
  | 'retryable'
  | 'cancelled'
  | 'discarded';

export const TERMINAL_STATES: readonly JobState[] = ['completed', 'cancelled', 'discarded'];

/** A job-level error (core §8, ER §6.1). */
export interface JobErrorInfo {
  code?: string;
  type?: string;
  message: string;
  retryable?: boolean;
  details?: Record<string, unknown>;
  backtrace?: string[];
  attempt?: number;
  occurred_at?: string;
}

/** Retry policy as sent on the wire (ISO 8601 durations). */
export interface WireRetryPolicy {
  max_attempts?: number;
  initial_interval?: string;
  backoff_coefficient?: number;
  max_interval?: string;
  jitter?: boolean;
  non_retryable_errors?: string[];
  on_exhaustion?: 'discard' | 'dead_letter';
  backoff_type?: string;
  [key: string]: unknown;
}

export interface WireUniquePolicy {
  keys?: string[];
  period?: string;
  on_conflict?: string;
  states?: JobState[];
  [key: string]: unknown;
}

/** A job as the server returns it. */
export interface Job<Args extends unknown[] = unknown[]> {
  specversion?: string;
  id: string;
  type: string;
  queue: string;
  args: Args;
  meta: Record<string, unknown>;
  state: JobState;
  priority?: number;
  /** 0 before the first fetch, 1 on the first execution. */
  attempt: number;
  max_attempts?: number;
  timeout_ms?: number;
  visibility_timeout_ms?: number;
  created_at?: string;
  enqueued_at?: string;
  started_at?: string;
  completed_at?: string;
  cancelled_at?: string;
  discarded_at?: string;
  scheduled_at?: string;
  expires_at?: string;
  result?: unknown;
  error?: JobErrorInfo;
  errors?: JobErrorInfo[];
  tags?: string[];
  retry?: WireRetryPolicy;
  unique?: WireUniquePolicy;
  worker_id?: string;
  retry_delay_ms?: number;
  next_attempt_at?: string;
  parent_results?: unknown;
  /** Graph workflows: the results of the step's dependencies by step id. */
  parent_results_by_step?: Record<string, unknown>;
  workflow_id?: string;
  /** Graph workflows: the id of the step this job runs. */
  workflow_step_id?: string;
  [key: string]: unknown;
}

/**
 * The envelope the enqueue middleware chain sees and may modify (everything
 * but `id`, ojs-middleware §3). Unknown keys are sent as top-level extension
 * fields, which a conforming server preserves.
 */
export interface JobEnvelope {
  specversion: '1.0';
  id: string;
  type: string;
  queue: string;
  args: unknown[];
  meta: Record<string, unknown>;
  priority?: number;
  timeout_ms?: number;
  visibility_timeout_ms?: number;
  scheduled_at?: string;
  expires_at?: string;
  retry?: WireRetryPolicy;
  unique?: WireUniquePolicy;
  tags?: string[];
  schema?: string;
  pending?: boolean;
  rate_limit?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Durations: milliseconds (number) or an ISO 8601 duration (`"PT1S"`). */
export type Duration = number | string;

/** Retry policy (ojs-retry), camelCase; converted to the wire's snake_case and ISO durations. */
export interface RetryPolicy {
  /** Total runs including the first; 1 means no retry. */
  maxAttempts?: number;
  initialInterval?: Duration;
  backoffCoefficient?: number;
  maxInterval?: Duration;
  jitter?: boolean;
  /** Error types (exact, or `prefix.*`) that discard instead of retrying. */
  nonRetryableErrors?: string[];
  onExhaustion?: 'discard' | 'dead_letter';
  backoffType?: 'exponential' | 'linear' | 'constant' | 'polynomial' | 'none';
}

/** Unique policy (features §2). */
export interface UniquePolicy {
  keys?: Array<'type' | 'queue' | 'args' | 'meta'>;
  period?: Duration;
  onConflict?: 'reject' | 'ignore' | 'use_existing' | 'replace';
  states?: JobState[];
}

export interface EnqueueOptions {
  /** Job id; a UUIDv7 is generated when absent (what makes retried enqueues idempotent). */
  id?: string;
  queue?: string;
  /** -100..100, higher runs first. */
  priority?: number;
  /** Execution timeout. */
  timeoutMs?: number;
  /** Lease length of a fetched job. */
  visibilityTimeoutMs?: number;
  /** Run at (or after) this time. */
  scheduledAt?: Date | string;
  /** Run after this delay (alternative to `scheduledAt`). */
  delayMs?: number;
  /** Discard if not started by then. */
  expiresAt?: Date | string;
  retry?: RetryPolicy;
  unique?: UniquePolicy;
  tags?: string[];
  meta?: Record<string, unknown>;
  /** Args schema URI. */
  schema?: string;
  /** Enqueue in `pending`; `activate(id)` makes it available. */
  pending?: boolean;
  /** Job-level rate limit, sent as `options.rate_limit` (L4 servers). */
  rateLimit?: Record<string, unknown>;
  /** Extra top-level envelope fields (preserved by conforming servers). */
  extensions?: Record<string, unknown>;
  /**
   * Args schema version of this job (job-versioning extension): "2.0" or an
   * integer. Workers whose declared range excludes it never receive it.
   */
  version?: string | number;
  signal?: AbortSignal;
}

/** One entry of `enqueueBatch`. */
export interface BatchEntry {
  type: string;
  args?: unknown[];
  options?: Omit<EnqueueOptions, 'signal'>;
}

// ---------------------------------------------------------------- workflows

/** A job inside a workflow: type, args and normal enqueue options. */
export interface WorkflowJobSpec {
  type: string;
  args?: unknown[];
  name?: string;
  options?: Omit<EnqueueOptions, 'signal' | 'id'>;
}

export type WorkflowType = 'chain' | 'group' | 'batch';

export interface WorkflowCallbacks {
  onSuccess?: WorkflowJobSpec;
  onFailure?: WorkflowJobSpec;
  onComplete?: WorkflowJobSpec;
}

/** A workflow definition; a step/job may itself be a workflow (nesting, features §3.7). */
export interface WorkflowDefinition {
  type: WorkflowType;
  name?: string;
  /** chain */
  steps?: Array<WorkflowJobSpec | WorkflowDefinition>;
  /** group / batch */
  jobs?: Array<WorkflowJobSpec | WorkflowDefinition>;
  callbacks?: WorkflowCallbacks;
}

export type WorkflowState = 'running' | 'completed' | 'failed' | 'cancelled';
export type WorkflowStepState =
  | 'waiting'
  | 'pending'
  | 'active'
  | 'completed'
  | 'failed'
  | 'cancelled';

/** A step as GET /workflows/:id reports it: `id` and `depends_on` for graphs, `index` otherwise. */
export interface WorkflowStepStatus {
  id?: string;
  index?: number;
  type: string;
  state: WorkflowStepState;
  job_id: string | null;
  depends_on?: string[];
  /** A step that is a nested workflow: that workflow's id, once started. */
  workflow_id?: string;
  started_at?: string;
  completed_at?: string;
  result?: unknown;
  error?: { code: string; message: string; attempt?: number };
}

export interface Workflow {
  id: string;
  /** chain, group or batch; absent for a graph workflow. */
  type?: WorkflowType;
  name?: string;
  state: WorkflowState | (string & {});
  steps?: WorkflowStepStatus[];
  steps_total?: number;
  steps_completed?: number;
  jobs_total?: number;
  jobs_completed?: number;
  created_at?: string;
  completed_at?: string;
  [key: string]: unknown;
}

// ---------------------------------------------------------------- cron

export type OverlapPolicy = 'skip' | 'allow' | 'cancel_previous' | 'enqueue' | 'cancel';

export interface CronRegistration {
  /** Unique name, `[a-z0-9][a-z0-9.-]*`. */
  name: string;
  /** 5- or 6-field cron expression, or `@daily`-style special. */
  expression: string;
  timezone?: string;
  overlapPolicy?: OverlapPolicy;
  enabled?: boolean;
  description?: string;
  /** The job each firing enqueues. */
  job: WorkflowJobSpec;
}

export interface CronJob {
  name: string;
  expression: string;
  timezone?: string;
  overlap_policy?: string;
  enabled?: boolean;
  job_template?: { type: string; args?: unknown[]; options?: Record<string, unknown> };
  next_run_at?: string | null;
  last_run_at?: string | null;
  created_at?: string;
  [key: string]: unknown;
}

// ---------------------------------------------------------------- queues, dead letter, events

export interface QueueInfo {
  name: string;
  status?: 'active' | 'paused';
  paused?: boolean;
  [key: string]: unknown;
}

export interface QueueStats {
  name: string;
  paused: boolean;
  available?: number;
  active?: number;
  scheduled?: number;
  retryable?: number;
  pending?: number;
  completed?: number;
  discarded?: number;
  cancelled?: number;
  /** The full response, whatever shape the server used. */
  raw: Record<string, unknown>;
}

/**
 * The job states a QueueStats counts, in its field order: work waiting or
 * running first, then the terminal states. The CLI's count tables show
 * them in this order.
 */
export const QUEUE_COUNT_STATES: readonly JobState[] = [
  'available',
  'active',
  'scheduled',
  'retryable',
  'pending',
  'completed',
  'discarded',
  'cancelled',
];

export interface Pagination {
  total?: number;
  limit?: number;
  offset?: number;
  has_more?: boolean;
  next_cursor?: string;
}

export interface Page<T> {
  items: T[];
  pagination: Pagination;
}

export interface ListOptions {
  limit?: number;
  offset?: number;
  cursor?: string;
}

export interface OjsEvent {
  id?: string;
  type: string;
  time?: string;
  subject?: string;
  data?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A live event subscription (`streamEvents`, event-stream.ts). */
export interface EventStreamQuery {
  /** Event types (`job.completed`, ...). */
  types?: string[];
  queues?: string[];
  jobTypes?: string[];
  /** One job's events: its current state first (`job.state_changed`), then its changes. */
  jobId?: string;
  /** One queue's events. */
  queue?: string;
  /** Resume after this event id (default: from now). */
  after?: string;
}

export interface EventStreamOptions {
  signal?: AbortSignal;
  /** First reconnect delay (default 500 ms), doubled up to maxReconnectDelayMs (default 30 s). */
  reconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
}

export interface EventQuery {
  types?: string[];
  queues?: string[];
  jobTypes?: string[];
  after?: string;
  limit?: number;
}

export interface EventPage {
  events: OjsEvent[];
  cursor: string | null;
  hasMore: boolean;
}

// ---------------------------------------------------------------- manifest

export interface Manifest {
  specversion?: string;
  ojs_version?: string;
  implementation?: { name?: string; version?: string; language?: string; [k: string]: unknown };
  conformance_level?: number;
  conformance_tier?: string;
  protocols?: string[];
  backend?: string;
  capabilities?: Record<string, unknown>;
  /** Paths of optional endpoints, e.g. `ack_batch: "/ojs/v1/workers/ack/batch"`. */
  endpoints?: Record<string, unknown>;
  limits?: Record<string, unknown>;
  extensions?:
    | string[]
    | Record<string, Array<{ name?: string; uri?: string; version?: string } | string>>;
  [key: string]: unknown;
}

// ---------------------------------------------------------------- worker protocol (wire)

export interface FetchRequest {
  queues: string[];
  count: number;
  worker_id?: string;
  visibility_timeout_ms?: number;
  /** Long poll (extension, sent only when the manifest declares `long_poll_fetch`). */
  wait_ms?: number;
  /** Job versioning: the types and version ranges this worker runs (sent when the server declares the extension). */
  handlers?: { type: string; versions: string }[];
  /** Fair scheduling: the worker's pool (gRPC: metadata x-ojs-pool). */
  pool?: string;
}

export interface AckRequest {
  job_id: string;
  worker_id?: string;
  /** The attempt the worker ran (from the fetched job): fences a stale ACK. */
  attempt?: number;
  result?: unknown;
}

export interface NackRequest {
  job_id: string;
  worker_id?: string;
  error: {
    code: string;
    message: string;
    type?: string;
    retryable?: boolean;
    details?: Record<string, unknown>;
    backtrace?: string[];
  };
  requeue?: boolean;
  /** The attempt the worker ran (from the fetched job): fences a stale NACK. */
  attempt?: number;
}

/** A batched acknowledgement: many ACKs and NACKs in one call (at most 1000 items). */
export interface AckBatchRequest {
  acks: AckRequest[];
  nacks: NackRequest[];
}

/**
 * The outcome of one item of a batched acknowledgement. A rejected item
 * (`conflict`: stale attempt, another worker's lease, not active any more;
 * `not_found`; `invalid`) carries the typed error; the other items are
 * settled regardless.
 */
export type AckBatchItemResult =
  | { job_id: string; status: 'ok'; state: string; attempt?: number }
  | { job_id: string; status: 'conflict' | 'not_found' | 'invalid'; error: OjsError };

export interface AckBatchResponse {
  /** One result per item, acks first then nacks, in request order. */
  results: AckBatchItemResult[];
}

export interface HeartbeatRequest {
  worker_id: string;
  state: 'running' | 'quiet' | 'terminate';
  active_jobs: string[];
  active_job_ids: string[];
  visibility_timeout_ms?: number;
  hostname?: string;
  pid?: number;
  queues?: string[];
  concurrency?: number;
  /** Fair scheduling: the worker's pool. */
  pool?: string;
}

export interface HeartbeatResponse {
  /** `running`, `quiet` or `terminate`: what the server wants the worker to do. */
  directive: 'running' | 'quiet' | 'terminate';
  /** Ids whose lease was extended, when the server says (else undefined). */
  jobsExtended: string[] | undefined;
  /** Active jobs a client cancelled: their handlers are aborted. */
  jobsCancelled: string[];
  raw: Record<string, unknown>;
}

/** Result of a PUSH: created, an existing job (unique ignore), or dropped by server middleware. */
export interface PushResult {
  job: Job | null;
  status: 'created' | 'existing' | 'dropped';
}

export interface RequestOptions {
  signal?: AbortSignal;
}

/**
 * What the Client and Worker need from a server. `HttpTransport` speaks the
 * HTTP binding; `InProcessTransport` (`@ojs/sdk/in-process`) calls an engine
 * in the same process. Transports throw OjsError subclasses.
 */
export interface Transport {
  readonly kind: string;
  /**
   * True when aborting `fetchJobs` can never lose claimed jobs (they are
   * still returned). HTTP cannot promise that: a response lost to an abort
   * leaves its jobs leased until the visibility timeout, so the worker lets
   * an in-flight HTTP fetch finish instead.
   */
  readonly abortableFetch?: boolean;
  manifest(options?: RequestOptions): Promise<Manifest>;
  health(options?: RequestOptions): Promise<Record<string, unknown>>;
  push(envelope: JobEnvelope, options?: RequestOptions): Promise<PushResult>;
  pushBatch(envelopes: JobEnvelope[], options?: RequestOptions): Promise<Job[]>;
  getJob(id: string, options?: RequestOptions): Promise<Job>;
  cancelJob(id: string, options?: RequestOptions): Promise<Job>;
  activateJob(id: string, options?: RequestOptions): Promise<Job>;
  fetchJobs(request: FetchRequest, options?: RequestOptions): Promise<Job[]>;
  ack(request: AckRequest, options?: RequestOptions): Promise<Record<string, unknown>>;
  nack(request: NackRequest, options?: RequestOptions): Promise<Record<string, unknown>>;
  /**
   * Batched ACK/NACK, for servers that declare it (manifest
   * `endpoints.ack_batch`). Rejects as a whole only when the call itself
   * fails (transport, auth, a server without the endpoint: 404 or
   * UnsupportedFeatureError); per-item refusals are in the results.
   */
  ackBatch?(request: AckBatchRequest, options?: RequestOptions): Promise<AckBatchResponse>;
  heartbeat(request: HeartbeatRequest, options?: RequestOptions): Promise<HeartbeatResponse>;
  listQueues(query: ListOptions, options?: RequestOptions): Promise<Page<QueueInfo>>;
  queueStats(name: string, options?: RequestOptions): Promise<QueueStats>;
  setQueuePaused(name: string, paused: boolean, options?: RequestOptions): Promise<QueueInfo>;
  listDeadLetter(
    query: ListOptions & { queue?: string },
    options?: RequestOptions,
  ): Promise<Page<Job>>;
  retryDeadLetter(id: string, options?: RequestOptions): Promise<Job>;
  deleteDeadLetter(id: string, options?: RequestOptions): Promise<void>;
  registerCron(body: Record<string, unknown>, options?: RequestOptions): Promise<CronJob>;
  listCron(options?: RequestOptions): Promise<CronJob[]>;
  getCron(name: string, options?: RequestOptions): Promise<CronJob>;
  unregisterCron(name: string, options?: RequestOptions): Promise<void>;
  createWorkflow(body: Record<string, unknown>, options?: RequestOptions): Promise<Workflow>;
  getWorkflow(id: string, options?: RequestOptions): Promise<Workflow>;
  cancelWorkflow(id: string, options?: RequestOptions): Promise<Workflow>;
  listEvents(query: EventQuery, options?: RequestOptions): Promise<EventPage>;
  /** Live events (SSE on HTTP, the event log in-process), until the signal aborts. */
  streamEvents?(query: EventStreamQuery, options?: EventStreamOptions): AsyncIterable<OjsEvent>;
  /** Progress of an active job (progress extension); answers the stored progress. */
  progress?(jobId: string, update: ProgressUpdate, options?: RequestOptions): Promise<JobProgress>;
  getProgress?(jobId: string, options?: RequestOptions): Promise<JobProgress>;
  /** A call of the admin API (HTTP only): method, path under /ojs/v1, query, body. */
  admin?(call: AdminCall, options?: RequestOptions): Promise<Record<string, unknown>>;
  close?(): Promise<void>;
}

export interface ProgressUpdate {
  /** 0.0 to 1.0; clamped by the server, never lowered within an attempt. */
  progress?: number;
  message?: string;
  data?: Record<string, unknown>;
}

export interface JobProgress {
  job_id: string;
  state: string;
  progress: number | null;
  message: string | null;
  data: Record<string, unknown> | null;
  updated_at: string | null;
}

export interface AdminCall {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path under /ojs/v1, e.g. `/admin/jobs`. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Safe to repeat after an ambiguous failure (reads, pause, config). */
  idempotent: boolean;
}
