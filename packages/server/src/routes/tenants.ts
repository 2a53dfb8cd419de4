/**
 * The multi-tenancy admin API (ext-multi-tenancy §2.4) under
 * /ojs/v1/admin/tenants: operator-scoped (admin role; the request's own
 * tenant does not narrow it), so a tenant created by its first enqueue is
 * found here without a tenant header. Records, limits and stats come from
 * the engine's tenant registry; bodies from its wire responses.
 */
import { toWire } from '@ojs/core';
import { tenantListResponse, tenantWire } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { listRequest, pagination } from '../admin-wire.ts';
import { objectBody } from '../wire.ts';

type Obj = Record<string, unknown>;

export async function tenantRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;
  const tenants = engine.tenants;
  const base = '/ojs/v1/admin/tenants';

  app.get(base, async () => {
    const records = await tenants.list();
    const items = await Promise.all(
      records.map(async (record) => ({
        record,
        stats: await tenants.stats(record.tenant_id, record),
      })),
    );
    return tenantListResponse(items);
  });

  app.get<{ Params: { id: string } }>(`${base}/:id`, async (request) => ({
    tenant: tenantWire(await tenants.require(request.params.id)),
  }));

  app.put<{ Params: { id: string } }>(`${base}/:id`, async (request, reply) => {
    const { record, created } = await tenants.put(request.params.id, objectBody(request.body));
    reply.code(created ? 201 : 200);
    return { tenant: tenantWire(record) };
  });

  app.put<{ Params: { id: string } }>(`${base}/:id/limits`, async (request) => {
    const body = objectBody(request.body);
    // The body is the limits, or {limits, reason}.
    const limits =
      body.limits !== undefined && typeof body.limits === 'object' ? body.limits : body;
    return { tenant: tenantWire(await tenants.setLimits(request.params.id, limits)) };
  });

  app.delete<{ Params: { id: string } }>(`${base}/:id`, async (request, reply) => {
    await tenants.delete(request.params.id);
    reply.code(204);
  });

  app.get<{ Params: { id: string } }>(`${base}/:id/jobs`, async (request) => {
    const listing = listRequest(request.query as Obj, true);
    const page = await engine.jobs.list(listing, { id: request.params.id });
    return { jobs: page.jobs.map(toWire), pagination: pagination(page, listing.limit) };
  });

  app.get<{ Params: { id: string } }>(`${base}/:id/stats`, async (request) =>
    tenants.stats(request.params.id),
  );
}
