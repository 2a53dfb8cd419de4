/**
 * The built-in worker of the seed format: the nine standard test handlers (seed §5.4) executed
 * over the plain HTTP worker protocol (`POST /ojs/v1/workers/fetch` with `wait_ms`, `ack`,
 * `nack`, `heartbeat`), so seed tests run against any OJS server without an SDK.
 *
 * | handler           | behaviour                                                              |
 * |-------------------|------------------------------------------------------------------------|
 * | test.echo         | ack, result = args                                                     |
 * | test.fail_once    | nack on attempt 1, then ack                                            |
 * | test.fail_twice   | nack on attempts 1-2, then ack                                         |
 * | test.fail_always  | nack (retryable handler_error) on every attempt                        |
 * | test.slow         | sleep (setup duration, or args[0]: number = seconds, ISO string, or    |
 * |                   | {duration_ms}) while heartbeating, then ack                            |
 * | test.timeout      | hold the job: no ack, no heartbeat, until the test ends                |
 * | test.panic        | simulated worker crash: drop the job with no ack/nack/heartbeat        |
 * | test.produce      | ack, result = setup `result`, else args[0] (a single arg), else args   |
 * | test.noop         | ack with no result                                                     |
 *
 * Unknown job types are nacked as non-retryable `handler_not_found`. Every protocol exchange is
 * recorded as a `WorkerEvent` with a monotonic timestamp, which the behavioural assertions of
 * the runner measure (`delay_after_failure`, `active_for`, `state_after`).
 */

import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { OJS_MEDIA_TYPE } from '@ojs/core';
import { parseDurationMs } from './durations.ts';
import { HttpClient } from './http.ts';
import type { Json, JsonObject } from './types.ts';
import { isJsonObject } from './types.ts';

export type WorkerEventKind = 'fetch' | 'ack' | 'nack' | 'hold' | 'abandon' | 'error';

export interface WorkerEvent {
  kind: WorkerEventKind;
  /** performance.now() when the exchange completed (response received). */
  at: number;
  job_id?: string;
  type?: string;
  attempt?: number;
  /** HTTP status of the ack/nack response. */
  status?: number;
  /** Job state reported by the ack/nack response, when it has one. */
  state?: string;
  message?: string;
}

export interface WorkerOptions {
  baseUrl: string;
  queues: string[];
  /** Handler configuration from the test's `setup` (`duration`, `duration_ms`, `result`). */
  config?: JsonObject;
  /** Parallel fetch loops; several are needed for groups and held jobs (default 4). */
  concurrency?: number;
  /** Long-poll `wait_ms` sent with each fetch (default 500). */
  fetchWaitMs?: number;
  /** Per-request timeout in ms. */
  timeoutMs?: number;
  /** Extra request headers (e.g. Authorization). */
  headers?: Record<string, string>;
  onEvent?: (event: WorkerEvent) => void;
}

const DEFAULT_SLOW_MS = 1000;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The duration test.slow sleeps for. */
export function slowDurationMs(args: Json[], config: JsonObject = {}): number {
  if (typeof config.duration_ms === 'number') return config.duration_ms;
  if (typeof config.duration === 'string')
    return parseDurationMs(config.duration) ?? DEFAULT_SLOW_MS;
  const first = args[0];
  if (typeof first === 'number' && first >= 0) return Math.round(first * 1000);
  if (typeof first === 'string') return parseDurationMs(first) ?? DEFAULT_SLOW_MS;
  if (isJsonObject(first)) {
    if (typeof first.duration_ms === 'number') return first.duration_ms;
    if (typeof first.duration === 'string')
      return parseDurationMs(first.duration) ?? DEFAULT_SLOW_MS;
  }
  return DEFAULT_SLOW_MS;
}

/** The result test.produce acknowledges with. */
export function produceResult(args: Json[], config: JsonObject = {}): Json {
  if (config.result !== undefined) return config.result;
  return args.length === 1 ? args[0]! : args;
}

type Outcome =
  | { kind: 'ack'; result?: Json }
  | { kind: 'nack'; code: string; message: string; retryable: boolean }
  | { kind: 'hold' }
  | { kind: 'abandon'; reason: string }
  | { kind: 'slow'; ms: number };

/** What a standard handler does with a job on a given attempt. */
export function decide(type: string, args: Json[], attempt: number, config: JsonObject): Outcome {
  const fail = (retryable = true): Outcome => ({
    kind: 'nack',
    code: 'handler_error',
    message: `${type}: deliberate failure on attempt ${attempt}`,
    retryable,
  });
  switch (type) {
    case 'test.echo':
      return { kind: 'ack', result: args };
    case 'test.fail_once':
      return attempt <= 1 ? fail() : { kind: 'ack' };
    case 'test.fail_twice':
      return attempt <= 2 ? fail() : { kind: 'ack' };
    case 'test.fail_always':
      return fail();
    case 'test.slow':
      return { kind: 'slow', ms: slowDurationMs(args, config) };
    case 'test.timeout':
      return { kind: 'hold' };
    case 'test.panic':
      return { kind: 'abandon', reason: 'test.panic: simulated worker crash' };
    case 'test.produce':
      return { kind: 'ack', result: produceResult(args, config) };
    case 'test.noop':
      return { kind: 'ack' };
    default:
      return {
        kind: 'nack',
        code: 'handler_not_found',
        message: `no conformance handler for job type "${type}"`,
        retryable: false,
      };
  }
}

