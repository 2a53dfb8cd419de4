/**
 * Fair scheduling's admin routes (`urn:ojs:ext:fair-scheduling` §4.2):
 * pools (list, upsert in both body forms, delete) and the one-minute
 * dispatch stats. The decisions are the engine's (engine scheduling.ts).
 */
import { poolListResponse, poolResponse, schedulingStatsResponse } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';

export async function schedulingRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.get('/ojs/v1/admin/pools', async () => poolListResponse(await engine.scheduling.listPools()));

  app.get<{ Params: { name: string } }>('/ojs/v1/admin/pools/:name', async (request) => ({
    pool: await engine.scheduling.getPool(request.params.name),
  }));

  app.put<{ Params: { name: string } }>('/ojs/v1/admin/pools/:name', async (request, reply) => {
    const { status, body } = poolResponse(
      await engine.scheduling.putPool(request.params.name, request.body),
    );
    reply.code(status);
    return body;
  });

  app.delete<{ Params: { name: string } }>('/ojs/v1/admin/pools/:name', async (request, reply) => {
    await engine.scheduling.deletePool(request.params.name);
    reply.code(204);
  });

  app.get('/ojs/v1/admin/scheduling/stats', async () =>
    schedulingStatsResponse(await engine.scheduling.stats()),
  );
}
