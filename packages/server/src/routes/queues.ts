/**
 * Queues: list (L0), stats, pause and resume (L4). Stats and pause answer
 * the union of the HB and OA shapes (http-binding digest §4.12).
 */
import { queuePageResponse, queuePausedResponse, queueStatsResponse } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { objectBody, pageParams } from '../wire.ts';

export async function queueRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.get('/ojs/v1/queues', async (request) => {
    const { limit, offset } = pageParams(request.query as Record<string, unknown>);
    return queuePageResponse(await engine.listQueues(), limit, offset);
  });

  app.get<{ Params: { name: string } }>('/ojs/v1/queues/:name/stats', async (request) => {
    return queueStatsResponse(
      await engine.queueStats(request.params.name, request.ojsTenant),
      engine.now(),
    );
  });

  // Queue configuration (queue-config extension paths; the admin API has the same).
  app.get<{ Params: { name: string } }>('/ojs/v1/queues/:name', async (request) => {
    const stats = await engine.queueStats(request.params.name, request.ojsTenant);
    return {
      queue: {
        name: stats.name,
        paused: stats.paused,
        status: stats.paused ? 'paused' : 'active',
        counts: stats.counts,
        configuration: await engine.queueSettings.configuration(stats.name),
      },
    };
  });
  app.put<{ Params: { name: string } }>('/ojs/v1/queues/:name/config', async (request) => ({
    queue: {
      name: request.params.name,
      configuration: await engine.queueSettings.configure(
        request.params.name,
        objectBody(request.body),
      ),
    },
  }));

  const setPaused =
    (paused: boolean) => async (request: { params: { name: string }; body: unknown }) => {
      objectBody(request.body, { allowEmpty: true });
      const info = await engine.setQueuePaused(request.params.name, paused);
      return queuePausedResponse(info.name, paused, engine.now());
    };
  app.post<{ Params: { name: string } }>('/ojs/v1/queues/:name/pause', setPaused(true));
  app.post<{ Params: { name: string } }>('/ojs/v1/queues/:name/resume', setPaused(false));
}
