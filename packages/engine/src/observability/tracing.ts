/**
 * OpenTelemetry spans through @opentelemetry/api only (http-binding §16.2):
 * the application brings the SDK and exporter; with no tracer provider
 * registered, every hook returns after one check, allocating nothing.
 *
 * - `{queue} enqueue` (PRODUCER) per stored job, a child of the producer's
 *   span when the job's meta carries a `traceparent`. A job without one gets
 *   this span's context in `meta.traceparent` (and nothing else in meta is
 *   touched; a producer's own traceparent is kept as sent), so the
 *   execution joins the trace.
 * - `{queue} attempt` (INTERNAL) per attempt the server saw end (ACK, FAIL,
 *   lease expiry, cancel), from `started_at` to the outcome, in the job's
 *   trace with a link to the enqueue span: the server's record of the
 *   execution, next to the worker's own `{queue} process` span.
 */
import { formatTraceParent, type JobRecord, parseTraceParent } from '@ojs/core';
import {
  type Context,
  createTraceState,
  type Link,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { finishedAt, type JobObserver } from './lifecycle.ts';

const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/** True when the application registered a tracer provider (else spans cost nothing). */
export function tracingEnabled(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

/** The span context a job's meta carries (`traceparent`, `tracestate`), if any. */
export function spanContextOf(meta: Record<string, unknown>): SpanContext | undefined {
  const parent = parseTraceParent(meta.traceparent);
  if (parent === undefined) return undefined;
  return {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.flags,
    isRemote: true,
    ...(typeof meta.tracestate === 'string'
      ? { traceState: createTraceState(meta.tracestate) }
      : {}),
  };
}

/** The attributes OBS requires on a job span (§16.2). */
export function jobAttributes(job: JobRecord, operation: 'publish' | 'process') {
  return {
    'messaging.system': 'ojs',
    'messaging.operation.type': operation,
    'messaging.destination.name': job.queue,
    'messaging.message.id': job.id,
    'ojs.job.id': job.id,
    'ojs.job.type': job.type,
    'ojs.job.queue': job.queue,
    'ojs.job.priority': job.priority,
  };
}

/** Pending enqueue spans above this are ended: their inserts were refused. */
const MAX_PENDING = 10_000;

export class JobTracing implements JobObserver {
  readonly #tracer: Tracer;
  readonly #pending = new Map<string, Span>();

  constructor(tracer: Tracer = trace.getTracer('ojs-server')) {
    this.#tracer = tracer;
  }

  /** Before a job is stored: its enqueue span, and the trace context it carries. */
  enqueuing(job: JobRecord): void {
    if (!tracingEnabled()) return;
    const producer = spanContextOf(job.meta);
    const parent: Context =
      producer === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, producer);
    const span = this.#tracer.startSpan(
      `${job.queue} enqueue`,
      { kind: SpanKind.PRODUCER, attributes: jobAttributes(job, 'publish') },
      parent,
    );
    if (producer === undefined) {
      const own = span.spanContext();
      job.meta = {
        ...job.meta,
        traceparent: formatTraceParent({
          traceId: own.traceId,
          spanId: own.spanId,
          flags: own.traceFlags,
        }),
      };
    }
    if (this.#pending.size >= MAX_PENDING) {
      for (const stale of this.#pending.values()) stale.end();
      this.#pending.clear();
    }
    this.#pending.set(job.id, span);
  }

  enqueued(jobs: readonly JobRecord[]): void {
    if (this.#pending.size === 0) return;
    for (const job of jobs) {
      const span = this.#pending.get(job.id);
      if (span === undefined) continue;
      this.#pending.delete(job.id);
      span.setAttribute('ojs.job.state', job.state);
      span.end();
    }
  }

  settled(job: JobRecord): void {
    if (job.started_at === undefined || !tracingEnabled()) return;
    const enqueue = spanContextOf(job.meta);
    const links: Link[] = enqueue === undefined ? [] : [{ context: enqueue }];
    const span = this.#tracer.startSpan(
      `${job.queue} attempt`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          ...jobAttributes(job, 'process'),
          'ojs.job.state': job.state,
          'ojs.job.attempt': job.attempt,
          ...(job.worker_id === undefined ? {} : { 'ojs.worker.id': job.worker_id }),
        },
        links,
        startTime: new Date(job.started_at),
      },
      enqueue === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, enqueue),
    );
    if (job.state !== 'completed' && job.error !== undefined) {
      span.setAttributes({
        'error.type': job.error.type,
        'ojs.job.error.attempt': job.error.attempt,
      });
      span.setStatus({ code: SpanStatusCode.ERROR, message: job.error.code });
    }
    const end = finishedAt(job);
    span.end(end === undefined ? undefined : new Date(end));
  }
}
