/**
 * In-process mode: the same OjsClient and OjsWorker API over an `Engine`
 * from `@ojs/engine` running inside the application, with no HTTP hop. The
 * engine works on any store (SQLite, PostgreSQL, ...), so this is also a way
 * to share one database between processes without a server.
 *
 *   import { Engine } from '@ojs/engine';
 *   import { InProcessTransport } from '@ojs/sdk/in-process';
 *   const engine = new Engine({ store });  await store.init();  engine.start();
 *   const transport = new InProcessTransport(engine);
 *   const client = new OjsClient({ transport });
 *   const worker = new OjsWorker({ transport, concurrency: 16 });
 *
 * The engine is only referenced through `import type`, so importing the SDK
 * never loads it. Answers are the HTTP binding's response bodies, built by
 * the engine's own builders (`engine.wire`, engine wire-responses.ts) and
 * read by the parsers the HTTP transport uses, so both transports answer
 * alike; engine errors become the same typed OjsError subclasses as HTTP
 * error bodies.
 */
import type { Engine } from '@ojs/engine';
import { BackendError, NotFoundError, OjsError, parseErrorResponse } from './errors.ts';
import type { EventStreamOptions, EventStreamQuery } from './event-stream.ts';
import {
  parseAckBatchResults,
  parseEventPage,
  parseHeartbeat,
  parseJobPage,
  parsePausedQueue,
  parseQueuePage,
  parseQueueStats,
  toPushBody,
} from './http.ts';
import { TurnBatch } from './turn-batch.ts';
import type {
  AckBatchRequest,
  AckBatchResponse,
  AckRequest,
  CronJob,
  EventPage,
  EventQuery,
  FetchRequest,
  HeartbeatRequest,
  HeartbeatResponse,
  Job,
  JobEnvelope,
  JobProgress,
  ListOptions,
  Manifest,
  NackRequest,
  OjsEvent,
  Page,
  ProgressUpdate,
  PushResult,
  QueueInfo,
  QueueStats,
  RequestOptions,
  Transport,
  Workflow,
} from './types.ts';

type Obj = Record<string, unknown>;
type JobRecord = Awaited<ReturnType<Engine['getJob']>>;
type WorkflowRecord = Awaited<ReturnType<Engine['getWorkflow']>>;
type CronRecord = Awaited<ReturnType<Engine['cron']['get']>>;

/** Engine records projected exactly as the server projects them (the engine exposes its wire functions). */
function copy<T>(value: unknown): T {
  // Records are live engine objects: hand out a copy.
  return structuredClone(value) as T;
}

/** Engine errors carry `code`, `status` and `details` like the HTTP body: map them the same way. */
function toSdkError(error: unknown, operation: string): unknown {
  if (error instanceof OjsError) return error;
  if (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'string' &&
    typeof (error as { status?: unknown }).status === 'number'
  ) {
    const e = error as {
      code: string;
      status: number;
      message?: string;
      details?: Obj;
      retryable?: boolean;
    };
    // What HTTP sends as Retry-After (a 429 or 503 that says when to come back).
    const after = e.details?.retry_after_seconds;
    const mapped = parseErrorResponse(
      e.status,
      { error: { code: e.code, message: e.message, details: e.details, retryable: e.retryable } },
      typeof after === 'number' && (e.status === 429 || e.status === 503)
        ? { operation, retryAfterMs: after * 1000 }
        : { operation },
    );
    if (error instanceof Error && error.stack !== undefined) mapped.stack = error.stack;
    return mapped;
  }
  if (error instanceof Error && error.name === 'AbortError') return error;
  return new BackendError(
    `${operation} failed: ${error instanceof Error ? error.message : String(error)}`,
    {
      code: 'internal_error',
      status: 500,
      operation,
      cause: error,
      retryable: false,
    },
  );
}

