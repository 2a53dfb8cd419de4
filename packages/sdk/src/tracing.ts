/**
 * OpenTelemetry for the SDK (http-binding §16.1-16.2), through
 * `@opentelemetry/api` when the application has it installed (an optional
 * peer dependency: the SDK itself has no runtime dependencies). The
 * application registers its own tracer provider and exporter; until it
 * does, every hook returns after one check.
 *
 * - Enqueue: a `{queue} enqueue` PRODUCER span (a child of the caller's
 *   active span) whose context is written to `meta.traceparent` (and
 *   `meta.tracestate`) unless the caller set one.
 * - Execution: a `{queue} process` CONSUMER span per attempt, in the trace
 *   of the job's `meta.traceparent` and linked to it (OBS asks for the
 *   link; the parent makes enqueue -> execution one trace), active while
 *   the handler runs so the handler's own spans nest under it.
 */
import { ENCRYPTED_PLACEHOLDER, isEncoded } from './codec.ts';
import type { JobEnvelope } from './types.ts';

// The few parts of @opentelemetry/api used here, typed structurally so the
// published types do not require the package.
interface SpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
  traceState?: { serialize(): string };
}
interface Span {
  spanContext(): SpanContext;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: unknown): unknown;
  end(): void;
}
type Context = object;
interface Tracer {
  startSpan(
    name: string,
    options: {
      kind: number;
      attributes: Record<string, string | number>;
      links?: { context: SpanContext }[];
    },
    context?: Context,
  ): Span;
}
interface OtelApi {
  trace: {
    getTracer(name: string): Tracer;
    getTracerProvider(): unknown;
    setSpanContext(context: Context, spanContext: SpanContext): Context;
    setSpan(context: Context, span: Span): Context;
  };
  context: { active(): Context; with<T>(context: Context, fn: () => T): T };
  createTraceState(raw: string): { serialize(): string };
  ProxyTracerProvider: new () => { getDelegate(): unknown };
  ROOT_CONTEXT: Context;
  SpanKind: { PRODUCER: number; CONSUMER: number };
  SpanStatusCode: { ERROR: number };
}

/** undefined: not looked for yet; null: not installed. */
let api: OtelApi | null | undefined;
let noopProvider: unknown;
let tracer: Tracer | undefined;

/** Looks for @opentelemetry/api once (the worker at start, the client at its first enqueue). */
export async function loadTracing(): Promise<void> {
  if (api !== undefined) return;
  try {
    const name = '@opentelemetry/api';
    api = (await import(name)) as OtelApi;
    noopProvider = new api.ProxyTracerProvider().getDelegate();
  } catch {
    api = null;
  }
}

/** The API when the application registered a tracer provider, else undefined. */
function active(): OtelApi | undefined {
  if (api === undefined || api === null) return undefined;
  const provider = api.trace.getTracerProvider() as { getDelegate?(): unknown };
  if (provider instanceof api.ProxyTracerProvider && provider.getDelegate?.() === noopProvider) {
    return undefined;
  }
  tracer ??= api.trace.getTracer('ojs-sdk');
  return api;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function remoteContext(meta: Record<string, unknown> | undefined): SpanContext | undefined {
  const value = meta?.traceparent;
  const match = typeof value === 'string' ? TRACEPARENT.exec(value) : null;
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  const context: SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  if (typeof meta?.tracestate === 'string')
    context.traceState = api!.createTraceState(meta.tracestate);
  return context;
}

function attributes(
  job: { id: string; type: string; queue?: string; args?: unknown; meta?: Record<string, unknown> },
  operation: string,
) {
  const queue = job.queue ?? 'default';
  return {
    // Spans never carry args; an encoded job's say so instead (encryption §3.1).
    ...(isEncoded(job) ? { 'ojs.job.args': ENCRYPTED_PLACEHOLDER } : {}),
    'messaging.system': 'ojs',
    'messaging.operation.type': operation,
    'messaging.destination.name': queue,
    'messaging.message.id': job.id,
    'ojs.job.id': job.id,
    'ojs.job.type': job.type,
    'ojs.job.queue': queue,
  };
}

export interface EnqueueTrace {
  end(error?: unknown): void;
}

/** Starts the enqueue span of an envelope and writes its context into the envelope's meta. */
export function traceEnqueue(envelope: JobEnvelope): EnqueueTrace | undefined {
  const otel = active();
  if (otel === undefined) return undefined;
  const span = tracer!.startSpan(
    `${envelope.queue ?? 'default'} enqueue`,
    { kind: otel.SpanKind.PRODUCER, attributes: attributes(envelope, 'publish') },
    otel.context.active(),
  );
  const meta = envelope.meta ?? {};
  if (meta.traceparent === undefined) {
    const own = span.spanContext();
    envelope.meta = {
      ...meta,
      traceparent: `00-${own.traceId}-${own.spanId}-${own.traceFlags.toString(16).padStart(2, '0')}`,
      ...(own.traceState === undefined ? {} : { tracestate: own.traceState.serialize() }),
    };
  }
  return { end: (error) => endSpan(otel, span, error) };
}

function endSpan(otel: OtelApi, span: Span, error: unknown): void {
  if (error !== undefined) {
    span.recordException(error);
    span.setStatus({
      code: otel.SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
  }
  span.end();
}

export interface ProcessTrace {
  /** Runs the handler with the process span active. */
  run<T>(fn: () => T): T;
  end(error?: unknown): void;
}

/** Starts the process span of one attempt of a fetched job. */
export function traceProcess(
  job: { id: string; type: string; queue: string; attempt: number; meta?: Record<string, unknown> },
  workerId: string,
): ProcessTrace | undefined {
  const otel = active();
  if (otel === undefined) return undefined;
  const enqueue = remoteContext(job.meta);
  const parent =
    enqueue === undefined
      ? otel.ROOT_CONTEXT
      : otel.trace.setSpanContext(otel.ROOT_CONTEXT, enqueue);
  const span = tracer!.startSpan(
    `${job.queue} process`,
    {
      kind: otel.SpanKind.CONSUMER,
      attributes: {
        ...attributes(job, 'process'),
        'ojs.job.attempt': job.attempt,
        'ojs.worker.id': workerId,
      },
      ...(enqueue === undefined ? {} : { links: [{ context: enqueue }] }),
    },
    parent,
  );
  const context = otel.trace.setSpan(parent, span);
  return {
    run: (fn) => otel.context.with(context, fn),
    end: (error) => {
      if (error !== undefined) span.setAttribute('ojs.job.error.attempt', job.attempt);
      endSpan(otel, span, error);
    },
  };
}
