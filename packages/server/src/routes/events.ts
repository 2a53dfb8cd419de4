/**
 * Event polling (EV §6.4): GET /ojs/v1/events with type, queue and job type
 * filters and an `after` cursor.
 */
import { eventPageResponse } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { csv, pageParams } from '../wire.ts';
import { eventStreams, wantsEventStream } from './event-stream.ts';

export async function eventRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;
  const streams = eventStreams(app);

  app.get('/ojs/v1/events', async (request, reply) => {
    // Accept: text/event-stream asks for the live stream (event-stream.ts).
    if (wantsEventStream(request)) return streams.all(request, reply);
    const query = request.query as Record<string, unknown>;
    const { limit } = pageParams(query, 100, 1000);
    const events = await engine.listEvents(
      {
        types: csv(query.types ?? query.event_types),
        queues: csv(query.queues),
        jobTypes: csv(query.job_types),
        after: typeof query.after === 'string' && query.after !== '' ? query.after : undefined,
        limit: limit + 1,
      },
      request.ojsTenant,
    );
    return eventPageResponse(events, limit, query.after);
  });
}
