/**
 * One handler per RPC of ojs.v1.OJSService, each calling the engine
 * operation the matching HTTP route calls, with the request turned into the
 * body that route would pass (convert.ts). Where the protocol has no field
 * for something the HTTP binding carries, call metadata does
 * (`x-ojs-wait-ms`, `x-ojs-visibility-timeout-ms`, `x-ojs-worker-id`,
 * `x-ojs-attempt`, `x-ojs-requeue`; decision 0042).
 */
import * as grpc from '@grpc/grpc-js';
import {
  type AuthConfig,
  boundedArray,
  checkRequestJson,
  checkRequestText,
  type FailureReport,
  inTenant,
  invalidRequest,
  isObject,
  isUuidv7,
  type JobRecord,
  MAX_ATTEMPTS,
  MAX_HEARTBEAT_JOBS,
  MAX_PATH_PARAM_BYTES,
  MAX_VISIBILITY_TIMEOUT_MS,
  notFound,
  OjsError,
  type TenantScope,
  uuidv7,
  validateQueueName,
  validateWorkerId,
} from '@ojs/core';
import {
  type AckRequest,
  ackBatchResponse,
  type Engine,
  type EnqueueManyOutcome,
  type HeartbeatResult,
  healthStatus,
  type NackRequest,
  offsetPagination,
  pushManyItems,
  throughputPerSecond,
} from '@ojs/engine';
import {
  fromDuration,
  fromStruct,
  type PbDuration,
  type PbStruct,
  ProtoWriter,
  stateToProto,
  toStruct,
  toTimestamp,
  toValue,
} from '@ojs/sdk/proto-wire';
import { authorize, callTenant } from './auth.ts';
import {
  type EnqueueContext,
  enqueueBody,
  optionsToProto,
  workflowBody,
  workflowToProto,
} from './convert.ts';
import { jobReply, jobsReply, writeJob } from './job-codec.ts';
import { fetchReply, receiveLimit } from './reply-limits.ts';
import { throwIfRefused } from './request-limits.ts';
import { errorInfoMetadata, grpcStatusOfError, toServiceError } from './status.ts';
import type { JobStreams } from './stream-jobs.ts';

type Obj = Record<string, unknown>;

export interface BindingContext {
  engine: Engine;
  auth?: AuthConfig;
  /** The manifest the HTTP binding serves (GET /ojs/manifest), built on each call. */
  manifest(): Record<string, unknown>;
  streams: JobStreams;
  serverVersion: string;
}

export interface CallInfo {
  requestId: string;
  metadata: grpc.Metadata;
  deadline: number;
  signal: AbortSignal;
  /** The tenant the call acts for (metadata x-ojs-tenant, or the key's), resolved once. */
  tenant?: TenantScope;
}

const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;

/** The client's x-ojs-request-id when sane (echoed, features §11), else a new one. */
export function requestIdOf(metadata: grpc.Metadata): string {
  const given = metadata.get('x-ojs-request-id')[0];
  return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : `req_${uuidv7()}`;
}

/** Response headers every call gets (features §11). */
export function responseMetadata(requestId: string, level: number, version: string) {
  const metadata = new grpc.Metadata();
  metadata.set('x-ojs-request-id', requestId);
  metadata.set('x-ojs-server-version', version);
  metadata.set('x-ojs-conformance-level', String(level));
  return metadata;
}

export function deadlineMs(deadline: grpc.Deadline): number {
  if (deadline instanceof Date) return deadline.getTime();
  return Number.isFinite(deadline) ? Number(deadline) : Number.POSITIVE_INFINITY;
}

/** A string metadata value. */
function meta(call: CallInfo, key: string): string | undefined {
  const value = call.metadata.get(key)[0];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** An integer metadata value in [min, max]; a malformed one is an INVALID_ARGUMENT naming it. */
function metaInt(call: CallInfo, key: string, min: number, max: number): number | undefined {
  const text = meta(call, key);
  if (text === undefined) return undefined;
  const n = /^\d{1,16}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw invalidRequest(`metadata ${key} must be an integer between ${min} and ${max}.`, {
      field: key,
    });
  }
  return n;
}

/** An id or name the HTTP binding takes from the path: checked as a path parameter is. */
function requiredId(request: Obj, field: string): string {
  const value = request[field];
  if (typeof value !== 'string' || value === '') {
    throw invalidRequest(`${field} is required.`, { field });
  }
  checkRequestText(field, value, MAX_PATH_PARAM_BYTES);
  return value;
}

