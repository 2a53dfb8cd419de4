/**
 * Dead letter (L1): list, retry and delete jobs discarded with
 * on_exhaustion dead_letter.
 */
import { toWire } from '@ojs/core';
import type { FastifyInstance } from 'fastify';
import { objectBody, pageParams } from '../wire.ts';

export async function deadLetterRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.get('/ojs/v1/dead-letter', async (request) => {
    const query = request.query as Record<string, unknown>;
    const { limit, offset } = pageParams(query, 50, 1000);
    const queue = typeof query.queue === 'string' && query.queue !== '' ? query.queue : undefined;
    const page = await engine.listDeadLetter(queue, limit, offset);
    return {
      jobs: page.items.map(toWire),
      pagination: {
        total: page.total,
        limit,
        offset,
        has_more: offset + page.items.length < page.total,
      },
    };
  });

  app.post<{ Params: { id: string } }>('/ojs/v1/dead-letter/:id/retry', async (request) => {
    objectBody(request.body, { allowEmpty: true });
    const job = await engine.retryDeadLetter(request.params.id);
    return { job: { ...toWire(job), re_enqueued_at: job.enqueued_at } };
  });

  app.delete<{ Params: { id: string } }>('/ojs/v1/dead-letter/:id', async (request) => {
    await engine.deleteDeadLetter(request.params.id);
    return { deleted: true, job_id: request.params.id };
  });
}
