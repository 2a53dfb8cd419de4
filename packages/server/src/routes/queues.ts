/**
 * Queues: list (L0), stats, pause and resume (L4). Stats and pause answer
 * the union of the HB and OA shapes (http-binding digest §4.12).
 */
import { toIso } from '@ojs/core';
import type { FastifyInstance } from 'fastify';
import { objectBody, pageParams } from '../wire.ts';

export async function queueRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.get('/ojs/v1/queues', async (request) => {
    const { limit, offset } = pageParams(request.query as Record<string, unknown>);
    const all = await engine.listQueues();
    const page = all.slice(offset, offset + limit);
    return {
      queues: page.map((q) => ({ ...q, status: q.paused ? 'paused' : 'active' })),
      pagination: { total: all.length, limit, offset, has_more: offset + page.length < all.length },
    };
  });

  app.get<{ Params: { name: string } }>('/ojs/v1/queues/:name/stats', async (request) => {
    const stats = await engine.queueStats(request.params.name);
    const { counts } = stats;
    const status = stats.paused ? 'paused' : 'active';
    const depth = counts.available + counts.scheduled + counts.retryable + counts.pending;
    return {
      queue: { name: stats.name, paused: stats.paused, status, ...counts },
      status,
      stats: {
        queue: stats.name,
        depth,
        ...counts,
        completed_last_hour: stats.completed_last_hour,
        failed_last_hour: stats.failed_last_hour,
        throughput_per_second: Math.round((stats.completed_last_minute / 60) * 1000) / 1000,
      },
      computed_at: toIso(engine.now()),
    };
  });

  // Queue configuration (queue-config extension paths; the admin API has the same).
  app.get<{ Params: { name: string } }>('/ojs/v1/queues/:name', async (request) => {
    const stats = await engine.queueStats(request.params.name);
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
      const status = paused ? 'paused' : 'active';
      const at = toIso(engine.now());
      return {
        queue: { name: info.name, paused, status },
        status,
        ...(paused ? { paused_at: at } : { resumed_at: at }),
      };
    };
  app.post<{ Params: { name: string } }>('/ojs/v1/queues/:name/pause', setPaused(true));
  app.post<{ Params: { name: string } }>('/ojs/v1/queues/:name/resume', setPaused(false));
}