/**
 * The request limits (core checkRequestJson: depth, NUL, unpaired
 * surrogates, finite numbers) on the body the matching HTTP route would be
 * sent, so that nesting counts the same levels in both bindings (a job's
 * meta is in EnqueueOptions here, at the top of an HTTP body).
 */
function checked<T>(body: T): T {
  checkRequestJson(body);
  return body;
}

function enqueueContext(engine: Engine, call: CallInfo): EnqueueContext {
  return {
    now: engine.now(),
    traceparent: meta(call, 'traceparent'),
    tracestate: meta(call, 'tracestate'),
  };
}

/**
 * The PUSH body of one Enqueue (or EnqueueMany item). The protocol has no
 * job id: a given id (x-ojs-idempotency-key, an item's `id`) that is a
 * UUIDv7 becomes the job's id, so a repeated call is refused as a duplicate
 * instead of enqueued twice (decision 0042).
 */
function pushBody(
  request: Obj,
  id: string | undefined,
  idField: string,
  context: EnqueueContext,
): Obj {
  const body = checked(enqueueBody(request, context));
  if (id !== undefined) {
    if (!isUuidv7(id)) {
      throw invalidRequest(`${idField} must be a lowercase UUIDv7.`, { field: idField });
    }
    body.id = id;
  }
  return body;
}

/**
 * EnqueueManyResponse: each result what the item's own Enqueue call would
 * have answered (ojsts.v1.EnqueueManyResult: status 1, job 2, code 3,
 * error_code 4, error_message 5, error_metadata 6).
 */
function enqueueManyReply(outcomes: readonly EnqueueManyOutcome[], requestId: string): Buffer {
  const w = new ProtoWriter();
  for (const outcome of outcomes) {
    const mark = w.begin(1);
    w.string(1, outcome.status);
    if (outcome.status === 'created' || outcome.status === 'existing') {
      writeJob(w, 2, outcome.job);
    } else if (outcome.status === 'error') {
      w.intField(3, grpcStatusOfError(outcome.error));
      w.text(4, outcome.error.code);
      w.text(5, outcome.error.message);
      for (const [key, value] of Object.entries(errorInfoMetadata(outcome.error, requestId))) {
        const entry = w.begin(6);
        w.string(1, key);
        w.string(2, value);
        w.end(entry);
      }
    }
    w.end(mark);
  }
  return w.finish();
}

/** proto JobError -> the engine's failure report (X-7: `code` is the error class, G-4). */
function failureFromProto(error: unknown): FailureReport & { backtrace?: unknown } {
  if (typeof error !== 'object' || error === null) return { code: 'handler_error', message: '' };
  const e = error as Obj;
  const report: FailureReport & { backtrace?: unknown } = {
    code: typeof e.code === 'string' && e.code !== '' ? e.code : 'handler_error',
    message: typeof e.message === 'string' ? e.message : '',
  };
  report.type = report.code;
  const details = fromStruct(e.details as PbStruct | undefined);
  if (details !== undefined) report.details = details;
  // proto3 bools have no presence: `false` is indistinguishable from unset,
  // so only `true` is taken as said; non-retryable is `details.retryable:
  // false` or the policy's non_retryable_errors (decision 0043).
  if (e.retryable === true) report.retryable = true;
  else if (details?.retryable === false) report.retryable = false;
  if (typeof e.backtrace === 'string' && e.backtrace !== '') {
    report.backtrace = e.backtrace.split('\n');
  }
  return report;
}

const WORKER_STATE_FROM_PROTO: Record<string, 'running' | 'quiet' | 'terminate'> = {
  WORKER_STATE_RUNNING: 'running',
  WORKER_STATE_QUIET: 'quiet',
  WORKER_STATE_TERMINATE: 'terminate',
};

/** A worker's pool from x-ojs-pool (validated like a queue name, as over HTTP). */
function poolOf(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : validateQueueName(value, 'pool');
}

/** The HTTP health status (engine healthStatus) as grpc-proto's HealthStatus. */
const HEALTH_STATUS = {
  ok: 'HEALTH_STATUS_OK',
  draining: 'HEALTH_STATUS_DEGRADED',
  error: 'HEALTH_STATUS_UNHEALTHY',
} as const;