export interface InProcessTransportOptions {
  /** Manifest to report (default: built from what the engine offers). */
  manifest?: Manifest;
  /**
   * Enqueue the pushes made in one event-loop turn (e.g. many concurrent
   * `enqueue` calls) with one `engine.enqueueMany`: one store transaction
   * instead of one each, every push still answered on its own (default
   * true). A lone push goes through `engine.enqueue`.
   */
  coalescePushes?: boolean;
  /**
   * The tenant this client or worker acts for (ext-multi-tenancy), as the
   * X-OJS-Tenant header over HTTP: every operation is scoped to it.
   */
  tenant?: string;
}

type EnqueueOutcome = Awaited<ReturnType<Engine['enqueue']>>;

interface QueuedPush {
  body: unknown;
  resolve: (outcome: EnqueueOutcome) => void;
  reject: (error: unknown) => void;
}

export class InProcessTransport implements Transport {
  readonly kind = 'in-process';
  /** engine.fetch returns what it claimed even when aborted, so aborting never strands jobs. */
  readonly abortableFetch = true;
  readonly engine: Engine;
  readonly #manifest: Manifest | undefined;
  readonly #coalescePushes: boolean;
  /** The tenant scope handed to every engine operation (undefined: all tenants). */
  readonly #tenant: { id: string } | undefined;
  readonly #createdAt = Date.now();
  /** Pushes of this turn, enqueued together after it. */
  readonly #pushes = new TurnBatch<QueuedPush>((queue) => this.#flushPushes(queue));

