/**
 * Between the engine's records (the HTTP binding's JSON shapes) and the
 * ojs.v1 protobuf messages as @grpc/proto-loader presents them (keepCase,
 * enums as names, longs as numbers, oneofs named). Requests become the very
 * bodies the HTTP routes hand the engine, so both bindings validate and
 * store a job the same way; responses are projections of the same records.
 */
import {
  formatIsoDuration,
  invalidRequest,
  isObject,
  type JobRecord,
  type OjsEvent,
  toIso,
  type WorkflowRecord,
  type WorkflowStepState,
} from '@ojs/core';
import {
  fromDuration,
  fromStruct,
  fromTimestamp,
  fromValue,
  type PbDuration,
  type PbStruct,
  type PbTimestamp,
  type PbValue,
  stateFromProto,
  toDuration,
  toStruct,
  toTimestamp,
} from '@ojs/sdk/proto-wire';

type Obj = Record<string, unknown>;

/** A Duration of a request in ms; a negative one is refused (proto allows it, OJS does not). */
function requestDuration(value: unknown, field: string): number | undefined {
  const ms = fromDuration(value as PbDuration | undefined);
  if (ms !== undefined && (!Number.isFinite(ms) || ms < 0)) {
    throw invalidRequest(`${field} must not be negative.`, { field });
  }
  return ms;
}

// ------------------------------------------------------------ jobs

/** Request context that becomes part of an enqueued job (trace context from metadata). */
export interface EnqueueContext {
  now: number;
  traceparent?: string;
  tracestate?: string;
}

const CONFLICT_FROM_PROTO: Record<string, string> = {
  UNIQUE_CONFLICT_ACTION_REJECT: 'reject',
  UNIQUE_CONFLICT_ACTION_REPLACE: 'replace',
  UNIQUE_CONFLICT_ACTION_IGNORE: 'ignore',
  UNIQUE_CONFLICT_ACTION_REPLACE_EXCEPT_SCHEDULE: 'replace_except_schedule',
};

/**
 * RetryPolicy -> the HTTP `retry` object. proto3 scalars have no presence,
 * so a zero means "not given" and the server's default applies (grpc-proto
 * §3.3): max_attempts 0 is the default (3), not "unlimited", and
 * `jitter` can only be left at its default (decision 0043).
 */
function retryFromProto(policy: Obj): Obj {
  const out: Obj = {};
  if (typeof policy.max_attempts === 'number' && policy.max_attempts !== 0) {
    out.max_attempts = policy.max_attempts;
  }
  const initial = requestDuration(policy.initial_interval, 'retry.initial_interval');
  if (initial !== undefined) out.initial_interval = formatIsoDuration(initial);
  const max = requestDuration(policy.max_interval, 'retry.max_interval');
  if (max !== undefined) out.max_interval = formatIsoDuration(max);
  if (typeof policy.backoff_coefficient === 'number' && policy.backoff_coefficient !== 0) {
    out.backoff_coefficient = policy.backoff_coefficient;
  }
  if (Array.isArray(policy.non_retryable_errors) && policy.non_retryable_errors.length > 0) {
    out.non_retryable_errors = policy.non_retryable_errors;
  }
  if (typeof policy.on_exhaustion === 'string' && policy.on_exhaustion !== '') {
    out.on_exhaustion = policy.on_exhaustion;
  }
  return out;
}

/** UniquePolicy -> the unique-jobs shape: `key` holds dimension names (grpc-proto G-3). */
function uniqueFromProto(policy: Obj): Obj {
  const out: Obj = {};
  if (Array.isArray(policy.key) && policy.key.length > 0) out.keys = policy.key;
  const period = requestDuration(policy.period, 'unique.period');
  if (period !== undefined) out.period = formatIsoDuration(period);
  const conflict = CONFLICT_FROM_PROTO[String(policy.on_conflict)];
  if (conflict !== undefined) out.on_conflict = conflict;
  if (Array.isArray(policy.states) && policy.states.length > 0) {
    out.states = policy.states.map((s) => stateFromProto(s) ?? String(s));
  }
  if (Array.isArray(policy.args_keys) && policy.args_keys.length > 0) {
    out.args_keys = policy.args_keys;
  }
  if (Array.isArray(policy.meta_keys) && policy.meta_keys.length > 0) {
    out.meta_keys = policy.meta_keys;
  }
  return out;
}

/**
 * EnqueueOptions -> the HTTP `options` object plus top-level `meta`.
 * `defaults` are the batch's default_options, overridden field by field.
 */
