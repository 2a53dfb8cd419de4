/**
 * PUSH, batch PUSH, INFO, CANCEL and ACTIVATE under /ojs/v1/jobs.
 */
import { toWire } from '@ojs/core';
import type { FastifyInstance } from 'fastify';
import { objectBody } from '../wire.ts';

export async function jobRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.post('/ojs/v1/jobs', async (request, reply) => {
    const body = objectBody(request.body);
    const result = await engine.enqueue(body);
    switch (result.status) {
      case 'created':
        reply.code(201).header('Location', `/ojs/v1/jobs/${result.job.id}`);
        // Schema validation in warn mode accepts the job and reports why (features §9).
        return result.warnings
          ? { job: toWire(result.job), warnings: result.warnings }
          : { job: toWire(result.job) };
      case 'existing':
        // unique on_conflict ignore: the job that already holds the key (L4-UNIQ-004).
        reply.code(200).header('Location', `/ojs/v1/jobs/${result.job.id}`);
        return { job: toWire(result.job), duplicate: true, deduplicated: true };
      case 'dropped':
        // An enqueue middleware dropped the job: not an error, nothing stored.
        return { job: null, enqueued: false };
    }
  });

  app.post('/ojs/v1/jobs/batch', async (request, reply) => {
    const body = objectBody(request.body);
    const report: { warnings?: { index: number; warnings: string[] }[] } = {};
    const jobs = await engine.enqueueBatch(body.jobs, report);
    reply.code(201);
    return {
      jobs: jobs.map(toWire),
      count: jobs.length,
      ...(report.warnings ? { warnings: report.warnings } : {}),
    };
  });

  app.get<{ Params: { id: string } }>('/ojs/v1/jobs/:id', async (request) => {
    return { job: toWire(await engine.getJob(request.params.id)) };
  });

  app.delete<{ Params: { id: string } }>('/ojs/v1/jobs/:id', async (request) => {
    const { before, after } = await engine.cancelJob(request.params.id);
    return { job: { ...toWire(after), previous_state: before.state } };
  });

  app.post<{ Params: { id: string } }>('/ojs/v1/jobs/:id/activate', async (request) => {
    objectBody(request.body, { allowEmpty: true });
    const job = await engine.activate(request.params.id);
    return { job: { ...toWire(job), activated_at: job.enqueued_at, previous_state: 'pending' } };
  });
}
