/**
 * The HTTP binding transport (http-binding digest §3-§8): over node:http
 * with a keep-alive Agent on Node, over `fetch` elsewhere or when one is
 * passed (see request.ts). It retries transient failures with exponential
 * backoff and jitter (ER §7: 100 ms initial, 5 retries by default),
 * honouring `Retry-After` on 429/503:
 *
 * - a failure that proves the server did not act (connection refused, DNS,
 *   429, 503) is retried for every operation;
 * - an ambiguous failure (timeout, reset, 500/502/504) is retried only for
 *   operations that are safe to repeat. PUSH is made safe by the client-side
 *   job id: a repeat answers 409 `duplicate`, which is resolved by reading
 *   the job. ACK/NACK repeats that answer 409 because the first try landed
 *   are treated as success. FETCH is never repeated after an ambiguous
 *   failure (jobs claimed by a lost response come back by lease expiry).
 */

import {
  ConflictError,
  ConnectionError,
  DuplicateJobError,
  isNeverAutoRetried,
  NotFoundError,
  OjsError,
  parseErrorResponse,
  TimeoutError,
  UnsupportedFeatureError,
} from './errors.ts';
import {
  type EventStreamOptions,
  type EventStreamQuery,
  streamEventsOverHttp,
} from './event-stream.ts';
import { isObject } from './generated/is-object.ts';
import { OJS_MEDIA_TYPE } from './generated/media-type.ts';
import {
  abortReason,
  fetchSend,
  isNode,
  NodeHttp,
  type ResponseHeaders,
  type Send,
  type SendResponse,
  SendTimeout,
} from './request.ts';
import { TurnBatch } from './turn-batch.ts';
import {
  type AckBatchItemResult,
  type AckBatchRequest,
  type AckBatchResponse,
  type AckRequest,
  type AdminCall,
  type CronJob,
  type EventPage,
  type EventQuery,
  type FetchRequest,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type Job,
  type JobEnvelope,
  type JobProgress,
  type ListOptions,
  type Manifest,
  type NackRequest,
  type OjsEvent,
  type Page,
  type Pagination,
  type ProgressUpdate,
  type PushResult,
  QUEUE_COUNT_STATES,
  type QueueInfo,
  type QueueStats,
  type RequestOptions,
  type Transport,
  type Workflow,
} from './types.ts';

export const SDK_VERSION = '0.1.0';

export interface TransportRetryOptions {
  /** Retries after the first try (default 5). */
  maxRetries?: number;
  /** Delay before the first retry (default 100 ms). */
  initialDelayMs?: number;
  /** Cap of one delay (default 5000 ms). */
  maxDelayMs?: number;
  /** Growth factor (default 2). */
  coefficient?: number;
}

export interface HttpTransportOptions {
  /** Server base URL, e.g. `http://127.0.0.1:8080` (a trailing `/ojs/v1` is accepted). */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  authToken?: string;
  headers?: Record<string, string>;
  /** The tenant this client or worker acts for (ext-multi-tenancy): `X-OJS-Tenant` on every request. */
  tenant?: string;
  /** Operation timeout (default 30 s); long-poll fetches get their wait added. */
  timeoutMs?: number;
  /** Transport retries; `false` disables them. */
  retry?: TransportRetryOptions | false;
  /**
   * A fetch implementation. Default: on Node, node:http / node:https with a
   * keep-alive Agent (much cheaper per request than the global fetch); elsewhere
   * the global fetch.
   */
  fetch?: typeof fetch;
  /** Node without `fetch`: connections per origin (default 64); more requests wait for one. */
  maxSockets?: number;
  /** Random source for jitter (tests). */
  random?: () => number;
  /**
   * Send the pushes made in one event-loop turn as one request to the
   * manifest's `endpoints.push_many`, each answered on its own (default
   * true). A lone push, a push with an abort signal, or a server that does
   * not declare the endpoint uses POST /ojs/v1/jobs.
   */
  coalescePushes?: boolean;
}

/** Most pushes sent in one POST endpoints.push_many (the server's limit is 1000). */
export const MAX_PUSH_MANY = 500;

interface QueuedPush {
  envelope: JobEnvelope;
  resolve(result: PushResult): void;
  reject(error: unknown): void;
}

type Obj = Record<string, unknown>;

/** Connection errors that prove the request never reached the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);

interface CallSpec {
  method: 'GET' | 'POST' | 'DELETE' | 'PATCH' | 'PUT';
  path: string;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** Safe to repeat after an ambiguous failure. */
  idempotent: boolean;
  operation: string;
  jobId?: string;
  queue?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

interface CallResult {
  status: number;
  body: Obj;
  headers: ResponseHeaders;
  /** The request was sent again after a try that may have been applied. */
  repeated?: boolean;
}

/** Thrown inside the retry loop: the error plus whether the server may have acted. */
class AttemptFailure {
  readonly error: OjsError;
  readonly maybeApplied: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(error: OjsError, maybeApplied: boolean, retryAfterMs?: number) {
    this.error = error;
    this.maybeApplied = maybeApplied;
    this.retryAfterMs = retryAfterMs;
  }
}

