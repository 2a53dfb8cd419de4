/**
 * The worker protocol: FETCH, ACK, FAIL (nack) and BEAT under /ojs/v1/workers.
 * ACK and NACK answer flat objects (the suite reads `$.state`, `$.attempt`),
 * with the job itself under `job` for clients that want it.
 */
import {
  boundedArray,
  byteLength,
  type FailureReport,
  invalidRequest,
  MAX_ATTEMPTS,
  MAX_FETCH_QUEUES,
  MAX_HEARTBEAT_JOBS,
  MAX_OFFSET,
  MAX_VISIBILITY_TIMEOUT_MS,
  MAX_WORKER_INFO_BYTES,
  OjsError,
  parseFetchScheduling,
  parseHandlers,
  type TenantScope,
  toIso,
  validateQueueName,
  validateWorkerId,
} from '@ojs/core';
import {
  ackBatchResponse,
  ackResponse,
  fetchResponse,
  heartbeatResponse,
  nackResponse,
  parseWorkerState,
  workerHealthResponse,
} from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { objectBody, optionalInt, optionalString, requiredString } from '../wire.ts';

type Obj = Record<string, unknown>;

function failureReport(value: unknown): FailureReport & { backtrace?: unknown } {
  if (value === undefined || value === null) return { code: 'handler_error', message: '' };
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest('error must be an object with code and message.', { field: 'error' });
  }
  const error = value as Obj;
  const report: FailureReport & { backtrace?: unknown } = {};
  if (typeof error.code === 'string') report.code = error.code;
  if (typeof error.type === 'string') report.type = error.type;
  if (typeof error.message === 'string') report.message = error.message;
  if (typeof error.retryable === 'boolean') report.retryable = error.retryable;
  if (
    typeof error.details === 'object' &&
    error.details !== null &&
    !Array.isArray(error.details)
  ) {
    report.details = error.details as Obj;
  }
  if (error.backtrace !== undefined) report.backtrace = error.backtrace;
  return report;
}

/** HB sends `active_jobs: [ids]`, WP `active_job_ids`, OA a single `job_id`: accept all. */
function heartbeatJobIds(body: Obj): string[] {
  const list = Array.isArray(body.active_jobs)
    ? body.active_jobs
    : Array.isArray(body.active_job_ids)
      ? body.active_job_ids
      : typeof body.job_id === 'string'
        ? [body.job_id]
        : [];
  if (!list.every((id) => typeof id === 'string')) {
    throw invalidRequest('active_jobs must be an array of job ids.', { field: 'active_jobs' });
  }
  return boundedArray(list, 'active_jobs', MAX_HEARTBEAT_JOBS) as string[];
}

function batchItems(body: Obj, field: 'acks' | 'nacks'): Obj[] {
  const list = body[field];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw invalidRequest(`${field} must be an array.`, { field });
  return list.map((item, index) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw invalidRequest(`${field}[${index}] must be an object with job_id.`, {
        field: `${field}[${index}]`,
      });
    }
    return item as Obj;
  });
}

/** Item fields, with the item's path in the error (`acks[3].attempt must be ...`). */
function itemField<T>(field: string, index: number, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof OjsError) {
      throw invalidRequest(`${field}[${index}].${error.message}`, { field: `${field}[${index}]` });
    }
    throw error;
  }
}

