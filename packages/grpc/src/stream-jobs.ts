/**
 * StreamJobs (features.md §11): jobs pushed to a worker as they become
 * available, never more than `max_concurrent` unsettled at once. A
 * delivered job is claimed like a FETCH (active, leased to worker_id) and
 * is settled only through the unary Ack/Nack. Its slot frees when the job
 * leaves `active` under this worker: at once for an Ack/Nack through this
 * process, and by a once-a-second re-read for anything else (an ACK over
 * HTTP or through another server, a lease that expired, a cancel). A
 * stream that drops leaves its jobs leased: they come back when their
 * visibility timeout expires, as for any worker that vanished. A paused
 * queue delivers nothing and the stream stays open. A job larger than the
 * client receives (reply-limits.ts) is handed back with the jobs claimed
 * after it, and the stream ends with the error naming it.
 */
import * as grpc from '@grpc/grpc-js';
import { checkRequestJson, invalidRequest, validateQueueName, validateWorkerId } from '@ojs/core';
import type { Engine } from '@ojs/engine';
import { jobMessage } from './job-codec.ts';
import { receiveLimit, releaseQuietly, tooLargeForClient } from './reply-limits.ts';
import { Waker } from './waker.ts';

type Obj = Record<string, unknown>;

/** How long one claim waits for work before the loop looks around again. */
const CLAIM_WAIT_MS = 1000;
/** How often held jobs are re-read to notice settlements made elsewhere. */
const RECHECK_MS = 1000;

interface Held {
  attempt: number;
}

class JobStream {
  readonly #engine: Engine;
  readonly #streams: JobStreams;
  readonly #call: grpc.ServerWritableStream<Obj, Obj>;
  readonly #queues: string[];
  readonly #workerId: string;
  readonly #max: number;
  readonly #receiveLimit: number;
  /** The tenant the stream's worker fetches for (metadata x-ojs-tenant); every tenant when absent. */
  readonly #tenant: string | undefined;
  readonly held = new Map<string, Held>();
  readonly #abort = new AbortController();
  #closed = false;
  readonly #waker = new Waker();
  #lastRecheck = 0;