/** `Retry-After`: delta seconds (integer or decimal) or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function normalizeBaseUrl(url: string): string {
  let base = url.trim().replace(/\/+$/, '');
  if (base.endsWith('/ojs/v1')) base = base.slice(0, -'/ojs/v1'.length);
  else if (base.endsWith('/ojs')) base = base.slice(0, -'/ojs'.length);
  return base;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function errorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current !== undefined && depth < 5; depth++) {
    if (isObject(current) || current instanceof Error) {
      const code = (current as { code?: unknown }).code;
      if (typeof code === 'string') return code;
      current = (current as { cause?: unknown }).cause;
    } else break;
  }
  return undefined;
}

function asJob(value: unknown): Job {
  return value as Job;
}

/** The outcome of one PUSH from its status and body (POST /jobs or an item of push_many). */
function pushResult(status: number, body: Obj, envelope: JobEnvelope): PushResult {
  if (body.job === null || body.enqueued === false) return { job: null, status: 'dropped' };
  const job = asJob(body.job);
  return { job, status: status === 201 || job.id === envelope.id ? 'created' : 'existing' };
}

function pagination(body: Obj): Pagination {
  return isObject(body.pagination) ? (body.pagination as Pagination) : {};
}

/** A cron entry in the OA shape whatever the server sent (OA `cron` or HB `cron_job`). */
function normalizeCron(value: unknown): CronJob {
  const cron = isObject(value) ? { ...value } : {};
  if (typeof cron.expression !== 'string' && typeof cron.cron === 'string') {
    cron.expression = cron.cron;
  }
  if (!isObject(cron.job_template) && typeof cron.type === 'string') {
    cron.job_template = { type: cron.type, args: cron.args ?? [], options: cron.options ?? {} };
  }
  return cron as CronJob;
}

export class HttpTransport implements Transport {
  readonly kind = 'http';
  readonly baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #retry: Required<TransportRetryOptions>;
  readonly #send: Send;
  /** The node:http requester (Node without a `fetch` option). */
  readonly #node: NodeHttp | undefined;
  readonly #random: () => number;
  /** endpoints.ack_batch of the server's manifest (undefined: not declared), once read. */
  #ackBatchPath: Promise<string | undefined> | undefined;
  /** endpoints.push_many of the server's manifest (undefined: not declared), once read. */
  #pushManyPath: Promise<string | undefined> | undefined;
  readonly #coalescePushes: boolean;
  /** fetch for event streams (read as they arrive, so not through #send). */
  readonly #streamFetch: typeof fetch | undefined;
  /** Pushes of this turn, sent together after it. */
  readonly #pushes = new TurnBatch<QueuedPush>((queue) => this.#flushPushes(queue));

