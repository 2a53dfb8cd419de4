/**
 * Progress (`urn:ojs:ext:progress`, features §15): PUT reports progress of
 * an active job (clamped to [0, 1], monotonic within an attempt, extends
 * the lease like a heartbeat; ignored for a job that is not active), GET
 * reads it (`progress: null` when none was reported).
 */
import { parseProgressUpdate, progressToWire } from '@ojs/core';
import type { FastifyInstance } from 'fastify';
import { objectBody } from '../wire.ts';

export async function progressRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.put<{ Params: { id: string } }>('/ojs/v1/jobs/:id/progress', async (request, reply) => {
    const update = parseProgressUpdate(objectBody(request.body));
    const job = await engine.progress(request.params.id, update, request.ojsTenant);
    const body = progressToWire(job);
    if (typeof body.progress === 'number') reply.header('X-OJS-Progress', String(body.progress));
    return body;
  });

  app.get<{ Params: { id: string } }>('/ojs/v1/jobs/:id/progress', async (request, reply) => {
    const body = progressToWire(await engine.getJob(request.params.id, request.ojsTenant));
    reply.header('Cache-Control', 'no-cache');
    if (typeof body.progress === 'number') reply.header('X-OJS-Progress', String(body.progress));
    return body;
  });
}