const DIRECTIVE_TO_PROTO: Record<string, string> = {
  running: 'WORKER_STATE_RUNNING',
  quiet: 'WORKER_STATE_QUIET',
  terminate: 'WORKER_STATE_TERMINATE',
};

/** What a beat tells its worker: a draining server, to finish up (features §11 S: TERMINATE first). */
function directedState(engine: Engine, result: HeartbeatResult): string {
  return engine.draining
    ? 'WORKER_STATE_TERMINATE'
    : (DIRECTIVE_TO_PROTO[result.state] ?? 'WORKER_STATE_RUNNING');
}

/** A heartbeat's extend_by in ms, within the lease limits. */
function extendByOf(request: Obj): number | undefined {
  const extendBy = fromDuration(request.extend_by as PbDuration | undefined);
  if (extendBy !== undefined && (extendBy < 1 || extendBy > MAX_VISIBILITY_TIMEOUT_MS)) {
    throw invalidRequest(`extend_by must be between 1 ms and ${MAX_VISIBILITY_TIMEOUT_MS} ms.`, {
      field: 'extend_by',
    });
  }
  return extendBy;
}

function workerStateOf(request: Obj): 'running' | 'quiet' | 'terminate' | undefined {
  return typeof request.current_state === 'string'
    ? WORKER_STATE_FROM_PROTO[request.current_state]
    : undefined;
}

/** The cursor of the offset-paged listings: the offset as decimal text. */
function offsetCursor(cursor: unknown): number {
  if (cursor === undefined || cursor === '') return 0;
  if (typeof cursor !== 'string' || !/^\d{1,9}$/.test(cursor)) {
    throw invalidRequest('cursor must be a next_cursor this server returned.', {
      field: 'cursor',
    });
  }
  return Number(cursor);
}

function pageLimit(value: unknown, fallback: number, max: number): number {
  if (typeof value !== 'number' || value === 0) return fallback;
  if (!Number.isInteger(value) || value < 0) {
    throw invalidRequest('limit must be a positive integer.', { field: 'limit' });
  }
  return Math.min(value, max);
}

/** Manifest subset the protocol can carry (grpc-proto G-5): equal to HTTP's where fields exist. */
export function manifestToProto(manifest: Obj): Obj {
  const implementation = (manifest.implementation ?? {}) as Obj;
  const extensions = (manifest.extensions ?? {}) as Record<string, { name: string }[]>;
  const capabilities = (manifest.capabilities ?? {}) as Obj;
  return {
    ojs_version: manifest.ojs_version,
    implementation: {
      name: implementation.name,
      version: implementation.version,
      language: implementation.language,
    },
    conformance_level: manifest.conformance_level,
    protocols: manifest.protocols,
    backend: manifest.backend,
    extensions: Object.values(extensions).flatMap((list) => list.map((e) => e.name)),
    schema_validation: capabilities.schema_validation === true,
  };
}

/**
 * One RPC, answered with a reply message or its bytes already encoded
 * (Fetch: sized to the client's receive limit). A handler whose request is
 * large (Enqueue, EnqueueBatch, EnqueueMany, AckBatch) is not `async`: it
 * reads its request into what the engine is given and returns the engine's
 * promise, so the decoded request is not kept reachable (an async
 * function's arguments stay reachable while it awaits) across the store
 * call; requests held that long were promoted to the old generation and
 * grew the heap (decision 0112).
 */
export type UnaryHandler = (request: Obj, call: CallInfo) => Promise<Obj | Buffer>;