  constructor(options: HttpTransportOptions) {
    if (typeof options.url !== 'string' || options.url === '') {
      throw new TypeError('HttpTransport needs a server url, e.g. http://127.0.0.1:8080.');
    }
    this.baseUrl = normalizeBaseUrl(options.url);
    this.#headers = {
      Accept: `${OJS_MEDIA_TYPE}, application/json`,
      'OJS-Version': '1.0',
      'User-Agent': `ojs-ts-sdk/${SDK_VERSION}`,
      ...options.headers,
    };
    if (options.authToken) this.#headers.Authorization = `Bearer ${options.authToken}`;
    if (options.tenant !== undefined) this.#headers['X-OJS-Tenant'] = options.tenant;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    const retry = options.retry === false ? { maxRetries: 0 } : (options.retry ?? {});
    this.#retry = {
      maxRetries: retry.maxRetries ?? 5,
      initialDelayMs: retry.initialDelayMs ?? 100,
      maxDelayMs: retry.maxDelayMs ?? 5_000,
      coefficient: retry.coefficient ?? 2,
    };
    if (options.fetch === undefined && isNode()) {
      this.#node = new NodeHttp({ maxSockets: options.maxSockets });
      this.#send = this.#node.send;
    } else {
      const fetchImpl = options.fetch ?? globalThis.fetch;
      if (typeof fetchImpl !== 'function') {
        throw new TypeError('No fetch implementation: use Node >= 18 or pass options.fetch.');
      }
      this.#send = fetchSend(fetchImpl);
    }
    this.#random = options.random ?? Math.random;
    this.#streamFetch = options.fetch ?? globalThis.fetch;
    this.#coalescePushes = options.coalescePushes ?? true;
  }

  // ---------------------------------------------------------------- core request loop

  /**
   * Runs one call with retries. `recover` turns an error seen after an
   * earlier attempt that may have been applied into a result (e.g. 409
   * duplicate on a repeated PUSH), or returns undefined to rethrow.
   */
  async #call(
    spec: CallSpec,
    recover?: (error: OjsError) => Promise<CallResult | undefined>,
  ): Promise<CallResult> {
    let maybeApplied = false;
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await this.#once(spec);
        if (maybeApplied) result.repeated = true;
        return result;
      } catch (caught) {
        if (!(caught instanceof AttemptFailure)) throw caught;
        const { error } = caught;
        error.attempt = attempt + 1;
        if (maybeApplied && recover !== undefined) {
          const recovered = await recover(error);
          if (recovered !== undefined) return recovered;
        }
        maybeApplied ||= caught.maybeApplied;
        const retryable =
          error.retryable &&
          !isNeverAutoRetried(error) &&
          (spec.idempotent || !caught.maybeApplied) &&
          attempt < this.#retry.maxRetries;
        if (!retryable) throw error;
        const backoff = Math.min(
          this.#retry.maxDelayMs,
          this.#retry.initialDelayMs * this.#retry.coefficient ** attempt,
        );
        const jittered = Math.min(this.#retry.maxDelayMs, backoff * (0.5 + this.#random()));
        await sleep(Math.max(jittered, caught.retryAfterMs ?? 0), spec.signal);
      }
    }
  }

  async #once(spec: CallSpec): Promise<CallResult> {
    const context = {
      operation: spec.operation,
      jobId: spec.jobId,
      queue: spec.queue,
    };
    let url = `${this.baseUrl}${spec.path}`;
    if (spec.query !== undefined) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(spec.query)) {
        if (value !== undefined && value !== '') params.set(key, String(value));
      }
      const text = params.toString();
      if (text !== '') url += `?${text}`;
    }
    const headers: Record<string, string> = { ...this.#headers };
    let body: string | undefined;
    if (spec.body !== undefined) {
      headers['Content-Type'] = OJS_MEDIA_TYPE;
      try {
        body = JSON.stringify(spec.body);
      } catch (error) {
        throw new OjsError(`The request body cannot be serialised as JSON: ${String(error)}`, {
          ...context,
          code: 'serialization_error',
          cause: error,
        });
      }
    }

    const timeoutMs = spec.timeoutMs ?? this.#timeoutMs;
    if (spec.signal?.aborted) throw abortReason(spec.signal);
    let response: SendResponse;
    try {
      response = await this.#send(url, {
        method: spec.method,
        headers,
        body,
        timeoutMs,
        signal: spec.signal,
      });
    } catch (error) {
      if (spec.signal?.aborted) throw abortReason(spec.signal);
      if (error instanceof SendTimeout) {
        throw new AttemptFailure(
          new TimeoutError(`${spec.operation}: no response within ${timeoutMs} ms.`, {
            ...context,
            code: 'request_timeout',
            retryable: true,
            cause: error.cause ?? error,
          }),
          true,
        );
      }
      const code = errorCode(error);
      const notSent = code !== undefined && NOT_SENT_CODES.has(code);
      throw new AttemptFailure(
        new ConnectionError(
          `${spec.operation}: cannot reach ${this.baseUrl}${code ? ` (${code})` : ''}: ${(error as Error).message ?? String(error)}`,
          { ...context, code: 'connection_error', retryable: true, cause: error },
        ),
        !notSent,
      );
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (spec.signal?.aborted) throw abortReason(spec.signal);
      throw new AttemptFailure(
        error instanceof SendTimeout
          ? new TimeoutError(`${spec.operation}: response not read within ${timeoutMs} ms.`, {
              ...context,
              code: 'request_timeout',
              retryable: true,
              cause: error.cause ?? error,
            })
          : new ConnectionError(`${spec.operation}: the response was cut off.`, {
              ...context,
              code: 'connection_error',
              retryable: true,
              cause: error,
            }),
        true,
      );
    }
    let parsed: unknown;
    if (text.trim() !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    const requestId = response.headers.get('x-request-id') ?? undefined;
    if (response.status >= 400) {
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      const error = parseErrorResponse(response.status, parsed, {
        ...context,
        requestId,
        retryAfterMs,
      });
      // 429 and 503 are refusals: the server did not act. Others may have.
      const refused = response.status === 429 || response.status === 503;
      const wait =
        retryAfterMs ?? (response.status === 429 || response.status === 503 ? 1000 : undefined);
      throw new AttemptFailure(error, !refused && response.status >= 500, wait);
    }
    return {
      status: response.status,
      body: isObject(parsed) ? parsed : {},
      headers: response.headers,
    };
  }

  /** Ends the idle keep-alive connections (node:http); the transport stays usable. */
  async close(): Promise<void> {
    this.#node?.close();
  }

  // ---------------------------------------------------------------- system

  async manifest(options: RequestOptions = {}): Promise<Manifest> {
    const { body } = await this.#call({
      method: 'GET',
      path: '/ojs/manifest',
      idempotent: true,
      operation: 'manifest',
      signal: options.signal,
    });
    // Remembered so ackBatch and coalesced pushes need no manifest request of their own.
    this.#ackBatchPath = Promise.resolve(ackBatchPathOf(body as Manifest, this.baseUrl));
    this.#pushManyPath = Promise.resolve(
      endpointPathOf(body as Manifest, this.baseUrl, 'push_many'),
    );
    return body as Manifest;
  }

  async health(options: RequestOptions = {}): Promise<Obj> {
    const { body } = await this.#call({
      method: 'GET',
      path: '/ojs/v1/health',
      idempotent: true,
      operation: 'health',
      signal: options.signal,
    });
    return body;
  }

  // ---------------------------------------------------------------- jobs

  push(envelope: JobEnvelope, options: RequestOptions = {}): Promise<PushResult> {
    if (!this.#coalescePushes || options.signal !== undefined) {
      return this.#pushOne(envelope, options);
    }
    return new Promise<PushResult>((resolve, reject) =>
      this.#pushes.add({ envelope, resolve, reject }),
    );
  }

  #flushPushes(queue: QueuedPush[]): void {
    if (queue.length === 1) {
      const [only] = queue;
      this.#pushOne(only!.envelope).then(only!.resolve, only!.reject);
      return;
    }
    this.#resolvePushManyPath().then(
      (path) => {
        if (path === undefined) {
          for (const item of queue) this.#pushOne(item.envelope).then(item.resolve, item.reject);
          return;
        }
        for (let start = 0; start < queue.length; start += MAX_PUSH_MANY) {
          void this.#pushMany(path, queue.slice(start, start + MAX_PUSH_MANY));
        }
      },
      // No manifest now: each push on its own; the next turn asks again.
      () => {
        for (const item of queue) this.#pushOne(item.envelope).then(item.resolve, item.reject);
      },
    );
  }

  /** Many pushes in one request, each resolved or rejected as its own push would be. */
  async #pushMany(path: string, items: QueuedPush[]): Promise<void> {
    let results: unknown[];
    let repeated: boolean;
    try {
      const call = await this.#call({
        method: 'POST',
        path,
        body: { jobs: items.map((item) => toPushBody(item.envelope)) },
        idempotent: true,
        operation: 'enqueue',
      });
      results = Array.isArray(call.body.results) ? call.body.results : [];
      repeated = call.repeated === true;
    } catch (error) {
      // The server declared the endpoint but has no such route (a proxy, a
      // downgrade): nothing was stored; send these and later pushes singly.
      if (error instanceof OjsError && [404, 405, 501].includes(error.status)) {
        this.#pushManyPath = Promise.resolve(undefined);
        for (const item of items) this.#pushOne(item.envelope).then(item.resolve, item.reject);
        return;
      }
      for (const item of items) item.reject(error);
      return;
    }
    for (const [index, item] of items.entries()) {
      const { envelope } = item;
      const result = results[index];
      if (results.length !== items.length || !isObject(result)) {
        item.reject(
          new OjsError('The server sent no result for this push.', {
            code: 'invalid_response',
            operation: 'enqueue',
            jobId: envelope.id,
          }),
        );
        continue;
      }
      const status = typeof result.status === 'number' ? result.status : 0;
      if (status >= 200 && status < 300) {
        item.resolve(pushResult(status, result, envelope));
        continue;
      }
      const error = parseErrorResponse(
        status,
        { error: result.error },
        {
          operation: 'enqueue',
          jobId: envelope.id,
          queue: envelope.queue,
        },
      );
      // As for a single push: a repeated request whose first try landed.
      if (repeated && this.#landedBefore(error, envelope)) {
        this.getJob(envelope.id).then(
          (job) => item.resolve({ job, status: 'created' }),
          () => item.reject(error),
        );
        continue;
      }
      item.reject(error);
    }
  }

  /** A duplicate refusal of a repeated push that names our own job (or none). */
  #landedBefore(error: OjsError, envelope: JobEnvelope): boolean {
    if (!(error instanceof DuplicateJobError)) return false;
    const existing = error.existingJobId;
    return existing === undefined || existing === envelope.id;
  }

  #resolvePushManyPath(): Promise<string | undefined> {
    if (this.#pushManyPath === undefined) {
      const pending = this.manifest().then(
        (manifest) => endpointPathOf(manifest, this.baseUrl, 'push_many'),
        (error: unknown) => {
          if (this.#pushManyPath === pending) this.#pushManyPath = undefined;
          throw error;
        },
      );
      this.#pushManyPath = pending;
    }
    return this.#pushManyPath;
  }

  async #pushOne(envelope: JobEnvelope, options: RequestOptions = {}): Promise<PushResult> {
    const spec: CallSpec = {
      method: 'POST',
      path: '/ojs/v1/jobs',
      body: toPushBody(envelope),
      idempotent: true,
      operation: 'enqueue',
      jobId: envelope.id,
      queue: envelope.queue,
      signal: options.signal,
    };
    const { status, body } = await this.#call(spec, async (error) => {
      // A repeated PUSH whose first try landed: the job with our id exists.
      if (!this.#landedBefore(error, envelope)) return undefined;
      try {
        const job = await this.getJob(envelope.id, options);
        return { status: 201, body: { job }, headers: new Headers() };
      } catch {
        return undefined;
      }
    });
    return pushResult(status, body, envelope);
  }

  async pushBatch(envelopes: JobEnvelope[], options: RequestOptions = {}): Promise<Job[]> {
    const ids = new Set(envelopes.map((e) => e.id));
    const { body } = await this.#call(
      {
        method: 'POST',
        path: '/ojs/v1/jobs/batch',
        body: { jobs: envelopes.map(toPushBody) },
        idempotent: true,
        operation: 'enqueue_batch',
        signal: options.signal,
      },
      async (error) => {
        // The batch is atomic: a repeat refused as duplicate of one of our ids means it landed.
        if (!(error instanceof DuplicateJobError)) return undefined;
        const existing = error.existingJobId;
        if (existing === undefined || !ids.has(existing)) return undefined;
        const jobs: Job[] = [];
        for (const envelope of envelopes) jobs.push(await this.getJob(envelope.id, options));
        return { status: 201, body: { jobs }, headers: new Headers() };
      },
    );
    return Array.isArray(body.jobs) ? (body.jobs as Job[]) : [];
  }

  async getJob(id: string, options: RequestOptions = {}): Promise<Job> {
    const { body } = await this.#call({
      method: 'GET',
      path: `/ojs/v1/jobs/${encodeURIComponent(id)}`,
      idempotent: true,
      operation: 'get_job',
      jobId: id,
      signal: options.signal,
    });
    return asJob(body.job);
  }

  async cancelJob(id: string, options: RequestOptions = {}): Promise<Job> {
    const { body } = await this.#call(
      {
        method: 'DELETE',
        path: `/ojs/v1/jobs/${encodeURIComponent(id)}`,
        idempotent: true,
        operation: 'cancel',
        jobId: id,
        signal: options.signal,
      },
      async (error) => {
        if (!(error instanceof ConflictError)) return undefined;
        const job = await this.getJob(id, options);
        return job.state === 'cancelled'
          ? { status: 200, body: { job }, headers: new Headers() }
          : undefined;
      },
    );
    return asJob(body.job);
  }

  async activateJob(id: string, options: RequestOptions = {}): Promise<Job> {
    const { body } = await this.#call(
      {
        method: 'POST',
        path: `/ojs/v1/jobs/${encodeURIComponent(id)}/activate`,
        body: {},
        idempotent: true,
        operation: 'activate',
        jobId: id,
        signal: options.signal,
      },
      async (error) => {
        if (!(error instanceof ConflictError)) return undefined;
        const job = await this.getJob(id, options);
        return job.state !== 'pending'
          ? { status: 200, body: { job }, headers: new Headers() }
          : undefined;
      },
    );
    return asJob(body.job);
  }

  // ---------------------------------------------------------------- worker protocol

  async fetchJobs(request: FetchRequest, options: RequestOptions = {}): Promise<Job[]> {
    const { status, body } = await this.#call({
      method: 'POST',
      path: '/ojs/v1/workers/fetch',
      body: request,
      idempotent: false,
      operation: 'fetch',
      timeoutMs: this.#timeoutMs + (request.wait_ms ?? 0),
      signal: options.signal,
    });
    if (status === 204) return [];
    if (Array.isArray(body.jobs)) return body.jobs as Job[];
    return isObject(body.job) ? [asJob(body.job)] : [];
  }

  async ack(request: AckRequest, options: RequestOptions = {}): Promise<Obj> {
    const { body } = await this.#call(
      {
        method: 'POST',
        path: '/ojs/v1/workers/ack',
        body: request,
        idempotent: true,
        operation: 'ack',
        jobId: request.job_id,
        signal: options.signal,
      },
      async (error) => {
        // The first try landed: the job is already completed.
        if (!(error instanceof ConflictError) || error.details.current_state !== 'completed')
          return undefined;
        return {
          status: 200,
          body: { id: request.job_id, state: 'completed' },
          headers: new Headers(),
        };
      },
    );
    return body;
  }

  async nack(request: NackRequest, options: RequestOptions = {}): Promise<Obj> {
    const { body } = await this.#call(
      {
        method: 'POST',
        path: '/ojs/v1/workers/nack',
        body: request,
        idempotent: true,
        operation: 'nack',
        jobId: request.job_id,
        signal: options.signal,
      },
      async (error) => {
        if (!(error instanceof ConflictError)) return undefined;
        const state = error.details.current_state;
        if (state === 'active' || state === undefined) return undefined;
        return { status: 200, body: { id: request.job_id, state }, headers: new Headers() };
      },
    );
    return body;
  }

  /**
   * Batched ACK/NACK to the manifest's `endpoints.ack_batch` (read once, or
   * taken from the last `manifest()` call). Retried like ACK: after a try
   * that may have landed, an item refused as a conflict because it already
   * took effect (ACK: the job is completed; NACK: the job left `active`) is
   * reported as settled, as the single calls do.
   */
  async ackBatch(
    request: AckBatchRequest,
    options: RequestOptions = {},
  ): Promise<AckBatchResponse> {
    const path = await this.#resolveAckBatchPath(options);
    if (path === undefined) {
      throw new UnsupportedFeatureError(
        'The server does not declare a batched acknowledgement (manifest endpoints.ack_batch).',
        { code: 'unsupported', operation: 'ack_batch' },
      );
    }
    const { body, repeated } = await this.#call({
      method: 'POST',
      path,
      body: request,
      idempotent: true,
      operation: 'ack_batch',
      signal: options.signal,
    });
    return { results: parseAckBatchResults(body, request, repeated === true) };
  }

  #resolveAckBatchPath(options: RequestOptions): Promise<string | undefined> {
    if (this.#ackBatchPath === undefined) {
      const pending = this.manifest(options).then(
        (manifest) => ackBatchPathOf(manifest, this.baseUrl),
        (error: unknown) => {
          // Not cached: the next call asks again.
          if (this.#ackBatchPath === pending) this.#ackBatchPath = undefined;
          throw error;
        },
      );
      this.#ackBatchPath = pending;
    }
    return this.#ackBatchPath;
  }

  async heartbeat(
    request: HeartbeatRequest,
    options: RequestOptions = {},
  ): Promise<HeartbeatResponse> {
    const { body } = await this.#call({
      method: 'POST',
      path: '/ojs/v1/workers/heartbeat',
      body: request,
      idempotent: true,
      operation: 'heartbeat',
      signal: options.signal,
    });
    return parseHeartbeat(body);
  }

  // ---------------------------------------------------------------- queues

  async listQueues(query: ListOptions, options: RequestOptions = {}): Promise<Page<QueueInfo>> {
    const { body } = await this.#call({
      method: 'GET',
      path: '/ojs/v1/queues',
      query: { limit: query.limit, offset: query.offset, cursor: query.cursor },
      idempotent: true,
      operation: 'list_queues',
      signal: options.signal,
    });
    return parseQueuePage(body);
  }

  async queueStats(name: string, options: RequestOptions = {}): Promise<QueueStats> {
    const { body } = await this.#call({
      method: 'GET',
      path: `/ojs/v1/queues/${encodeURIComponent(name)}/stats`,
      idempotent: true,
      operation: 'queue_stats',
      queue: name,
      signal: options.signal,
    });
    return parseQueueStats(name, body);
  }

  async setQueuePaused(
    name: string,
    paused: boolean,
    options: RequestOptions = {},
  ): Promise<QueueInfo> {
    const { body } = await this.#call({
      method: 'POST',
      path: `/ojs/v1/queues/${encodeURIComponent(name)}/${paused ? 'pause' : 'resume'}`,
      body: {},
      idempotent: true,
      operation: paused ? 'pause_queue' : 'resume_queue',
      queue: name,
      signal: options.signal,
    });
    return parsePausedQueue(name, paused, body);
  }

  // ---------------------------------------------------------------- dead letter

  async listDeadLetter(
    query: ListOptions & { queue?: string },
    options: RequestOptions = {},
  ): Promise<Page<Job>> {
    const { body } = await this.#call({
      method: 'GET',
      path: '/ojs/v1/dead-letter',
      query: { queue: query.queue, limit: query.limit, offset: query.offset, cursor: query.cursor },
      idempotent: true,
      operation: 'list_dead_letter',
      queue: query.queue,
      signal: options.signal,
    });
    return parseJobPage(body);
  }

  async retryDeadLetter(id: string, options: RequestOptions = {}): Promise<Job> {
    const { body } = await this.#call({
      method: 'POST',
      path: `/ojs/v1/dead-letter/${encodeURIComponent(id)}/retry`,
      body: {},
      idempotent: false,
      operation: 'retry_dead_letter',
      jobId: id,
      signal: options.signal,
    });
    return asJob(body.job);
  }

  async deleteDeadLetter(id: string, options: RequestOptions = {}): Promise<void> {
    await this.#call(
      {
        method: 'DELETE',
        path: `/ojs/v1/dead-letter/${encodeURIComponent(id)}`,
        idempotent: true,
        operation: 'delete_dead_letter',
        jobId: id,
        signal: options.signal,
      },
      // A repeat of a delete that landed finds nothing to delete.
      async (error) =>
        error instanceof NotFoundError
          ? { status: 200, body: {}, headers: new Headers() }
          : undefined,
    );
  }

  // ---------------------------------------------------------------- cron

  async registerCron(cronBody: Obj, options: RequestOptions = {}): Promise<CronJob> {
    const name = String(cronBody.name);
    const { body } = await this.#call(
      {
        method: 'POST',
        path: '/ojs/v1/cron',
        body: cronBody,
        idempotent: true,
        operation: 'register_cron',
        signal: options.signal,
      },
      async (error) => {
        if (!(error instanceof ConflictError)) return undefined;
        const cron = await this.getCron(name, options);
        return { status: 201, body: { cron }, headers: new Headers() };
      },
    );
    return normalizeCron(body.cron ?? body.cron_job);
  }

  async listCron(options: RequestOptions = {}): Promise<CronJob[]> {
    const { body } = await this.#call({
      method: 'GET',
      path: '/ojs/v1/cron',
      idempotent: true,
      operation: 'list_cron',
      signal: options.signal,
    });
    const list = Array.isArray(body.crons)
      ? body.crons
      : Array.isArray(body.cron_jobs)
        ? body.cron_jobs
        : [];
    return list.map(normalizeCron);
  }

  async getCron(name: string, options: RequestOptions = {}): Promise<CronJob> {
    try {
      const { body } = await this.#call({
        method: 'GET',
        path: `/ojs/v1/cron/${encodeURIComponent(name)}`,
        idempotent: true,
        operation: 'get_cron',
        signal: options.signal,
      });
      return normalizeCron(body.cron ?? body.cron_job);
    } catch (error) {
      // Servers without GET /cron/:name: find it in the list.
      if (!(error instanceof NotFoundError) || error.details.resource_type !== 'route') throw error;
      const found = (await this.listCron(options)).find((c) => c.name === name);
      if (found === undefined) {
        throw new NotFoundError(`Cron job '${name}' not found.`, {
          code: 'not_found',
          status: 404,
          details: { resource_type: 'cron', resource_id: name },
          operation: 'get_cron',
        });
      }
      return found;
    }
  }

  async unregisterCron(name: string, options: RequestOptions = {}): Promise<void> {
    await this.#call(
      {
        method: 'DELETE',
        path: `/ojs/v1/cron/${encodeURIComponent(name)}`,
        idempotent: true,
        operation: 'unregister_cron',
        signal: options.signal,
      },
      async (error) =>
        error instanceof NotFoundError
          ? { status: 200, body: {}, headers: new Headers() }
          : undefined,
    );
  }

  // ---------------------------------------------------------------- workflows

  async createWorkflow(workflowBody: Obj, options: RequestOptions = {}): Promise<Workflow> {
    const { body } = await this.#call({
      method: 'POST',
      path: '/ojs/v1/workflows',
      body: workflowBody,
      idempotent: false,
      operation: 'create_workflow',
      signal: options.signal,
    });
    return body.workflow as Workflow;
  }

  async getWorkflow(id: string, options: RequestOptions = {}): Promise<Workflow> {
    const { body } = await this.#call({
      method: 'GET',
      path: `/ojs/v1/workflows/${encodeURIComponent(id)}`,
      idempotent: true,
      operation: 'get_workflow',
      signal: options.signal,
    });
    return body.workflow as Workflow;
  }

  async cancelWorkflow(id: string, options: RequestOptions = {}): Promise<Workflow> {
    const { body } = await this.#call(
      {
        method: 'DELETE',
        path: `/ojs/v1/workflows/${encodeURIComponent(id)}`,
        idempotent: true,
        operation: 'cancel_workflow',
        signal: options.signal,
      },
      async (error) => {
        if (!(error instanceof ConflictError)) return undefined;
        const workflow = await this.getWorkflow(id, options);
        return workflow.state === 'cancelled'
          ? { status: 200, body: { workflow }, headers: new Headers() }
          : undefined;
      },
    );
    return body.workflow as Workflow;
  }

  // ---------------------------------------------------------------- events

  async listEvents(query: EventQuery, options: RequestOptions = {}): Promise<EventPage> {
    const { body } = await this.#call({
      method: 'GET',
      path: '/ojs/v1/events',
      query: {
        types: query.types?.join(','),
        queues: query.queues?.join(','),
        job_types: query.jobTypes?.join(','),
        after: query.after,
        limit: query.limit,
      },
      idempotent: true,
      operation: 'list_events',
      signal: options.signal,
    });
    return parseEventPage(body);
  }

  /** Server-Sent Events as they happen (event-stream.ts), reconnecting on its own. */
  streamEvents(query: EventStreamQuery, options: EventStreamOptions = {}): AsyncIterable<OjsEvent> {
    if (typeof this.#streamFetch !== 'function') {
      throw new UnsupportedFeatureError('Event streams need a fetch implementation.', {
        code: 'unsupported',
        operation: 'stream_events',
      });
    }
    return streamEventsOverHttp(this.#streamFetch, this.baseUrl, this.#headers, query, options);
  }

  // ---------------------------------------------------------------- progress, admin

  async progress(
    jobId: string,
    update: ProgressUpdate,
    options: RequestOptions = {},
  ): Promise<JobProgress> {
    const { body } = await this.#call({
      method: 'PUT',
      path: `/ojs/v1/jobs/${encodeURIComponent(jobId)}/progress`,
      body: update,
      // A repeat stores the same value again (progress never goes down).
      idempotent: true,
      operation: 'progress',
      jobId,
      signal: options.signal,
    });
    return body as unknown as JobProgress;
  }

  async getProgress(jobId: string, options: RequestOptions = {}): Promise<JobProgress> {
    const { body } = await this.#call({
      method: 'GET',
      path: `/ojs/v1/jobs/${encodeURIComponent(jobId)}/progress`,
      idempotent: true,
      operation: 'get_progress',
      jobId,
      signal: options.signal,
    });
    return body as unknown as JobProgress;
  }

  async admin(call: AdminCall, options: RequestOptions = {}): Promise<Obj> {
    const { body } = await this.#call({
      method: call.method,
      path: `/ojs/v1${call.path}`,
      query: call.query,
      body: call.body,
      idempotent: call.idempotent,
      operation: `admin ${call.method} ${call.path}`,
      signal: options.signal,
    });
    return body;
  }
}

