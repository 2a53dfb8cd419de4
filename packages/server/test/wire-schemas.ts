/**
 * The response shapes the specification publishes, as JSON Schemas a
 * strictly typed client would decode against: each field with the type the
 * digests declare (`../shared/spec/http-binding.md` §4, §5.1, §6.1, §9.1;
 * `features.md` §3.8). Unknown fields are allowed (clients ignore them);
 * a declared field with another type (a fraction where an integer is
 * declared, a string for a boolean, null where a value is required) is not.
 */

type Schema = Record<string, unknown>;

const string: Schema = { type: 'string' };
const integer: Schema = { type: 'integer' };
const boolean: Schema = { type: 'boolean' };
/** RFC 3339 with a time zone (http-binding §5.3). */
const timestamp: Schema = {
  type: 'string',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
};
const stringList: Schema = { type: 'array', items: string };
const uuid: Schema = {
  type: 'string',
  pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
};

function object(required: Record<string, Schema>, optional: Record<string, Schema> = {}): Schema {
  return {
    type: 'object',
    required: Object.keys(required),
    properties: { ...required, ...optional },
  };
}

const JOB_STATES = [
  'scheduled',
  'available',
  'pending',
  'active',
  'completed',
  'retryable',
  'cancelled',
  'discarded',
];

const jobError = object(
  { code: string, message: string },
  { type: string, retryable: boolean, details: { type: 'object' }, attempt: integer },
);

/** http-binding §5.5: durations of the retry policy are ISO 8601 strings. */
const retryPolicy = object(
  { max_attempts: integer },
  {
    initial_interval: string,
    backoff_coefficient: { type: 'number' },
    max_interval: string,
    jitter: boolean,
    non_retryable_errors: stringList,
    on_exhaustion: { enum: ['discard', 'dead_letter'] },
  },
);

/** http-binding §5.1. */
export const job = object(
  {
    id: uuid,
    type: string,
    queue: string,
    args: { type: 'array' },
    state: { enum: JOB_STATES },
    attempt: integer,
  },
  {
    specversion: { const: '1.0' },
    meta: { type: 'object' },
    priority: integer,
    max_attempts: integer,
    timeout_ms: integer,
    visibility_timeout_ms: integer,
    created_at: timestamp,
    enqueued_at: timestamp,
    started_at: timestamp,
    completed_at: timestamp,
    cancelled_at: timestamp,
    discarded_at: timestamp,
    scheduled_at: timestamp,
    expires_at: timestamp,
    error: jobError,
    errors: { type: 'array', items: jobError },
    tags: stringList,
    retry: retryPolicy,
    unique: { type: 'object' },
    worker_id: string,
    retry_delay_ms: integer,
    parent_results: { type: 'array' },
    parent_results_by_step: { type: 'object' },
    workflow_id: string,
    workflow_step_id: string,
  },
);

/** http-binding §4.2 (OA enums; CS also accepts healthy). */
export const health = object(
  {
    status: { enum: ['ok', 'healthy', 'degraded', 'error', 'unhealthy'] },
  },
  {
    version: string,
    uptime_seconds: integer,
    backend: object(
      // The suite's vocabulary (EXT-OBS-002), not the OpenAPI's connected/disconnected: decision 0050.
      { type: string, status: { enum: ['ok', 'healthy', 'degraded', 'unhealthy'] } },
      { latency_ms: integer, error: string },
    ),
  },
);

const extensionEntry = object({ name: string, uri: string, version: string });

/** http-binding §4.1. */
export const manifest = object(
  {
    specversion: { const: '1.0' },
    implementation: object(
      { name: string, version: string, language: string },
      { homepage: string, repository: string, backend: string },
    ),
    conformance_level: { type: 'integer', minimum: 0, maximum: 4 },
    protocols: { type: 'array', items: string, contains: { const: 'http' } },
    backend: string,
    capabilities: { type: 'object', additionalProperties: boolean },
  },
  {
    ojs_version: string,
    conformance_tier: { enum: ['parser', 'runtime', 'full'] },
    extensions: {
      oneOf: [
        stringList,
        object(
          {},
          {
            official: { type: 'array', items: extensionEntry },
            experimental: { type: 'array', items: extensionEntry },
          },
        ),
      ],
    },
    endpoints: { type: 'object', additionalProperties: string },
    schema_validation: boolean,
    unique_job_strength: { enum: ['strong', 'best_effort'] },
    test_suite_version: string,
    test_suite_passed_at: string,
  },
);

/** http-binding §6.1 (+ `type`, which the suite reads). */
export const errorEnvelope = object({
  error: object(
    { code: string, message: string, retryable: boolean, request_id: string },
    { type: string, details: { type: 'object' }, hint: string, docs_url: string },
  ),
});