export function unaryHandlers(ctx: BindingContext): Record<string, UnaryHandler> {
  const { engine, streams } = ctx;
  const job = (record: JobRecord) => jobReply(record);
  // Concurrent Enqueue, Ack and Nack calls share store calls in the engine
  // (decision 0100), as the HTTP binding's single requests do.

  return {
    async Manifest() {
      return manifestToProto(ctx.manifest());
    },

    async Health() {
      const health = await engine.health();
      const details: Obj = {
        backend: engine.store.backend,
        latency_ms: health.latencyMs,
        draining: health.draining,
      };
      if (health.error !== undefined) details.error = health.error;
      return {
        status: HEALTH_STATUS[healthStatus(health)],
        timestamp: toTimestamp(engine.now()),
        details: toStruct(details),
      };
    },

    Enqueue(request, call) {
      const body = pushBody(
        request,
        meta(call, 'x-ojs-idempotency-key'),
        'x-ojs-idempotency-key',
        enqueueContext(engine, call),
      );
      // An enqueue middleware dropped the job: nothing stored, no job to show.
      return engine
        .enqueue(body, call.tenant)
        .then((result) => (result.status === 'dropped' ? {} : job(result.job)));
    },

    EnqueueBatch(request, call) {
      const context = enqueueContext(engine, call);
      const defaults = (request.default_options ?? undefined) as Obj | undefined;
      const entries = Array.isArray(request.jobs) ? (request.jobs as Obj[]) : [];
      // Atomic like POST /ojs/v1/jobs/batch (grpc-proto G-10): all stored,
      // or none and the error names the entry; `errors` stays empty.
      const { jobs: bodies } = checked({
        jobs: entries.map((entry) => enqueueBody(entry, context, defaults)),
      });
      return engine
        .enqueueBatch(bodies, {}, call.tenant)
        .then((jobs) => jobsReply(jobs, { count: jobs.length }));
    },

    async GetJob(request, call) {
      return job(await engine.getJob(requiredId(request, 'job_id'), call.tenant));
    },

    async CancelJob(request, call) {
      const reason =
        typeof request.reason === 'string' && request.reason !== '' ? request.reason : undefined;
      const { after } = await engine.cancelJob(requiredId(request, 'job_id'), reason, call.tenant);
      return job(after);
    },

    async ActivateJob(request, call) {
      return job(await engine.activate(requiredId(request, 'job_id'), call.tenant));
    },

    async Fetch(request, call) {
      const { queues } = checked({
        queues: Array.isArray(request.queues) ? (request.queues as string[]) : [],
        worker_id: request.worker_id,
      });
      // Read before anything is claimed: a malformed one must not strand jobs.
      const limit = receiveLimit(call.metadata);
      // The protocol's Fetch is a poll; x-ojs-wait-ms makes it a long poll
      // like HTTP's wait_ms, cut short so the answer beats the call's deadline.
      const asked = metaInt(call, 'x-ojs-wait-ms', 0, Number.MAX_SAFE_INTEGER) ?? 0;
      const waitMs = Math.max(0, Math.min(asked, call.deadline - Date.now() - 250));
      const jobs = await engine.fetch({
        queues,
        count: typeof request.count === 'number' && request.count !== 0 ? request.count : 1,
        workerId: validateWorkerId(request.worker_id || undefined),
        visibilityTimeoutMs: metaInt(
          call,
          'x-ojs-visibility-timeout-ms',
          1,
          MAX_VISIBILITY_TIMEOUT_MS,
        ),
        waitMs,
        signal: call.signal,
        tenant: call.tenant?.id,
        // Fair scheduling: FetchRequest has no pool field; ours in metadata, like x-ojs-wait-ms.
        pool: poolOf(meta(call, 'x-ojs-pool')),
      });
      return fetchReply(engine, jobs, limit, (job) => jobsReply([job]));
    },

    async Ack(request, call) {
      const { result } = checked({
        job_id: request.job_id,
        result: fromStruct(request.result as PbStruct | undefined),
      });
      const jobId = requiredId(request, 'job_id');
      const ack: AckRequest = {
        jobId,
        result,
        workerId: validateWorkerId(meta(call, 'x-ojs-worker-id')),
        attempt: metaInt(call, 'x-ojs-attempt', 1, MAX_ATTEMPTS),
        tenant: call.tenant?.id,
      };
      await engine.ack(ack);
      streams.settled(jobId);
      return { acknowledged: true };
    },

    async Nack(request, call) {
      const { error } = checked({ job_id: request.job_id, error: failureFromProto(request.error) });
      const jobId = requiredId(request, 'job_id');
      const nack: NackRequest = {
        jobId,
        error,
        requeue: meta(call, 'x-ojs-requeue') === 'true',
        workerId: validateWorkerId(meta(call, 'x-ojs-worker-id')),
        attempt: metaInt(call, 'x-ojs-attempt', 1, MAX_ATTEMPTS),
        tenant: call.tenant?.id,
      };
      const record = await engine.nack(nack);
      streams.settled(jobId);
      const out: Obj = { state: stateToProto(record.state) };
      if (record.state === 'retryable' && record.next_attempt_at !== undefined) {
        out.next_attempt_at = toTimestamp(record.next_attempt_at);
      }
      return out;
    },

    async Heartbeat(request, call) {
      // One `id`: a job id (per-job beat) or, when it equals worker_id, the
      // worker itself (grpc-proto G-6, decision 0044).
      checked({ id: request.id, worker_id: request.worker_id });
      const id = requiredId(request, 'id');
      const workerId = validateWorkerId(request.worker_id || undefined);
      const perJob = id !== workerId;
      const result = await engine.heartbeat({
        workerId,
        jobIds: perJob ? [id] : [],
        workerState: workerStateOf(request),
        visibilityTimeoutMs: extendByOf(request),
        // A worker beating N jobs sends N + 1 beats: only its own is a registry write.
        recordWorker: !perJob,
        tenant: call.tenant?.id,
      });
      const out: Obj = { directed_state: directedState(engine, result) };
      if (!perJob) return out;
      if (result.jobsCancelled.includes(id)) {
        throw new OjsError('conflict', `Job '${id}' was cancelled; stop working on it.`, {
          job_id: id,
          current_state: 'cancelled',
        });
      }
      if (!result.jobsExtended.includes(id)) {
        const current = await engine.store.getJob(id);
        if (current === null || !inTenant(current, call.tenant)) throw notFound('job', id);
        throw new OjsError(
          'conflict',
          `Job '${id}' is ${current.state}${current.state === 'active' ? ' under another worker' : ''}; its lease was not extended.`,
          { job_id: id, current_state: current.state },
        );
      }
      const extended = await engine.store.getJob(id);
      if (extended?.lease_until !== undefined) {
        out.new_deadline = toTimestamp(extended.lease_until);
      }
      return out;
    },

    async ListQueues(request) {
      const limit = pageLimit(request.limit, 100, 1000);
      const offset = offsetCursor(request.cursor);
      const all = await engine.listQueues();
      const page = all.slice(offset, offset + limit);
      const available = new Map<string, number>();
      for (const { queue, state, count } of await engine.store.countJobsByQueue()) {
        if (state === 'available') available.set(queue, count);
      }
      return {
        queues: page.map((q) => ({
          name: q.name,
          paused: q.paused,
          available_count: available.get(q.name) ?? 0,
          created_at: toTimestamp(q.created_at),
        })),
        next_cursor: offsetPagination(all.length, limit, offset, page.length).has_more
          ? String(offset + page.length)
          : '',
      };
    },

    async QueueStats(request, call) {
      const stats = await engine.queueStats(requiredId(request, 'queue'), call.tenant);
      const { counts } = stats;
      return {
        queue: stats.name,
        stats: {
          available: counts.available,
          active: counts.active,
          scheduled: counts.scheduled,
          retryable: counts.retryable,
          dead: counts.discarded,
          completed_last_hour: stats.completed_last_hour,
          failed_last_hour: stats.failed_last_hour,
          throughput_per_second: throughputPerSecond(stats),
          paused: stats.paused,
        },
      };
    },

    async PauseQueue(request) {
      await engine.setQueuePaused(requiredId(request, 'queue'), true);
      return {};
    },

    async ResumeQueue(request) {
      await engine.setQueuePaused(requiredId(request, 'queue'), false);
      return {};
    },

    async ListDeadLetter(request, call) {
      const limit = pageLimit(request.limit, 50, 1000);
      const offset = offsetCursor(request.cursor);
      const queue =
        typeof request.queue === 'string' && request.queue !== '' ? request.queue : undefined;
      // A query parameter in the HTTP binding.
      if (queue !== undefined) checkRequestText('queue', queue, Number.POSITIVE_INFINITY);
      const page = await engine.listDeadLetter(queue, limit, offset, call.tenant);
      return jobsReply(page.items, {
        count: page.total,
        nextCursor: offsetPagination(page.total, limit, offset, page.items.length).has_more
          ? String(offset + limit)
          : '',
      });
    },

    async RetryDeadLetter(request, call) {
      return job(await engine.retryDeadLetter(requiredId(request, 'job_id'), call.tenant));
    },

    async DeleteDeadLetter(request, call) {
      await engine.deleteDeadLetter(requiredId(request, 'job_id'), call.tenant);
      return {};
    },

    async RegisterCron(request, call) {
      const template = enqueueBody(request, enqueueContext(engine, call));
      checked({ name: request.name, cron: request.cron, timezone: request.timezone, ...template });
      const name = requiredId(request, 'name');
      // The protocol has no overlap policy (grpc-proto G-7): a new entry
      // gets the default `skip`; re-registering keeps the entry's policy
      // and enabled flag (decision 0044).
      const existing = (await engine.store.listCrons()).find((c) => c.name === name);
      const { cron } = await engine.cron.register(
        {
          name,
          cron: request.cron,
          timezone:
            typeof request.timezone === 'string' && request.timezone ? request.timezone : 'UTC',
          ...template,
          ...(existing === undefined
            ? {}
            : { overlap_policy: existing.overlap_policy, enabled: existing.enabled }),
        },
        call.tenant,
      );
      return { name: cron.name, next_run_at: toTimestamp(cron.next_run_at) };
    },

    async UnregisterCron(request) {
      await engine.cron.delete(requiredId(request, 'name'));
      return {};
    },

    async ListCron() {
      const crons = await engine.store.listCrons();
      return {
        entries: crons.map((cron) => {
          const template = cron.job_template;
          return {
            name: cron.name,
            cron: cron.expression,
            timezone: cron.timezone,
            type: template.type,
            args: Array.isArray(template.args) ? template.args.map(toValue) : [],
            options: optionsToProto(template.options, template.meta),
            next_run_at: toTimestamp(cron.next_run_at),
            last_run_at: toTimestamp(cron.last_run_at),
          };
        }),
      };
    },

    async CreateWorkflow(request, call) {
      const workflow = await engine.createWorkflow(
        checked(workflowBody(request, enqueueContext(engine, call))),
        call.tenant,
      );
      return {
        workflow: workflowToProto(workflow, await engine.store.listWorkflowJobs(workflow.id)),
      };
    },

    async GetWorkflow(request, call) {
      const workflow = await engine.getWorkflow(requiredId(request, 'workflow_id'), call.tenant);
      return {
        workflow: workflowToProto(workflow, await engine.store.listWorkflowJobs(workflow.id)),
      };
    },

    async CancelWorkflow(request, call) {
      const workflow = await engine.cancelWorkflow(requiredId(request, 'workflow_id'), call.tenant);
      return { workflow: workflowToProto(workflow) };
    },
  };
}