// ---------------------------------------------------------------- wire conversions shared with other transports

/**
 * The request path of the manifest's `endpoints.ack_batch`: a path from the
 * server root (`/ojs/v1/workers/ack/batch`), one relative to
 * `endpoints.base_url`, or an absolute URL on this server. undefined when
 * not declared (or on another origin, which this transport does not follow).
 */
export function ackBatchPathOf(manifest: Manifest, baseUrl: string): string | undefined {
  return endpointPathOf(manifest, baseUrl, 'ack_batch');
}

/** The request path of one of the manifest's `endpoints` (see ackBatchPathOf). */
export function endpointPathOf(
  manifest: Manifest,
  baseUrl: string,
  name: string,
): string | undefined {
  const endpoints = isObject(manifest.endpoints) ? manifest.endpoints : {};
  const declared = endpoints[name];
  if (typeof declared !== 'string' || declared.trim() === '') return undefined;
  const value = declared.trim();
  if (/^https?:\/\//i.test(value)) {
    return value.startsWith(`${baseUrl}/`) ? value.slice(baseUrl.length) : undefined;
  }
  if (value.startsWith('/')) return value;
  const base = typeof endpoints.base_url === 'string' ? endpoints.base_url : '/ojs/v1';
  return `${base.replace(/\/+$/, '')}/${value}`;
}

