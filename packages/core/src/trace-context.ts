/**
 * W3C Trace Context in a job's meta (http-binding §16.1, OBS §5): the
 * producer's `traceparent` (and `tracestate`) travel with the job so the
 * execution joins the enqueue's trace. Parsed and written here, without a
 * propagator, so they work whatever OpenTelemetry setup the user has.
 */

export interface TraceParent {
  traceId: string;
  spanId: string;
  /** Trace flags (bit 0: sampled). */
  flags: number;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE = '0'.repeat(32);
const INVALID_SPAN = '0'.repeat(16);

/** The trace context of a `traceparent` header value, or undefined when it is not valid. */
export function parseTraceParent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (match === null || match[1] === INVALID_TRACE || match[2] === INVALID_SPAN) return undefined;
  return { traceId: match[1]!, spanId: match[2]!, flags: Number.parseInt(match[3]!, 16) };
}

export function formatTraceParent(context: TraceParent): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags.toString(16).padStart(2, '0')}`;
}
