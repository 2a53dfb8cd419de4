/**
 * Server-Sent Events (http-binding §9.3, RT §2): live streams of the event
 * log with `Accept: text/event-stream`.
 *
 * - `GET /ojs/v1/jobs/{id}/events`: one job's events. Without a cursor it
 *   starts with a `job.state_changed` snapshot of the job; a job already in
 *   a terminal state gets that one event and the stream closes.
 * - `GET /ojs/v1/queues/{name}/events`: one queue's events.
 * - `GET /ojs/v1/events`: every event, with the list's filters (`types` or
 *   `event_types`, `queues`, `job_types`).
 *
 * Frames: `id:` (the event id), `event:` (its type), `data:` (the event
 * envelope, the same as the polling list returns), `retry: 3000` first, a
 * `:heartbeat` comment every 15 s. Resumable: `Last-Event-ID` (or `after`)
 * replays what followed that event; without one the stream starts at the
 * newest event. A slow client is not buffered for: its stream reads the
 * log at the pace its socket drains (engine/src/event-tail.ts), so no event
 * is dropped while the log holds it. On shutdown every stream gets
 * `server.shutdown` and ends.
 */
import type { ServerResponse } from 'node:http';
import { notFound } from '@ojs/core';
import { JOB_STREAM_ENDS, type TailFilter } from '@ojs/engine';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { csv } from '../wire.ts';

const HEARTBEAT_MS = 15_000;
const RETRY_MS = 3000;

/** True when the client asked for an event stream. */
export function wantsEventStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return typeof accept === 'string' && accept.includes('text/event-stream');
}

/**
 * One SSE frame. Frames that are not log events (the snapshot, the shutdown
 * notice) carry the id of the last log event before them, so a client that
 * resumes from them (browsers send the last id seen) resumes at the right
 * place; none when the log is empty.
 */
function frame(id: string | undefined, event: string, data: unknown): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Waits until the socket took what was written (the stream's backpressure). */
function drained(raw: ServerResponse, signal: AbortSignal): Promise<void> {
  if (!raw.writableNeedDrain) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    raw.on('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The streaming of one plugin context: `stream` follows the log for a
 * request; the streams it opened are ended when the server closes.
 */
export function eventStreams(app: FastifyInstance) {
  const { engine } = app;
  const open = new Set<AbortController>();

  // Streams never end by themselves: close them first, or the server waits forever.
  app.addHook('preClose', (done) => {
    for (const stream of open) stream.abort('shutdown');
    done();
  });

  /**
   * Streams the log after `after` (or from now) to the client until it
   * disconnects or the server closes. `first` frames go out before the tail.
   */
  async function stream(
    request: FastifyRequest,
    reply: FastifyReply,
    filter: TailFilter,
    options: {
      first?: (lastId: string | undefined) => string;
      closeAfterFirst?: boolean;
      /** Ends the stream after an event of one of these types (a job stream: its job finished). */
      lastTypes?: ReadonlySet<string>;
      /** Where the live tail starts when the client resumes nothing (read before a snapshot). */
      from?: { after: string | undefined };
    } = {},
  ): Promise<void> {
    // A tenant's stream carries its jobs' events only.
    if (request.ojsTenant !== undefined) filter = { ...filter, tenant: request.ojsTenant.id };
    const query = request.query as Record<string, unknown>;
    const header = request.headers['last-event-id'];
    const resumeFrom =
      typeof header === 'string' && header !== ''
        ? header
        : typeof query.after === 'string' && query.after !== ''
          ? query.after
          : undefined;
    const resumed =
      resumeFrom === undefined ? undefined : await engine.events.resumePoint(filter, resumeFrom);
    const after =
      resumed !== undefined
        ? resumed.after
        : options.from !== undefined
          ? options.from.after
          : await engine.events.latestId(filter);
    const raw = reply.raw;
    reply.hijack();
    raw.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
      'OJS-Version': '1.0',
      'X-Request-Id': request.id,
    });
    raw.write(`retry: ${RETRY_MS}\n\n`);
    if (resumed?.gap) {
      // The events after Last-Event-ID are gone: say so, then go on from now (RT §2).
      raw.write(
        frame(after, 'system.gap', {
          channel: request.url.split('?')[0],
          gap_start: resumeFrom,
          gap_end: resumed.oldest,
          timestamp: new Date(engine.now()).toISOString(),
        }),
      );
    }
    if (options.first !== undefined && resumeFrom === undefined) raw.write(options.first(after));
    if (options.closeAfterFirst && resumeFrom === undefined) {
      raw.end();
      return;
    }
    const controller = new AbortController();
    open.add(controller);
    const { signal } = controller;
    // The response closes when the client goes away (or the stream ends).
    raw.on('close', () => controller.abort('client closed'));
    let lastId = after;
    const heartbeat = setInterval(() => raw.write(':heartbeat\n\n'), HEARTBEAT_MS);
    try {
      for await (const events of engine.events.follow(filter, after, signal)) {
        let text = '';
        for (const event of events) text += frame(event.id, event.type, event);
        lastId = events[events.length - 1]!.id;
        raw.write(text);
        if (options.lastTypes !== undefined && events.some((e) => options.lastTypes!.has(e.type))) {
          break;
        }
        await drained(raw, signal);
      }
    } catch (error) {
      engine.logger.warn({ err: error, request_id: request.id }, 'event stream failed');
    } finally {
      clearInterval(heartbeat);
      open.delete(controller);
      if (signal.reason === 'shutdown' && !raw.writableEnded) {
        raw.write(
          frame(lastId, 'server.shutdown', {
            reason: 'shutdown',
            grace_period_ms: 0,
          }),
        );
      }
      if (!raw.writableEnded) raw.end();
    }
  }

  /** Every event, with the list's filters (EV §6.4). */
  const all = (request: FastifyRequest, reply: FastifyReply) =>
    stream(request, reply, listFilter(request.query as Record<string, unknown>));
  return { stream, all };
}

/** The list's filters (EV §6.4), shared by the polling list and the streams. */
function listFilter(query: Record<string, unknown>): TailFilter {
  return {
    types: csv(query.types ?? query.event_types),
    queues: csv(query.queues),
    jobTypes: csv(query.job_types),
  };
}

export async function eventStreamRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;
  const { stream } = eventStreams(app);

  app.get('/ojs/v1/jobs/:id/events', async (request, reply) => {
    const { id } = request.params as { id: string };
    const { job, after, start } = await engine.openJobStream(id, request.ojsTenant);
    const query = request.query as Record<string, unknown>;
    const snapshot = (lastId: string | undefined) =>
      frame(lastId, start.event.type, start.event.data);
    await stream(
      request,
      reply,
      { queues: [job.queue], types: csv(query.event_types ?? query.types), subject: job.id },
      { first: snapshot, closeAfterFirst: start.ends, lastTypes: JOB_STREAM_ENDS, from: { after } },
    );
  });

  app.get('/ojs/v1/queues/:name/events', async (request, reply) => {
    const { name } = request.params as { name: string };
    const queues = await engine.listQueues();
    if (!queues.some((queue) => queue.name === name)) throw notFound('queue', name);
    const query = request.query as Record<string, unknown>;
    await stream(request, reply, { ...listFilter(query), queues: [name] });
  });
}