const ITEM_STATUS: Record<string, number> = { conflict: 409, not_found: 404, invalid: 400 };

/**
 * Per-item results of a batched acknowledgement, aligned with the request
 * (acks, then nacks). Results are matched by position when the server sent
 * one per item, else by job id; an item without a result is `invalid`.
 * `repeated`: the request was sent again after a try that may have landed,
 * so a conflict saying the item already took effect counts as settled.
 */
export function parseAckBatchResults(
  body: Obj,
  request: AckBatchRequest,
  repeated: boolean,
): AckBatchItemResult[] {
  const items: Array<{ kind: 'ack' | 'nack'; job_id: string }> = [
    ...request.acks.map((a) => ({ kind: 'ack' as const, job_id: a.job_id })),
    ...request.nacks.map((n) => ({ kind: 'nack' as const, job_id: n.job_id })),
  ];
  const raw = Array.isArray(body.results) ? body.results.filter(isObject) : [];
  const byPosition = raw.length === items.length;
  const unused = byPosition ? [] : [...raw];
  return items.map((item, index) => {
    let result: Obj | undefined;
    if (byPosition) result = raw[index];
    else {
      const at = unused.findIndex((r) => r.job_id === item.job_id);
      if (at >= 0) result = unused.splice(at, 1)[0];
    }
    const operation = item.kind;
    if (result === undefined) {
      return {
        job_id: item.job_id,
        status: 'invalid',
        error: new OjsError('The server sent no result for this item of the batch.', {
          code: 'invalid_response',
          operation,
          jobId: item.job_id,
        }),
      };
    }
    if (result.status === 'ok') {
      return {
        job_id: item.job_id,
        status: 'ok',
        state: typeof result.state === 'string' ? result.state : 'unknown',
        ...(typeof result.attempt === 'number' ? { attempt: result.attempt } : {}),
      };
    }
    const status =
      result.status === 'conflict' || result.status === 'not_found' ? result.status : 'invalid';
    const error = parseErrorResponse(
      ITEM_STATUS[status]!,
      { error: result.error },
      {
        operation,
        jobId: item.job_id,
      },
    );
    if (repeated && error instanceof ConflictError) {
      const state = error.details.current_state;
      const landed =
        item.kind === 'ack'
          ? state === 'completed'
          : typeof state === 'string' && state !== 'active';
      if (landed) return { job_id: item.job_id, status: 'ok', state: state as string };
    }
    return { job_id: item.job_id, status, error };
  });
}

