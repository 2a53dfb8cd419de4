/**
 * Live events for the SDK (http-binding §9.3, RT §2 and §9): the server's
 * Server-Sent Events as an async iterator. Reconnects on its own with
 * exponential backoff (RT §9 MUST), resuming after the last event it
 * delivered (`Last-Event-ID`), so a dropped connection loses nothing the
 * server's log still holds. Ends when the caller breaks out of the loop or
 * aborts its signal, and after a finished job's stream closed.
 */
import { parseErrorResponse } from './errors.ts';
import type { EventStreamOptions, EventStreamQuery, OjsEvent } from './types.ts';

// Declared in types.ts (beside OjsEvent and the transport interface); importers of this module keep them.
export type { EventStreamOptions, EventStreamQuery } from './types.ts';

/** The stream's path and query for a subscription. */
export function eventStreamPath(query: EventStreamQuery): string {
  if (query.jobId !== undefined) return `/ojs/v1/jobs/${encodeURIComponent(query.jobId)}/events`;
  const params = new URLSearchParams();
  if (query.types?.length) params.set('types', query.types.join(','));
  if (query.jobTypes?.length) params.set('job_types', query.jobTypes.join(','));
  if (query.queue !== undefined) {
    const text = params.toString();
    return `/ojs/v1/queues/${encodeURIComponent(query.queue)}/events${text ? `?${text}` : ''}`;
  }
  if (query.queues?.length) params.set('queues', query.queues.join(','));
  const text = params.toString();
  return `/ojs/v1/events${text ? `?${text}` : ''}`;
}

interface Frame {
  id?: string;
  event?: string;
  data: string[];
}

/** Splits an SSE body into frames (comments and `retry:` lines are dropped). */
async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const decoder = new TextDecoder();
  let buffer = '';
  let frame: Frame = { data: [] };
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, '');
        buffer = buffer.slice(newline + 1);
        newline = buffer.indexOf('\n');
        if (line === '') {
          if (frame.event !== undefined || frame.data.length > 0) yield frame;
          frame = { data: [] };
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') frame.id = text;
        else if (field === 'event') frame.event = text;
        else if (field === 'data') frame.data.push(text);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

const TERMINAL = new Set(['completed', 'cancelled', 'discarded']);
const ENDING_EVENTS = new Set(['job.completed', 'job.cancelled', 'job.discarded']);

/** Events of the server at `baseUrl`, as they happen. */
export async function* streamEventsOverHttp(
  fetchImpl: typeof fetch,
  baseUrl: string,
  headers: Record<string, string>,
  query: EventStreamQuery,
  options: EventStreamOptions = {},
): AsyncGenerator<OjsEvent> {
  const first = options.reconnectDelayMs ?? 500;
  const max = options.maxReconnectDelayMs ?? 30_000;
  let delay = first;
  let lastId = query.after;
  const path = eventStreamPath(query);
  for (;;) {
    if (options.signal?.aborted) return;
    const controller = new AbortController();
    const abort = () => controller.abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    try {
      let response: Response;
      try {
        response = await fetchImpl(`${baseUrl}${path}`, {
          headers: {
            ...headers,
            Accept: 'text/event-stream',
            ...(lastId === undefined ? {} : { 'Last-Event-ID': lastId }),
          },
          signal: controller.signal,
        });
      } catch (error) {
        if (options.signal?.aborted) return;
        void error; // unreachable server: retried below
        response = undefined as unknown as Response;
      }
      if (response !== undefined) {
        if (response.status >= 400 && response.status !== 503 && response.status !== 429) {
          const text = await response.text();
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: the text is the message
          }
          throw parseErrorResponse(response.status, body, { operation: 'stream_events' });
        }
        if (response.ok && response.body !== null) {
          let finished = false;
          try {
            for await (const frame of frames(response.body)) {
              if (frame.event === undefined || frame.event === 'server.shutdown') continue;
              const data = JSON.parse(frame.data.join('\n')) as Record<string, unknown>;
              if (frame.id !== undefined) lastId = frame.id;
              delay = first;
              // The job stream's snapshot and system notices (RT payloads, e.g.
              // system.gap: events lost to pruning) are given the envelope's shape.
              const snapshot = frame.event === 'job.state_changed';
              if (frame.event.startsWith('system.')) {
                yield { type: frame.event, time: String(data.timestamp), data };
                continue;
              }
              yield snapshot
                ? {
                    type: 'job.state_changed',
                    subject: String(data.job_id),
                    time: String(data.timestamp),
                    data,
                  }
                : (data as OjsEvent);
              if (
                query.jobId !== undefined &&
                (ENDING_EVENTS.has(frame.event) || (snapshot && TERMINAL.has(String(data.to))))
              ) {
                finished = true;
                break;
              }
            }
          } catch (error) {
            if (options.signal?.aborted) return;
            void error; // the connection broke: reconnect below
          }
          // A finished job's stream is over; any other stream reconnects.
          if (finished) return;
        }
      }
    } finally {
      options.signal?.removeEventListener('abort', abort);
      controller.abort();
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      options.signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
    delay = Math.min(delay * 2, max);
  }
}
