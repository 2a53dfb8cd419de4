/**
 * Dead letter (L1, and the dead-letter extension, http-binding §11): list,
 * inspect, retry and delete jobs discarded with on_exhaustion dead_letter,
 * one at a time or by filter (bulk retry and purge need `confirm: true`),
 * and stats. The data plane under /ojs/v1/dead-letter answers the binding's
 * shapes (`jobs` + offset pagination); the admin paths under
 * /ojs/v1/admin/dead-letter answer `{items, pagination}`.
 */
import {
  invalidRequest,
  type JobFilter,
  notFound,
  parseIsoDuration,
  parseJobFilter,
  type TenantScope,
  toWire,
} from '@ojs/core';
import { deadLetterPageResponse, deadLetterRetryResponse } from '@ojs/engine';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bulkFilter, bulkStep, listRequest, pagination, requireConfirm } from '../admin-wire.ts';
import { objectBody, pageParams } from '../wire.ts';

type Obj = Record<string, unknown>;

const DEAD: JobFilter = { states: ['discarded'], deadLetter: true };

/** `{older_than?, queue?, filter?, confirm: true}` of a purge. */
function purgeFilter(body: Obj, now: number): JobFilter {
  requireConfirm(body);
  const { older_than, confirm: _confirm, filter, limit: _limit, cursor: _cursor, ...rest } = body;
  const base = parseJobFilter(
    { ...(typeof filter === 'object' && filter !== null ? (filter as Obj) : {}), ...rest },
    true,
  );
  if (older_than === undefined) return { ...base, ...DEAD };
  const ms = typeof older_than === 'string' ? parseIsoDuration(older_than) : null;
  if (ms === null) {
    throw invalidRequest('older_than must be an ISO 8601 duration such as "P30D".', {
      field: 'older_than',
    });
  }
  return { ...base, ...DEAD, createdTo: now - ms };
}

export async function deadLetterRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.get('/ojs/v1/dead-letter', async (request) => {
    const query = request.query as Record<string, unknown>;
    const { limit, offset } = pageParams(query, 50, 1000);
    const queue = typeof query.queue === 'string' && query.queue !== '' ? query.queue : undefined;
    return deadLetterPageResponse(
      await engine.listDeadLetter(queue, limit, offset, request.ojsTenant),
      limit,
      offset,
    );
  });

  const stats = async (request: FastifyRequest) => {
    const counts = await engine.store.countJobsByQueue();
    const byQueue: Record<string, number> = {};
    const tenant = request.ojsTenant === undefined ? {} : { tenant: request.ojsTenant.id };
    let total = 0;
    for (const { queue, state } of counts) {
      if (state !== 'discarded') continue;
      const n = await engine.store.countJobs({ ...DEAD, queues: [queue], ...tenant });
      if (n > 0) byQueue[queue] = n;
      total += n;
    }
    return { total, by_queue: byQueue };
  };

  const getOne = async (id: string, tenant: TenantScope | undefined) => {
    const job = await engine.getJob(id, tenant);
    if (!(job.state === 'discarded' && job.dead_letter)) {
      throw notFound('dead_letter_job', id);
    }
    return toWire(job);
  };

  const bulkRetry = async (body: Obj, tenant: TenantScope | undefined) => {
    const result = await engine.jobs.bulk(
      'retry',
      { ...bulkFilter(body), ...DEAD },
      bulkStep(body),
      tenant,
    );
    return { retried: result.succeeded, ...result };
  };

  const purge = async (body: Obj, tenant: TenantScope | undefined) => {
    const result = await engine.jobs.bulk(
      'delete',
      purgeFilter(body, engine.now()),
      bulkStep(body),
      tenant,
    );
    return { purged_count: result.succeeded, ...result };
  };

  for (const base of ['/ojs/v1/dead-letter', '/ojs/v1/admin/dead-letter']) {
    app.get(`${base}/stats`, stats);
    app.post(`${base}/retry`, async (request) =>
      bulkRetry(objectBody(request.body), request.ojsTenant),
    );
    app.delete(base, async (request) => purge(objectBody(request.body), request.ojsTenant));
    app.get<{ Params: { id: string } }>(`${base}/:id`, async (request) => ({
      job: await getOne(request.params.id, request.ojsTenant),
    }));
    app.post<{ Params: { id: string } }>(`${base}/:id/retry`, async (request) => {
      objectBody(request.body, { allowEmpty: true });
      return deadLetterRetryResponse(
        await engine.retryDeadLetter(request.params.id, request.ojsTenant),
      );
    });
  }

  app.delete<{ Params: { id: string } }>('/ojs/v1/dead-letter/:id', async (request) => {
    await engine.deleteDeadLetter(request.params.id, request.ojsTenant);
    return { deleted: true, job_id: request.params.id };
  });

  // The extension's list and delete shapes: {items, pagination}; 204 (OA, CS).
  app.get('/ojs/v1/admin/dead-letter', async (request) => {
    const listing = listRequest(request.query as Obj, true);
    listing.filter = { ...listing.filter, ...DEAD };
    const page = await engine.jobs.list(listing, request.ojsTenant);
    return { items: page.jobs.map(toWire), pagination: pagination(page, listing.limit) };
  });

  app.delete<{ Params: { id: string } }>(
    '/ojs/v1/admin/dead-letter/:id',
    async (request, reply) => {
      await engine.deleteDeadLetter(request.params.id, request.ojsTenant);
      reply.code(204);
    },
  );
}