const ENVELOPE_OPTION_FIELDS: Record<string, string> = {
  queue: 'queue',
  priority: 'priority',
  timeout_ms: 'timeout_ms',
  visibility_timeout_ms: 'visibility_timeout_ms',
  // HB's name; OA and every server that follows it accept it as an alias of scheduled_at.
  scheduled_at: 'delay_until',
  expires_at: 'expires_at',
  retry: 'retry',
  unique: 'unique',
  tags: 'tags',
  pending: 'pending',
  rate_limit: 'rate_limit',
};

/** Envelope -> PUSH body: `{id, type, args, meta, schema, options:{...}, ...extensions}`. */
export function toPushBody(envelope: JobEnvelope): Obj {
  const body: Obj = {};
  const options: Obj = {};
  for (const [key, value] of Object.entries(envelope)) {
    if (value === undefined) continue;
    const option = ENVELOPE_OPTION_FIELDS[key];
    if (option !== undefined) options[option] = value;
    else body[key] = value;
  }
  body.options = options;
  return body;
}

export function parseHeartbeat(body: Obj): HeartbeatResponse {
  const raw =
    typeof body.directive === 'string' && body.directive !== '' ? body.directive : body.state;
  const directive = raw === 'quiet' || raw === 'terminate' ? raw : 'running';
  const ids = (value: unknown) =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : undefined;
  return {
    directive,
    jobsExtended: ids(body.jobs_extended),
    jobsCancelled: ids(body.jobs_cancelled) ?? [],
    raw: body,
  };
}