/**
 * ojsts.v1.WorkerExtensions (decision 0047): AckBatch, the ack-batch
 * extension of the HTTP binding over gRPC. A malformed item refuses the
 * whole call before anything changes; each well-formed item is fenced and
 * settled on its own.
 */
export function extensionHandlers(ctx: BindingContext): Record<string, UnaryHandler> {
  const { engine, streams } = ctx;
  const items = (request: Obj, field: 'acks' | 'nacks') =>
    (Array.isArray(request[field]) ? (request[field] as Obj[]) : []).map((item, index) => {
      const path = `${field}[${index}]`;
      const jobId = item.job_id;
      if (typeof jobId !== 'string' || jobId === '') {
        throw invalidRequest(`${path}.job_id is required.`, { field: `${path}.job_id` });
      }
      const attempt =
        typeof item.attempt === 'number' && item.attempt !== 0 ? item.attempt : undefined;
      if (attempt !== undefined && (attempt < 1 || attempt > MAX_ATTEMPTS)) {
        throw invalidRequest(`${path}.attempt must be between 1 and ${MAX_ATTEMPTS}.`, {
          field: `${path}.attempt`,
        });
      }
      return {
        jobId,
        workerId: validateWorkerId(item.worker_id || undefined),
        attempt,
        result: fromStruct(item.result as PbStruct | undefined),
        error: failureFromProto(item.error),
        requeue: item.requeue === true,
      };
    });
  return {
    EnqueueMany(request, call) {
      // The limits of POST /ojs/v1/jobs/many, with its errors.
      const items = pushManyItems(request.items, 'items') as Obj[];
      const context = enqueueContext(engine, call);
      const outcomes: EnqueueManyOutcome[] = new Array(items.length);
      const bodies: Obj[] = [];
      const positions: number[] = [];
      for (const [index, item] of items.entries()) {
        const id = typeof item.id === 'string' && item.id !== '' ? item.id : undefined;
        try {
          bodies.push(pushBody(isObject(item.job) ? item.job : {}, id, 'id', context));
          positions.push(index);
        } catch (error) {
          // Refused as its Enqueue call would be; the others go on.
          if (!(error instanceof OjsError)) throw error;
          outcomes[index] = { status: 'error', error };
        }
      }
      if (bodies.length === 0) return Promise.resolve(enqueueManyReply(outcomes, call.requestId));
      return engine.enqueueMany(bodies, call.tenant).then((stored) => {
        for (const [k, outcome] of stored.entries()) outcomes[positions[k]!] = outcome;
        return enqueueManyReply(outcomes, call.requestId);
      });
    },

    async HeartbeatMany(request, call) {
      // The BEAT of POST /ojs/v1/workers/heartbeat: the worker and all its jobs in one call.
      const { job_ids: jobIds } = checked({
        worker_id: request.worker_id,
        job_ids: Array.isArray(request.job_ids) ? (request.job_ids as string[]) : [],
      });
      const result = await engine.heartbeat({
        workerId: validateWorkerId(request.worker_id || undefined),
        jobIds: boundedArray(jobIds, 'job_ids', MAX_HEARTBEAT_JOBS) as string[],
        workerState: workerStateOf(request),
        visibilityTimeoutMs: extendByOf(request),
        tenant: call.tenant?.id,
      });
      return {
        directed_state: directedState(engine, result),
        jobs_extended: result.jobsExtended,
        jobs_cancelled: result.jobsCancelled,
      };
    },

    AckBatch(request, call) {
      const tenant = call.tenant?.id;
      const { acks, nacks } = checked({
        acks: items(request, 'acks').map(({ error: _e, requeue: _r, ...ack }) => ({
          ...ack,
          tenant,
        })),
        nacks: items(request, 'nacks').map(({ result: _r, ...nack }) => ({ ...nack, tenant })),
      });
      // settleBatch refuses an empty or oversized batch (at most MAX_ACK_BATCH items).
      // The HTTP binding's results (engine wire-responses.ts), as AckBatchItemResult messages.
      return engine.settleBatch({ acks, nacks }).then((settled) => ({
        results: ackBatchResponse(settled).results.map((result) => {
          if (result.status === 'ok') {
            streams.settled(result.job_id);
            return { ...result, state: stateToProto(result.state) };
          }
          const { error, ...item } = result;
          return {
            ...item,
            error_code: error.code,
            error_message: error.message,
            retryable: error.retryable,
          };
        }),
      }));
    },
  };
}