function optionsFromProto(
  given: Obj | undefined,
  defaults: Obj | undefined,
  context: EnqueueContext,
): { options: Obj; meta: Obj | undefined } {
  const o: Obj = { ...(defaults ?? {}), ...(given ?? {}) };
  // Repeated fields are always present (empty) after decoding: an empty
  // list in the entry does not hide the batch default.
  for (const list of ['tags'] as const) {
    if (Array.isArray(given?.[list]) && (given[list] as unknown[]).length === 0) {
      o[list] = defaults?.[list];
    }
  }
  const options: Obj = {};
  if (typeof o.queue === 'string' && o.queue !== '') options.queue = o.queue;
  if (typeof o.priority === 'number' && o.priority !== 0) options.priority = o.priority;
  const delay = fromTimestamp(o.delay_until as PbTimestamp);
  if (delay !== undefined) options.scheduled_at = toIso(delay);
  const timeout = requestDuration(o.timeout, 'options.timeout');
  if (timeout !== undefined) options.timeout_ms = timeout;
  const visibility = requestDuration(o.visibility_timeout, 'options.visibility_timeout');
  if (visibility !== undefined) options.visibility_timeout_ms = visibility;
  const ttl = requestDuration(o.ttl, 'options.ttl');
  // Relative, so a cron template's ttl counts from each firing.
  if (ttl !== undefined) options.expires_at = `+${formatIsoDuration(ttl)}`;
  if (Array.isArray(o.tags) && o.tags.length > 0) options.tags = o.tags;
  const retry = isObject(o.retry) ? retryFromProto(o.retry) : {};
  // max_attempts is a shorthand; retry.max_attempts wins when both are set.
  if (retry.max_attempts === undefined && typeof o.max_attempts === 'number' && o.max_attempts) {
    retry.max_attempts = o.max_attempts;
  }
  if (Object.keys(retry).length > 0) options.retry = retry;
  if (isObject(o.unique)) options.unique = uniqueFromProto(o.unique);
  if (o.pending === true) options.pending = true;
  let meta = fromStruct(o.meta as PbStruct | undefined);
  if (typeof o.trace_id === 'string' && o.trace_id !== '') meta = { ...meta, trace_id: o.trace_id };
  // Trace context received in metadata is kept in meta (features §11).
  if (context.traceparent !== undefined && meta?.traceparent === undefined) {
    meta = { ...meta, traceparent: context.traceparent };
    if (context.tracestate !== undefined) meta.tracestate = context.tracestate;
  }
  return { options, meta };
}

/** An EnqueueRequest / BatchJobEntry / WorkflowStep -> the HTTP PUSH body. */
export function enqueueBody(
  request: { type?: unknown; args?: unknown; options?: unknown },
  context: EnqueueContext,
  defaults?: Obj,
): Obj {
  const { options, meta } = optionsFromProto(
    isObject(request.options) ? request.options : undefined,
    defaults,
    context,
  );
  const body: Obj = {
    type: request.type ?? '',
    args: Array.isArray(request.args) ? request.args.map((v) => fromValue(v as PbValue)) : [],
    options,
  };
  if (meta !== undefined) body.meta = meta;
  return body;
}

// ------------------------------------------------------------ workflows

const WORKFLOW_STATE: Record<string, string> = {
  running: 'WORKFLOW_STATE_RUNNING',
  completed: 'WORKFLOW_STATE_COMPLETED',
  failed: 'WORKFLOW_STATE_FAILED',
  cancelled: 'WORKFLOW_STATE_CANCELLED',
};

/**
 * A workflow as the DAG the protocol knows (grpc-proto G-8). Graph
 * workflows map one to one; a chain, group or batch made over HTTP shows
 * its jobs as steps named by index, a chain's each depending on the one
 * before (decision 0044).
 */
export function workflowToProto(workflow: WorkflowRecord, jobs?: readonly JobRecord[]): Obj {
  const jobsById = new Map((jobs ?? []).map((job) => [job.id, job]));
  const ids = workflow.steps.map((step) => step.id ?? String(step.index));
  return {
    id: workflow.id,
    name: workflow.name ?? '',
    state: WORKFLOW_STATE[workflow.state] ?? 'WORKFLOW_STATE_UNSPECIFIED',
    steps: workflow.steps.map((step, i) => {
      const job = step.job_id === undefined ? undefined : jobsById.get(step.job_id);
      const state: WorkflowStepState =
        step.state === 'pending' && job?.state === 'active' ? 'active' : step.state;
      const dependsOn =
        step.depends_on ?? (workflow.type === 'chain' && i > 0 ? [ids[i - 1]!] : []);
      return {
        id: ids[i],
        type: typeof step.spec.type === 'string' ? step.spec.type : '',
        state: `WORKFLOW_STEP_STATE_${state.toUpperCase()}`,
        job_id: step.job_id ?? '',
        depends_on: dependsOn,
      };
    }),
    created_at: toTimestamp(workflow.created_at),
    completed_at: toTimestamp(workflow.completed_at ?? workflow.cancelled_at),
  };
}

/** CreateWorkflowRequest -> the graph-form body of POST /ojs/v1/workflows. */
export function workflowBody(request: Obj, context: EnqueueContext): Obj {
  if (!Array.isArray(request.steps) || request.steps.length === 0) {
    throw invalidRequest('steps must hold at least one step.', { field: 'steps' });
  }
  return {
    name: request.name,
    steps: request.steps.map((raw) => {
      const step = raw as Obj;
      return {
        id: step.id ?? '',
        ...enqueueBody(step, context),
        depends_on: Array.isArray(step.depends_on) ? step.depends_on : [],
      };
    }),
  };
}

// ------------------------------------------------------------ events

export function eventToProto(event: OjsEvent): Obj {
  const data = isObject(event.data) ? event.data : {};
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return {
    id: event.id,
    type: event.type,
    job_id: text(data.job_id),
    job_type: text(data.job_type),
    queue: text(data.queue),
    timestamp: toTimestamp(event.time),
    data: toStruct(data),
    workflow_id: text(data.workflow_id),
  };
}

/** The options of a stored template back as EnqueueOptions (cron entries). */
export function optionsToProto(options: unknown, meta: unknown): Obj {
  const o = isObject(options) ? options : {};
  const out: Obj = {};
  if (typeof o.queue === 'string') out.queue = o.queue;
  if (typeof o.priority === 'number') out.priority = o.priority;
  if (typeof o.timeout_ms === 'number') out.timeout = toDuration(o.timeout_ms);
  if (typeof o.visibility_timeout_ms === 'number') {
    out.visibility_timeout = toDuration(o.visibility_timeout_ms);
  }
  if (Array.isArray(o.tags)) out.tags = o.tags;
  if (isObject(o.retry) && typeof o.retry.max_attempts === 'number') {
    out.max_attempts = o.retry.max_attempts;
  }
  if (isObject(meta)) out.meta = toStruct(meta);
  return out;
}