export class BuiltinWorker {
  readonly workerId = `ojs-conformance-${randomUUID()}`;
  readonly events: WorkerEvent[] = [];
  /** Fetch requests in flight, and who waits for one to settle (fetchingEnded). */
  #inFetch = 0;
  #fetchSettled: (() => void)[] = [];
  readonly #options: WorkerOptions;
  /** Own connection pool, closed on stop() so no keep-alive socket outlives the worker. */
  readonly #client = new HttpClient();
  readonly #stop = new AbortController();
  #fetchAbort = new AbortController();
  #paused = false;
  #loops: Promise<void>[] = [];
  #handlers = new Set<Promise<void>>();
  /** Job id -> last attempt to fetch; reaching it pauses fetching. */
  readonly #limits = new Map<string, number>();
  readonly #seenAttempts = new Map<string, number>();

  constructor(options: WorkerOptions) {
    this.#options = options;
  }

  get url(): string {
    return this.#options.baseUrl.replace(/\/+$/, '');
  }

  start(): void {
    const n = Math.max(1, this.#options.concurrency ?? 4);
    for (let i = 0; i < n; i++) this.#loops.push(this.#loop());
  }

  /** Stops fetching once `jobId` has been fetched for attempt `attempt` (handlers keep running). */
  limitAttempts(jobId: string, attempt: number): void {
    this.#limits.set(jobId, attempt);
  }

  /** Stops fetching new jobs; in-flight fetches are aborted. */
  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#fetchAbort.abort();
  }

  /**
   * Resolves once every fetch loop has ended (after pause(), limitAttempts()
   * reaching its attempt, or stop()): from then on the worker fetches nothing.
   */
  fetchingEnded(): Promise<void> {
    // A loop that is running a handler fetches no more once paused: it
    // leaves its loop after the handler. So: paused and no fetch in flight.
    return new Promise((resolve) => {
      const check = () => {
        if (this.#paused && this.#inFetch === 0) resolve();
        else this.#fetchSettled.push(check);
      };
      check();
    });
  }

  /** Stops everything: fetch loops end, held and sleeping jobs are abandoned. */
  async stop(): Promise<void> {
    this.#paused = true;
    this.#fetchAbort.abort();
    this.#stop.abort();
    await Promise.allSettled(this.#loops);
    await Promise.allSettled([...this.#handlers]);
    this.#client.close();
  }

  eventsFor(jobId: string): WorkerEvent[] {
    return this.events.filter((e) => e.job_id === jobId);
  }

  #record(event: Omit<WorkerEvent, 'at'>): WorkerEvent {
    const full = { ...event, at: performance.now() };
    this.events.push(full);
    this.#options.onEvent?.(full);
    return full;
  }

  async #post(path: string, body: JsonObject, signal?: AbortSignal) {
    const res = await this.#client.request({
      method: 'POST',
      url: `${this.url}${path}`,
      headers: {
        'Content-Type': OJS_MEDIA_TYPE,
        Accept: OJS_MEDIA_TYPE,
        ...this.#options.headers,
      },
      body: JSON.stringify(body),
      timeoutMs: this.#options.timeoutMs ?? 30_000,
      signal,
    });
    let parsed: Json | undefined;
    try {
      parsed = res.body === '' ? undefined : (JSON.parse(res.body) as Json);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text: res.body };
  }