export async function workerRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.post('/ojs/v1/workers/fetch', async (request, reply) => {
    const body = objectBody(request.body);
    // A worker of a pool may leave out queues: its pool's are fetched.
    if (body.queues === undefined && body.pool !== undefined) body.queues = [];
    if (!Array.isArray(body.queues) || !body.queues.every((q) => typeof q === 'string')) {
      throw invalidRequest('queues is required and must be an array of queue names.', {
        field: 'queues',
      });
    }
    boundedArray(body.queues, 'queues', MAX_FETCH_QUEUES);
    const waitMs = optionalInt(body, 'wait_ms', 0, Number.MAX_SAFE_INTEGER);
    // Stop a long poll when the client goes away. (The request stream's own
    // 'close' fires once the body is read, so watch the response instead.)
    // A fetch that does not wait has nothing to stop: no controller, no
    // listener (about 3 µs of a count-1 fetch's CPU).
    let signal: AbortSignal | undefined;
    if (waitMs !== undefined && waitMs > 0) {
      const controller = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableEnded) controller.abort();
      });
      signal = controller.signal;
    }
    const scheduling = parseFetchScheduling(body.strategy, body.weights);
    const jobs = await engine.fetch({
      queues: body.queues as string[],
      pool: body.pool === undefined ? undefined : validateQueueName(body.pool, 'pool'),
      ...scheduling,
      count: optionalInt(body, 'count', 1, Number.MAX_SAFE_INTEGER),
      workerId: validateWorkerId(body.worker_id),
      visibilityTimeoutMs: optionalInt(body, 'visibility_timeout_ms', 1, MAX_VISIBILITY_TIMEOUT_MS),
      waitMs,
      handlers: parseHandlers(body.handlers),
      signal,
      tenant: request.ojsTenant?.id,
    });
    if (jobs.length > 0) return fetchResponse(jobs);
    // `explain: true` (ours): why nothing was handed out, read only for empty answers.
    if (body.explain === true) {
      const queues = body.queues as string[];
      return {
        jobs: [],
        why_empty: await engine.explainEmptyFetch(queues, validateWorkerId(body.worker_id)),
      };
    }
    return { jobs: [] };
  });

  const ack = async (jobId: string, body: Obj, tenant: TenantScope | undefined) =>
    ackResponse(
      await engine.ack({
        jobId,
        result: body.result,
        workerId: validateWorkerId(body.worker_id),
        attempt: optionalInt(body, 'attempt', 1, MAX_ATTEMPTS),
        tenant: tenant?.id,
      }),
    );

  const nack = async (jobId: string, body: Obj, tenant: TenantScope | undefined) => {
    const job = await engine.nack({
      jobId,
      error: failureReport(body.error),
      requeue: body.requeue === true,
      workerId: validateWorkerId(body.worker_id),
      attempt: optionalInt(body, 'attempt', 1, MAX_ATTEMPTS),
      tenant: tenant?.id,
    });
    return nackResponse(job);
  };

  app.post('/ojs/v1/workers/ack', async (request) => {
    const body = objectBody(request.body);
    return ack(requiredString(body, 'job_id'), body, request.ojsTenant);
  });

  app.post('/ojs/v1/workers/nack', async (request) => {
    const body = objectBody(request.body);
    return nack(requiredString(body, 'job_id'), body, request.ojsTenant);
  });

  // Batched acknowledgement (our extension `ack-batch`, manifest
  // endpoints.ack_batch): every item is fenced and settled on its own; the
  // answer has one result per item, acks first, then nacks, in order.
  // Malformed items reject the whole request before anything changes.
  app.post('/ojs/v1/workers/ack/batch', async (request) => {
    const body = objectBody(request.body);
    const acks = batchItems(body, 'acks').map((item, index) =>
      itemField('acks', index, () => ({
        jobId: requiredString(item, 'job_id'),
        result: item.result,
        workerId: validateWorkerId(item.worker_id),
        attempt: optionalInt(item, 'attempt', 1, MAX_ATTEMPTS),
        tenant: request.ojsTenant?.id,
      })),
    );
    const nacks = batchItems(body, 'nacks').map((item, index) =>
      itemField('nacks', index, () => ({
        jobId: requiredString(item, 'job_id'),
        error: failureReport(item.error),
        requeue: item.requeue === true,
        workerId: validateWorkerId(item.worker_id),
        attempt: optionalInt(item, 'attempt', 1, MAX_ATTEMPTS),
        tenant: request.ojsTenant?.id,
      })),
    );
    // settleBatch refuses an empty or oversized batch (at most MAX_ACK_BATCH items).
    return ackBatchResponse(await engine.settleBatch({ acks, nacks }));
  });

  // Per-job forms used by some clients and extension suites (OA).
  app.post<{ Params: { id: string } }>('/ojs/v1/jobs/:id/ack', async (request) =>
    ack(request.params.id, objectBody(request.body, { allowEmpty: true }), request.ojsTenant),
  );
  app.post<{ Params: { id: string } }>('/ojs/v1/jobs/:id/nack', async (request) =>
    nack(request.params.id, objectBody(request.body, { allowEmpty: true }), request.ojsTenant),
  );

  // Worker registration (WP §3): identity, queues, concurrency and the
  // handlers (types and version ranges) the worker runs.
  app.post('/ojs/v1/workers/register', async (request) => {
    const body = objectBody(request.body);
    const workerId = validateWorkerId(requiredString(body, 'worker_id'))!;
    // Fair scheduling: the one pool the worker declares (a name, like a queue's).
    if (body.pool !== undefined) validateQueueName(body.pool, 'pool');
    const { handlers: _raw, worker_id: _id, ...info } = body;
    // The registration is read back on fetches: keep it small.
    const infoBytes = byteLength(JSON.stringify(info));
    if (infoBytes > MAX_WORKER_INFO_BYTES) {
      throw invalidRequest(
        `The worker registration is ${infoBytes} bytes besides its handlers; the limit is ${MAX_WORKER_INFO_BYTES}.`,
        { max_bytes: MAX_WORKER_INFO_BYTES, actual_bytes: infoBytes },
      );
    }
    await engine.registerWorker(workerId, parseHandlers(body.handlers), info);
    return {
      ok: true,
      worker_id: workerId,
      server_time: toIso(engine.now()),
      heartbeat_interval: 5,
      heartbeat_timeout: 30,
      visibility_timeout_default: Math.round(engine.visibilityTimeoutMs / 1000),
    };
  });

  // BEAT (WP §8.4); /workers/beat is the graceful-shutdown extension's name
  // for it (`state: "drain"`, `active_jobs` as a count) and also answers
  // `acknowledged`. The reported state goes into the worker registry.
  const beat = async (request: { body: unknown; ojsTenant?: TenantScope }) => {
    const body = objectBody(request.body);
    const queues = body.queues;
    const result = await engine.heartbeat({
      workerId: validateWorkerId(body.worker_id),
      jobIds: heartbeatJobIds(body),
      visibilityTimeoutMs: optionalInt(body, 'visibility_timeout_ms', 1, MAX_VISIBILITY_TIMEOUT_MS),
      handlers: parseHandlers(body.handlers),
      workerState: parseWorkerState(body.state),
      activeJobs:
        typeof body.active_jobs === 'number'
          ? optionalInt(body, 'active_jobs', 0, MAX_ATTEMPTS)
          : undefined,
      info: {
        hostname: optionalString(body, 'hostname'),
        pid: optionalInt(body, 'pid', 0, MAX_OFFSET),
        queues:
          Array.isArray(queues) && queues.every((q) => typeof q === 'string') ? queues : undefined,
        concurrency: optionalInt(body, 'concurrency', 1, MAX_ATTEMPTS),
        version: optionalString(body, 'version'),
        pool: body.pool === undefined ? undefined : validateQueueName(body.pool, 'pool'),
      },
      tenant: request.ojsTenant?.id,
    });
    return heartbeatResponse(result);
  };
  // Graceful shutdown (C22): 503 {state:"draining"} after a drain or quiet beat.
  app.get<{ Params: { id: string } }>('/ojs/v1/workers/:id/health', async (request, reply) => {
    const { status, body } = workerHealthResponse(await engine.workers.health(request.params.id));
    reply.code(status);
    return body;
  });
  app.post('/ojs/v1/workers/heartbeat', beat);
  app.post('/ojs/v1/workers/beat', beat);
}