  #job(record: JobRecord): Job {
    return copy<Job>(this.engine.wire.job(record));
  }

  /** The `job` of a response body the engine built (wire-responses.ts). */
  #jobOf(body: Obj): Job {
    return copy<Job>(body.job);
  }

  #workflow(record: WorkflowRecord, jobs?: JobRecord[]): Workflow {
    return copy<Workflow>(this.engine.wire.workflow(record, jobs));
  }

  #cron(record: CronRecord): CronJob {
    return copy<CronJob>(this.engine.wire.cron(record));
  }

  constructor(engine: Engine, options: InProcessTransportOptions = {}) {
    this.engine = engine;
    this.#manifest = options.manifest;
    this.#tenant = options.tenant === undefined ? undefined : { id: options.tenant };
    // An engine that predates enqueueMany gets one enqueue per push.
    this.#coalescePushes =
      (options.coalescePushes ?? true) && typeof engine.enqueueMany === 'function';
  }

  async #do<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw toSdkError(error, operation);
    }
  }

  /**
   * The engine's capabilities (engine capabilities.ts) as this transport
   * serves them (the operations API, push-many, metrics and the WebSocket
   * are the HTTP binding's).
   */
  async manifest(): Promise<Manifest> {
    if (this.#manifest !== undefined) return this.#manifest;
    return this.engine.wire.manifest(this.engine.capabilities(), {
      protocols: ['in-process'],
      mode: 'in-process',
      // The same path the server declares; in-process it only says "supported".
      endpoints: { ack_batch: '/ojs/v1/workers/ack/batch' },
    }) as Manifest;
  }

  /** GET /ojs/v1/health's body; the store's own error is shown (the application owns the store). */
  async health(): Promise<Obj> {
    return this.engine.wire.healthResponse(await this.engine.health(), {
      backend: this.engine.store.backend,
      uptimeSeconds: Math.floor((Date.now() - this.#createdAt) / 1000),
      showError: true,
    });
  }

  /**
   * The request limits the HTTP binding applies to every body (depth,
   * storable strings, finite numbers: core limits.ts), so a value refused
   * over HTTP is refused here too, before any store.
   */
  #checked<T>(body: T): T {
    this.engine.wire.checkRequest?.(body);
    return body;
  }

  push(envelope: JobEnvelope): Promise<PushResult> {
    return this.#do('enqueue', async () => {
      const body = this.#checked(toPushBody(envelope));
      const result = this.#coalescePushes
        ? await new Promise<EnqueueOutcome>((resolve, reject) =>
            this.#pushes.add({ body, resolve, reject }),
          )
        : await this.engine.enqueue(body, this.#tenant);
      if (result.status === 'dropped') return { job: null, status: 'dropped' };
      return { job: this.#job(result.job), status: result.status };
    });
  }

  /**
   * The pushes of one turn go to the engine together: concurrent producers
   * on PostgreSQL otherwise pay one transaction, one commit and one NOTIFY
   * each. Outcomes are per push, in order, as if each had been sent alone
   * one after the other.
   */
  #flushPushes(queue: QueuedPush[]): void {
    if (queue.length === 1) {
      const [only] = queue;
      this.engine.enqueue(only!.body, this.#tenant).then(only!.resolve, only!.reject);
      return;
    }
    this.engine
      .enqueueMany(
        queue.map((item) => item.body),
        this.#tenant,
      )
      .then(
        (outcomes) => {
          for (const [index, item] of queue.entries()) {
            const outcome = outcomes[index]!;
            if (outcome.status === 'error') item.reject(outcome.error);
            else item.resolve(outcome);
          }
        },
        // The store failed: every push of the group fails with it, as each alone would have.
        (error: unknown) => {
          for (const item of queue) item.reject(error);
        },
      );
  }

  pushBatch(envelopes: JobEnvelope[]): Promise<Job[]> {
    return this.#do('enqueue_batch', async () => {
      const jobs = await this.engine.enqueueBatch(
        this.#checked(envelopes.map(toPushBody)),
        {},
        this.#tenant,
      );
      return copy<Job[]>(this.engine.wire.batchPushResponse(jobs).jobs);
    });
  }

  getJob(id: string): Promise<Job> {
    return this.#do('get_job', async () => this.#job(await this.engine.getJob(id, this.#tenant)));
  }

  cancelJob(id: string): Promise<Job> {
    return this.#do('cancel', async () => {
      const { before, after } = await this.engine.cancelJob(id, undefined, this.#tenant);
      return this.#jobOf(this.engine.wire.cancelResponse(before, after));
    });
  }

  activateJob(id: string): Promise<Job> {
    return this.#do('activate', async () =>
      this.#jobOf(this.engine.wire.activateResponse(await this.engine.activate(id, this.#tenant))),
    );
  }

  fetchJobs(request: FetchRequest, options: RequestOptions = {}): Promise<Job[]> {
    return this.#do('fetch', async () => {
      const jobs = await this.engine.fetch({
        queues: request.queues,
        count: request.count,
        workerId: request.worker_id,
        visibilityTimeoutMs: request.visibility_timeout_ms,
        waitMs: request.wait_ms,
        handlers: this.engine.wire.handlers(request.handlers),
        signal: options.signal,
        tenant: this.#tenant?.id,
        pool: request.pool,
      });
      return copy<Job[]>(this.engine.wire.fetchResponse(jobs).jobs);
    });
  }

  ack(request: AckRequest): Promise<Obj> {
    return this.#do('ack', async () => {
      this.#checked(request);
      const job = await this.engine.ack({
        jobId: request.job_id,
        result: request.result,
        workerId: request.worker_id,
        attempt: request.attempt,
        tenant: this.#tenant?.id,
      });
      return copy<Obj>(this.engine.wire.ackResponse(job));
    });
  }

  nack(request: NackRequest): Promise<Obj> {
    return this.#do('nack', async () => {
      this.#checked(request);
      const job = await this.engine.nack({
        jobId: request.job_id,
        error: request.error,
        requeue: request.requeue,
        workerId: request.worker_id,
        attempt: request.attempt,
        tenant: this.#tenant?.id,
      });
      return copy<Obj>(this.engine.wire.nackResponse(job));
    });
  }

  /** engine.settleBatch: each item fenced and settled on its own, results in request order. */
  ackBatch(request: AckBatchRequest): Promise<AckBatchResponse> {
    return this.#do('ack_batch', async () => {
      this.#checked(request);
      const outcomes = await this.engine.settleBatch({
        acks: request.acks.map((a) => ({
          jobId: a.job_id,
          result: a.result,
          workerId: a.worker_id,
          attempt: a.attempt,
          tenant: this.#tenant?.id,
        })),
        nacks: request.nacks.map((n) => ({
          jobId: n.job_id,
          error: n.error,
          requeue: n.requeue,
          workerId: n.worker_id,
          attempt: n.attempt,
          tenant: this.#tenant?.id,
        })),
      });
      // No copy: the items are built fresh from strings and numbers (a batch ACK is the drain's hot path).
      const body = this.engine.wire.ackBatchResponse(outcomes) as Obj;
      return { results: parseAckBatchResults(body, request, false) };
    });
  }

  heartbeat(request: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.#do('heartbeat', async () => {
      const result = await this.engine.heartbeat({
        workerId: request.worker_id,
        jobIds: request.active_job_ids,
        visibilityTimeoutMs: request.visibility_timeout_ms,
        tenant: this.#tenant?.id,
        // The registry (and a quiet worker's empty fetches) see the same as over HTTP.
        workerState: request.state,
        info: {
          hostname: request.hostname,
          pid: request.pid,
          queues: request.queues,
          concurrency: request.concurrency,
          pool: request.pool,
        },
      });
      return parseHeartbeat(copy<Obj>(this.engine.wire.heartbeatResponse(result)));
    });
  }

  listQueues(query: ListOptions): Promise<Page<QueueInfo>> {
    return this.#do('list_queues', async () => {
      const all = await this.engine.listQueues();
      const body = this.engine.wire.queuePageResponse(all, query.limit ?? 50, query.offset ?? 0);
      return parseQueuePage(copy<Obj>(body));
    });
  }

  queueStats(name: string): Promise<QueueStats> {
    return this.#do('queue_stats', async () => {
      const stats = await this.engine.queueStats(name, this.#tenant);
      const body = this.engine.wire.queueStatsResponse(stats, this.engine.now());
      return parseQueueStats(name, copy<Obj>(body));
    });
  }

  setQueuePaused(name: string, paused: boolean): Promise<QueueInfo> {
    return this.#do(paused ? 'pause_queue' : 'resume_queue', async () => {
      const info = await this.engine.setQueuePaused(name, paused);
      const body = this.engine.wire.queuePausedResponse(info.name, paused, this.engine.now());
      return parsePausedQueue(name, paused, copy<Obj>(body));
    });
  }

  listDeadLetter(query: ListOptions & { queue?: string }): Promise<Page<Job>> {
    return this.#do('list_dead_letter', async () => {
      const limit = query.limit ?? 50;
      const offset = query.offset ?? 0;
      const page = await this.engine.listDeadLetter(query.queue, limit, offset, this.#tenant);
      return parseJobPage(copy<Obj>(this.engine.wire.deadLetterPageResponse(page, limit, offset)));
    });
  }

  retryDeadLetter(id: string): Promise<Job> {
    return this.#do('retry_dead_letter', async () =>
      this.#jobOf(
        this.engine.wire.deadLetterRetryResponse(
          await this.engine.retryDeadLetter(id, this.#tenant),
        ),
      ),
    );
  }

  deleteDeadLetter(id: string): Promise<void> {
    return this.#do('delete_dead_letter', () => this.engine.deleteDeadLetter(id, this.#tenant));
  }

  registerCron(body: Obj): Promise<CronJob> {
    return this.#do('register_cron', async () =>
      this.#cron((await this.engine.cron.register(this.#checked(body), this.#tenant)).cron),
    );
  }

  listCron(): Promise<CronJob[]> {
    return this.#do('list_cron', async () =>
      (await this.engine.store.listCrons()).map((c) => this.#cron(c)),
    );
  }

  getCron(name: string): Promise<CronJob> {
    return this.#do('get_cron', async () => this.#cron(await this.engine.cron.get(name)));
  }

  unregisterCron(name: string): Promise<void> {
    return this.#do('unregister_cron', async () => {
      await this.engine.cron.delete(name);
    });
  }

  createWorkflow(body: Obj): Promise<Workflow> {
    return this.#do('create_workflow', async () =>
      this.#workflow(await this.engine.createWorkflow(this.#checked(body), this.#tenant)),
    );
  }

  getWorkflow(id: string): Promise<Workflow> {
    return this.#do('get_workflow', async () => {
      const workflow = await this.engine.getWorkflow(id, this.#tenant);
      return this.#workflow(workflow, await this.engine.workflowJobs(workflow));
    });
  }

  cancelWorkflow(id: string): Promise<Workflow> {
    return this.#do('cancel_workflow', async () =>
      this.#workflow(await this.engine.cancelWorkflow(id, this.#tenant)),
    );
  }

  listEvents(query: EventQuery): Promise<EventPage> {
    return this.#do('list_events', async () => {
      const limit = query.limit ?? 100;
      const events = await this.engine.listEvents(
        {
          types: query.types,
          queues: query.queues,
          jobTypes: query.jobTypes,
          after: query.after,
          limit: limit + 1,
        },
        this.#tenant,
      );
      return parseEventPage(
        copy<Obj>(this.engine.wire.eventPageResponse(events, limit, query.after)),
      );
    });
  }

  /**
   * Live events from the engine's event log (engine/src/event-tail.ts), as
   * the server streams them: a job stream starts with its state and ends
   * once the job finished.
   */
  async *streamEvents(
    query: EventStreamQuery,
    options: EventStreamOptions = {},
  ): AsyncGenerator<OjsEvent> {
    const filter = {
      types: query.types,
      queues: query.queues,
      jobTypes: query.jobTypes,
      tenant: this.#tenant?.id,
    };
    let subject: string | undefined;
    let from: { after: string | undefined } | undefined;
    if (query.jobId !== undefined) {
      // The engine reads the tail's start before the snapshot (never skips the job's end).
      const { job, after, start } = await this.#do('stream_events', () =>
        this.engine.openJobStream(query.jobId!, this.#tenant),
      );
      from = { after };
      yield copy<OjsEvent>(start.event);
      if (start.ends) return;
      subject = job.id;
      filter.queues = [job.queue];
    } else if (query.queue !== undefined) {
      const queues = await this.engine.listQueues();
      if (!queues.some((q) => q.name === query.queue)) {
        throw new NotFoundError(`Queue '${query.queue}' not found.`, {
          code: 'not_found',
          status: 404,
          operation: 'stream_events',
        });
      }
      filter.queues = [query.queue];
    }
    const controller = new AbortController();
    const abort = () => controller.abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    try {
      const tail = { ...filter, subject };
      const after =
        query.after ?? (from !== undefined ? from.after : await this.engine.events.latestId(tail));
      for await (const events of this.engine.events.follow(tail, after, controller.signal)) {
        for (const event of events) {
          yield copy<OjsEvent>(event);
          if (subject !== undefined && this.engine.wire.JOB_STREAM_ENDS.has(event.type)) return;
        }
      }
    } finally {
      options.signal?.removeEventListener('abort', abort);
      controller.abort();
    }
  }

  progress(jobId: string, update: ProgressUpdate): Promise<JobProgress> {
    return this.#do('progress', async () =>
      copy<JobProgress>(
        this.engine.wire.progress(await this.engine.progress(jobId, update, this.#tenant)),
      ),
    );
  }

  getProgress(jobId: string): Promise<JobProgress> {
    return this.#do('get_progress', async () =>
      copy<JobProgress>(this.engine.wire.progress(await this.engine.getJob(jobId, this.#tenant))),
    );
  }
}