  async #loop(): Promise<void> {
    const wait = this.#options.fetchWaitMs ?? 500;
    while (!this.#paused) {
      const started = performance.now();
      let job: JsonObject | undefined;
      this.#inFetch++;
      try {
        const res = await this.#post(
          '/ojs/v1/workers/fetch',
          { queues: this.#options.queues, worker_id: this.workerId, count: 1, wait_ms: wait },
          this.#fetchAbort.signal,
        );
        if (res.status === 200 && isJsonObject(res.body)) {
          const jobs = res.body.jobs;
          if (Array.isArray(jobs) && isJsonObject(jobs[0])) job = jobs[0];
          else if (isJsonObject(res.body.job)) job = res.body.job;
        } else if (res.status !== 204) {
          this.#record({
            kind: 'error',
            message: `fetch answered ${res.status}: ${res.text.slice(0, 200)}`,
          });
          await sleep(200, this.#stop.signal);
          continue;
        }
      } catch (err) {
        if (this.#paused) break;
        this.#record({ kind: 'error', message: `fetch failed: ${(err as Error).message}` });
        await sleep(200, this.#stop.signal);
        continue;
      } finally {
        this.#inFetch--;
        for (const waiter of this.#fetchSettled.splice(0)) waiter();
      }
      if (job === undefined) {
        // Servers without long polling answer at once; do not spin.
        if (performance.now() - started < wait / 2) await sleep(50, this.#stop.signal);
        continue;
      }
      const handling = this.#handle(job);
      this.#handlers.add(handling);
      handling.finally(() => this.#handlers.delete(handling));
      await handling;
    }
  }

  async #handle(job: JsonObject): Promise<void> {
    const id = typeof job.id === 'string' ? job.id : '';
    const type = typeof job.type === 'string' ? job.type : '';
    const args = Array.isArray(job.args) ? job.args : [];
    const seen = (this.#seenAttempts.get(id) ?? 0) + 1;
    const attempt = typeof job.attempt === 'number' && job.attempt > 0 ? job.attempt : seen;
    this.#seenAttempts.set(id, attempt);
    this.#record({ kind: 'fetch', job_id: id, type, attempt });
    const limit = this.#limits.get(id);
    if (limit !== undefined && attempt >= limit) this.pause();

    const outcome = decide(type, args, attempt, this.#options.config ?? {});
    switch (outcome.kind) {
      case 'ack':
        return this.#ack(id, type, attempt, outcome.result);
      case 'nack':
        return this.#nack(id, type, attempt, outcome);
      case 'abandon':
        this.#record({ kind: 'abandon', job_id: id, type, attempt, message: outcome.reason });
        return;
      case 'hold':
        this.#record({
          kind: 'hold',
          job_id: id,
          type,
          attempt,
          message: 'holding without heartbeat',
        });
        await sleep(2 ** 31 - 1, this.#stop.signal);
        this.#record({
          kind: 'abandon',
          job_id: id,
          type,
          attempt,
          message: 'test ended while held',
        });
        return;
      case 'slow': {
        const visibility =
          typeof job.visibility_timeout_ms === 'number' ? job.visibility_timeout_ms : 30_000;
        const beat = Math.min(1000, Math.max(100, Math.floor(visibility / 3)));
        const deadline = performance.now() + outcome.ms;
        while (!this.#stop.signal.aborted && performance.now() < deadline) {
          await sleep(Math.min(beat, deadline - performance.now()), this.#stop.signal);
          if (this.#stop.signal.aborted || performance.now() >= deadline) break;
          await this.#post('/ojs/v1/workers/heartbeat', {
            worker_id: this.workerId,
            active_jobs: [id],
          }).catch((err: Error) => {
            this.#record({
              kind: 'error',
              job_id: id,
              message: `heartbeat failed: ${err.message}`,
            });
          });
        }
        if (this.#stop.signal.aborted) {
          this.#record({
            kind: 'abandon',
            job_id: id,
            type,
            attempt,
            message: 'test ended while sleeping',
          });
          return;
        }
        return this.#ack(id, type, attempt, undefined);
      }
    }
  }

  #finish(
    kind: 'ack' | 'nack',
    id: string,
    type: string,
    attempt: number,
    res: { status: number; body: Json | undefined; text: string },
  ) {
    let state: string | undefined;
    if (isJsonObject(res.body)) {
      if (typeof res.body.state === 'string') state = res.body.state;
      else if (isJsonObject(res.body.job) && typeof res.body.job.state === 'string')
        state = res.body.job.state;
    }
    const event: Omit<WorkerEvent, 'at'> = { kind, job_id: id, type, attempt, status: res.status };
    if (state !== undefined) event.state = state;
    if (res.status !== 200)
      event.message = `${kind} answered ${res.status}: ${res.text.slice(0, 200)}`;
    this.#record(event);
  }

  async #ack(id: string, type: string, attempt: number, result: Json | undefined): Promise<void> {
    const body: JsonObject = { job_id: id, worker_id: this.workerId };
    if (result !== undefined) body.result = result;
    try {
      this.#finish('ack', id, type, attempt, await this.#post('/ojs/v1/workers/ack', body));
    } catch (err) {
      this.#record({
        kind: 'error',
        job_id: id,
        attempt,
        message: `ack failed: ${(err as Error).message}`,
      });
    }
  }

  async #nack(
    id: string,
    type: string,
    attempt: number,
    failure: { code: string; message: string; retryable: boolean },
  ): Promise<void> {
    const body: JsonObject = {
      job_id: id,
      worker_id: this.workerId,
      error: {
        code: failure.code,
        type: failure.code,
        message: failure.message,
        retryable: failure.retryable,
      },
    };
    try {
      this.#finish('nack', id, type, attempt, await this.#post('/ojs/v1/workers/nack', body));
    } catch (err) {
      this.#record({
        kind: 'error',
        job_id: id,
        attempt,
        message: `nack failed: ${(err as Error).message}`,
      });
    }
  }
}