const WORKFLOW_STATES = ['running', 'completed', 'failed', 'cancelled'];
const STEP_STATES = ['waiting', 'pending', 'active', 'completed', 'failed', 'cancelled'];

/** features §3.8 / http-binding §4.15 (OA/CS model): chain, group, batch. */
const typedWorkflow = object(
  {
    id: uuid,
    type: { enum: ['chain', 'group', 'batch'] },
    state: { enum: WORKFLOW_STATES },
    created_at: timestamp,
  },
  {
    name: string,
    steps_total: integer,
    steps_completed: integer,
    jobs_total: integer,
    jobs_completed: integer,
    callbacks: { type: 'object' },
    completed_at: timestamp,
    steps: {
      type: 'array',
      items: object(
        { index: integer, type: string, state: { enum: STEP_STATES } },
        { job_id: { type: ['string', 'null'] } },
      ),
    },
  },
);

/** http-binding §4.15 (DAG model), including the cancel response's counters. */
const graphWorkflow = object(
  {
    id: uuid,
    state: { enum: WORKFLOW_STATES },
    created_at: timestamp,
    steps: {
      type: 'array',
      items: object(
        {
          id: string,
          type: string,
          state: { enum: STEP_STATES },
          job_id: { type: ['string', 'null'] },
          depends_on: stringList,
        },
        { started_at: timestamp, completed_at: timestamp },
      ),
    },
  },
  {
    name: string,
    completed_at: timestamp,
    cancelled_at: timestamp,
    steps_cancelled: integer,
    steps_already_completed: integer,
  },
);

export const workflow = object({
  workflow: { oneOf: [{ ...typedWorkflow, required: ['type', 'id'] }, graphWorkflow] },
});

/** §4.8 FETCH: `{"jobs": [...]}` (OA adds `job`). */
export const fetch = object({ jobs: { type: 'array', items: job } }, { job });

/** §4.4 batch enqueue. */
export const batch = object({ jobs: { type: 'array', items: job }, count: integer });

export const wrappedJob = object({ job });

/** §0 (3): ACK and NACK answer a flat superset. */
export const settlement = object(
  { job_id: uuid, state: { enum: JOB_STATES } },
  {
    id: uuid,
    attempt: integer,
    max_attempts: integer,
    acknowledged: boolean,
    completed_at: timestamp,
    next_attempt_at: timestamp,
    discarded_at: timestamp,
    retry_delay_ms: integer,
    job,
  },
);

/** §4.11 BEAT. */
export const heartbeat = object(
  { state: { enum: ['running', 'quiet', 'terminate'] } },
  { jobs_extended: stringList, jobs_cancelled: stringList, server_time: timestamp },
);

const pagination = object(
  {},
  { total: integer, limit: integer, offset: integer, has_more: boolean },
);

export const queues = object({ queues: { type: 'array' } }, { pagination });

export const deadLetter = object({ jobs: { type: 'array', items: job } }, { pagination });

/** §9.1 event envelope, as GET /ojs/v1/events lists them. */
export const events = object({
  events: {
    type: 'array',
    items: object({
      specversion: { const: '1.0' },
      id: string,
      type: string,
      source: string,
      time: timestamp,
      data: { type: 'object' },
    }),
  },
});

/** §4.12 queue stats: the union of the HB and OA/CS shapes. */
export const queueStats = object(
  {
    queue: object(
      { name: string, available: integer, active: integer },
      {
        scheduled: integer,
        retryable: integer,
        completed: integer,
        discarded: integer,
        paused: boolean,
      },
    ),
  },
  {
    status: { enum: ['active', 'paused'] },
    stats: object(
      {},
      {
        queue: string,
        depth: integer,
        available: integer,
        active: integer,
        scheduled: integer,
        retryable: integer,
        discarded: integer,
        completed_last_hour: integer,
        failed_last_hour: integer,
      },
    ),
    computed_at: timestamp,
  },
);

/** §4.12 pause / resume: `{queue: {name, paused}}` (OA/CS) plus HB's status. */
export const queuePaused = object(
  { queue: object({ name: string, paused: boolean }, { status: string }) },
  { status: { enum: ['active', 'paused'] }, paused_at: timestamp, resumed_at: timestamp },
);

/** §4.13 dead letter delete. */
export const deadLetterDeleted = object({ deleted: { const: true }, job_id: uuid });

const cronEntry = object(
  { name: string, expression: string, timezone: string },
  {
    overlap_policy: string,
    enabled: boolean,
    job_template: { type: 'object' },
    created_at: timestamp,
    // The server sends null before the first run and while disabled (tested in http-orchestration).
    next_run_at: { oneOf: [timestamp, { type: 'null' }] },
    last_run_at: { oneOf: [timestamp, { type: 'null' }] },
  },
);

/** §4.14 cron, the OA/CS shapes. */
export const cron = object({ cron: cronEntry });
export const crons = object({ crons: { type: 'array', items: cronEntry } });