/** GET /queues: a page of queues, each with `paused` and `status`. */
export function parseQueuePage(body: Obj): Page<QueueInfo> {
  const queues = Array.isArray(body.queues) ? (body.queues as Obj[]) : [];
  return {
    items: queues.map((q) => {
      const paused = q.paused === true || q.status === 'paused';
      return { ...q, name: String(q.name), paused, status: paused ? 'paused' : 'active' };
    }),
    pagination: pagination(body),
  };
}

/** POST /queues/:name/pause or /resume: the queue as it now is. */
export function parsePausedQueue(name: string, paused: boolean, body: Obj): QueueInfo {
  const queue = isObject(body.queue) ? body.queue : {};
  const isPaused =
    typeof queue.paused === 'boolean' ? queue.paused : body.status === 'paused' || paused;
  return { ...queue, name, paused: isPaused, status: isPaused ? 'paused' : 'active' };
}

/** A page of jobs under `jobs` (GET /dead-letter). */
export function parseJobPage(body: Obj): Page<Job> {
  return {
    items: Array.isArray(body.jobs) ? (body.jobs as Job[]) : [],
    pagination: pagination(body),
  };
}

/** GET /events: the page, the cursor to continue from, whether more wait. */
export function parseEventPage(body: Obj): EventPage {
  const events = Array.isArray(body.events) ? (body.events as EventPage['events']) : [];
  return {
    events,
    cursor: typeof body.cursor === 'string' ? body.cursor : (events.at(-1)?.id ?? null),
    hasMore: body.has_more === true,
  };
}

/** The union of the HB (`stats`) and OA (`queue` object) stats shapes. */
export function parseQueueStats(name: string, body: Obj): QueueStats {
  const queue = isObject(body.queue) ? body.queue : {};
  const stats = isObject(body.stats) ? body.stats : {};
  const out: QueueStats = {
    name: typeof queue.name === 'string' ? queue.name : name,
    paused: queue.paused === true || body.status === 'paused' || queue.status === 'paused',
    raw: body,
  };
  for (const field of QUEUE_COUNT_STATES) {
    const value = typeof queue[field] === 'number' ? queue[field] : stats[field];
    if (typeof value === 'number') out[field] = value;
  }
  return out;
}