  constructor(
    engine: Engine,
    streams: JobStreams,
    call: grpc.ServerWritableStream<Obj, Obj>,
    request: {
      queues: string[];
      workerId: string;
      max: number;
      receiveLimit: number;
      tenant?: string;
    },
  ) {
    this.#tenant = request.tenant;
    this.#engine = engine;
    this.#streams = streams;
    this.#call = call;
    this.#queues = request.queues;
    this.#workerId = request.workerId;
    this.#max = request.max;
    this.#receiveLimit = request.receiveLimit;
    call.once('cancelled', () => this.#stop());
    call.once('close', () => this.#stop());
  }

  get closed(): boolean {
    return this.#closed;
  }

  #stop(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    this.#waker.wake();
    this.#streams.forget(this);
  }

  /** A held job was settled: its slot is free for the next job. */
  release(jobId: string): void {
    if (this.held.delete(jobId)) this.#waker.wake();
  }

  /** Ends the stream with a status (shutdown: UNAVAILABLE). */
  fail(code: grpc.status, details: string): void {
    if (this.#closed) return;
    this.#stop();
    this.#call.emit('error', { code, details });
  }

  /** Frees the slots of held jobs that are no longer active under this worker. */
  async #recheck(): Promise<void> {
    this.#lastRecheck = Date.now();
    for (const [id, held] of [...this.held]) {
      const job = await this.#engine.store.getJob(id);
      if (
        job === null ||
        job.state !== 'active' ||
        job.worker_id !== this.#workerId ||
        job.attempt !== held.attempt
      ) {
        this.release(id);
      }
    }
  }

  async run(): Promise<void> {
    const engine = this.#engine;
    while (!this.#closed) {
      if (this.held.size > 0 && Date.now() - this.#lastRecheck >= RECHECK_MS) {
        await this.#recheck();
      }
      const free = Math.min(this.#max - this.held.size, engine.maxFetchCount);
      // Full, or a draining server that hands out nothing: wait for a slot or a while.
      if (free <= 0 || engine.draining) {
        await this.#waker.sleep(free <= 0 ? RECHECK_MS : 250);
        continue;
      }
      const jobs = await engine.fetch({
        queues: this.#queues,
        count: free,
        workerId: this.#workerId,
        waitMs: CLAIM_WAIT_MS,
        signal: this.#abort.signal,
        tenant: this.#tenant,
      });
      for (const [index, job] of jobs.entries()) {
        // Claimed after the stream went away: the lease brings it back.
        if (this.#closed) break;
        const message = jobMessage(job);
        if (message.length > this.#receiveLimit) {
          // Skipped, it would be claimed again at once: the stream ends instead.
          await releaseQuietly(engine, jobs.slice(index));
          throw tooLargeForClient(job, message.length, this.#receiveLimit);
        }
        this.held.set(job.id, { attempt: job.attempt });
        this.#streams.track(job.id, this);
        // Bytes: the service's reply encoder passes them through (withEncodedReplies).
        this.#call.write(message as unknown as Obj);
      }
    }
  }
}

/** The open StreamJobs calls of one server. */
export class JobStreams {
  readonly #open = new Set<JobStream>();
  readonly #byJob = new Map<string, JobStream>();
  #closed = false;

  get size(): number {
    return this.#open.size;
  }

  async serve(
    engine: Engine,
    call: grpc.ServerWritableStream<Obj, Obj>,
    ready: () => void,
    tenant?: string,
  ): Promise<void> {
    const request = call.request;
    const queues = Array.isArray(request.queues) ? (request.queues as string[]) : [];
    // The request limits a Fetch gets (core limits.ts).
    checkRequestJson({ queues, worker_id: request.worker_id });
    if (queues.length === 0) {
      throw invalidRequest('queues must name at least one queue.', { field: 'queues' });
    }
    for (const queue of queues) validateQueueName(queue, 'queues[]');
    const workerId =
      typeof request.worker_id === 'string' && request.worker_id !== ''
        ? validateWorkerId(request.worker_id)
        : undefined;
    if (workerId === undefined) {
      throw invalidRequest('worker_id is required: unacked jobs are reclaimed by it.', {
        field: 'worker_id',
      });
    }
    const max = typeof request.max_concurrent === 'number' ? request.max_concurrent : 0;
    if (max < 0) {
      throw invalidRequest('max_concurrent must be >= 1 (0 means 1).', {
        field: 'max_concurrent',
      });
    }
    if (this.#closed) {
      call.emit('error', {
        code: grpc.status.UNAVAILABLE,
        details: 'The server is shutting down.',
      });
      return;
    }
    const stream = new JobStream(engine, this, call, {
      queues,
      workerId,
      max: max || 1,
      receiveLimit: receiveLimit(call.metadata),
      tenant,
    });
    this.#open.add(stream);
    ready();
    await stream.run();
  }

  track(jobId: string, stream: JobStream): void {
    this.#byJob.set(jobId, stream);
  }

  forget(stream: JobStream): void {
    this.#open.delete(stream);
    for (const id of stream.held.keys()) this.#byJob.delete(id);
  }

  /** An Ack or Nack through this server settled the job. */
  settled(jobId: string): void {
    const stream = this.#byJob.get(jobId);
    if (stream === undefined) return;
    this.#byJob.delete(jobId);
    stream.release(jobId);
  }

  /** Shutdown: every open stream ends with UNAVAILABLE; new ones are refused. */
  closeAll(): void {
    this.#closed = true;
    for (const stream of [...this.#open]) {
      stream.fail(grpc.status.UNAVAILABLE, 'The server is shutting down; reconnect elsewhere.');
    }
  }
}
