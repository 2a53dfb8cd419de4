/**
 * PUSH, batch PUSH, INFO, CANCEL and ACTIVATE under /ojs/v1/jobs, and the
 * job listing (GET /ojs/v1/jobs with filters and cursor pagination).
 * Enqueues into a bounded queue carry the backpressure headers (BP §7):
 * depth and bound on a 429 `QUEUE_FULL` (with Retry-After), and depth,
 * bound and pressure on accepted enqueues above the warning threshold.
 */
import { OjsError, toWire } from '@ojs/core';
import {
  activateResponse,
  batchPushResponse,
  cancelResponse,
  jobResponse,
  pushManyItems,
  pushManyResponse,
  pushResponse,
  type QueuePressure,
} from '@ojs/engine';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listRequest, pagination } from '../admin-wire.ts';
import { objectBody } from '../wire.ts';

function pressureHeaders(reply: FastifyReply, pressure: QueuePressure | undefined): void {
  if (pressure === undefined) return;
  reply.header('X-OJS-Queue-Depth', String(pressure.depth));
  reply.header('X-OJS-Queue-Bound', String(pressure.bound));
  reply.header('X-OJS-Queue-Pressure', String(Math.round(pressure.pressure * 1000) / 1000));
}

/** Runs an enqueue; a `QUEUE_FULL` refusal gets its headers before the error is sent. */
async function withBackpressure<T>(reply: FastifyReply, enqueue: () => Promise<T>): Promise<T> {
  try {
    return await enqueue();
  } catch (error) {
    if (error instanceof OjsError && error.code === 'QUEUE_FULL') {
      const details = error.details ?? {};
      reply.header('Retry-After', String(details.retry_after_seconds ?? 1));
      reply.header('X-OJS-Queue-Depth', String(details.depth));
      reply.header('X-OJS-Queue-Bound', String(details.bound));
    }
    throw error;
  }
}

export async function jobRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.post('/ojs/v1/jobs', async (request, reply) => {
    const body = objectBody(request.body);
    const result = await withBackpressure(reply, () => engine.enqueue(body, request.ojsTenant));
    const answer = pushResponse(result);
    reply.code(answer.status);
    if (result.status !== 'dropped') reply.header('Location', `/ojs/v1/jobs/${result.job.id}`);
    if (result.status === 'created') pressureHeaders(reply, result.pressure);
    return answer.body;
  });

  // Independent PUSHes in one request (our extension `push-many`, manifest
  // endpoints.push_many): each item is answered as POST /jobs would answer
  // it alone, with its status; unlike /jobs/batch, a refused item does not
  // refuse the others. A request that is not a list of objects is refused
  // whole before anything is stored.
  app.post('/ojs/v1/jobs/many', async (request) => {
    const jobs = pushManyItems(objectBody(request.body).jobs, 'jobs');
    return pushManyResponse(await engine.enqueueMany(jobs, request.ojsTenant));
  });

  app.post('/ojs/v1/jobs/batch', async (request, reply) => {
    const body = objectBody(request.body);
    const report: Parameters<typeof engine.enqueueBatch>[1] = {};
    const jobs = await withBackpressure(reply, () =>
      engine.enqueueBatch(body.jobs, report, request.ojsTenant),
    );
    reply.code(201);
    pressureHeaders(reply, report.pressure);
    return batchPushResponse(jobs, report.warnings);
  });

  app.get('/ojs/v1/jobs', async (request) => {
    const listing = listRequest(request.query as Record<string, unknown>, false);
    const page = await engine.jobs.list(listing, request.ojsTenant);
    return { jobs: page.jobs.map(toWire), pagination: pagination(page, listing.limit) };
  });

  app.get<{ Params: { id: string } }>('/ojs/v1/jobs/:id', async (request) => {
    return jobResponse(await engine.getJob(request.params.id, request.ojsTenant));
  });

  const cancel = async (
    request: FastifyRequest<{ Params: { id: string }; Querystring: { reason?: unknown } }>,
  ) => {
    // ?reason= is kept in the job's meta.cancel_reason (as gRPC CancelJob.reason is).
    const { reason } = request.query;
    const { before, after } = await engine.cancelJob(
      request.params.id,
      typeof reason === 'string' && reason !== '' ? reason : undefined,
      request.ojsTenant,
    );
    return cancelResponse(before, after);
  };
  app.delete<{ Params: { id: string }; Querystring: { reason?: unknown } }>(
    '/ojs/v1/jobs/:id',
    cancel,
  );
  // The per-job form the extension suites call (extensions digest §8, support).
  app.post<{ Params: { id: string }; Querystring: { reason?: unknown } }>(
    '/ojs/v1/jobs/:id/cancel',
    async (request) => {
      objectBody(request.body, { allowEmpty: true });
      return cancel(request);
    },
  );

  app.post<{ Params: { id: string } }>('/ojs/v1/jobs/:id/activate', async (request) => {
    objectBody(request.body, { allowEmpty: true });
    return activateResponse(await engine.activate(request.params.id, request.ojsTenant));
  });
}