/** Wraps a handler: request id, authentication, response metadata, errors as statuses. */
export function wrapUnary(
  ctx: BindingContext,
  name: string,
  handler: UnaryHandler,
  level: number,
): grpc.handleUnaryCall<Obj, Obj | Buffer> {
  return (call, callback) => {
    const requestId = requestIdOf(call.metadata);
    const controller = new AbortController();
    let answered = false;
    // grpc-js signals 'cancelled' after every call, answered ones included:
    // only a call still running is aborted (an abort costs a DOMException
    // and an event dispatch, per call).
    call.once('cancelled', () => {
      if (!answered) controller.abort();
    });
    call.sendMetadata(responseMetadata(requestId, level, ctx.serverVersion));
    const info: CallInfo = {
      requestId,
      metadata: call.metadata,
      deadline: deadlineMs(call.getDeadline()),
      signal: controller.signal,
    };
    // grpc-js keeps the decoded message as long as the call (handleUnary's
    // listener closure holds it): the handler gets its fields in an object
    // of its own and the message is emptied, and no closure here holds the
    // request. So a request is garbage once the handler has read it, not
    // only after the call: held while the engine worked, requests were
    // promoted to the old generation and grew the heap (decision 0112).
    const request: Obj = { ...call.request };
    for (const key of Object.keys(call.request)) call.request[key] = undefined;
    let answer: Promise<Obj | Buffer>;
    try {
      const key = authorize(ctx.auth, name, call.metadata);
      info.tenant = callTenant(call.metadata, key);
      throwIfRefused(request);
      answer = handler(request, info);
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      (response) => {
        answered = true;
        callback(null, response);
      },
      (error: unknown) => {
        answered = true;
        logUnexpected(name, error);
        callback(toServiceError(error, requestId));
      },
    );
  };
}

/** A failure that is not an OJS error is a bug or an outage: the client sees INTERNAL, the log the cause. */
export function logUnexpected(method: string, error: unknown): void {
  if (error instanceof OjsError) return;
  process.stderr.write(
    `ojs grpc: ${method}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
}
