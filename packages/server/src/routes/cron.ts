/**
 * Cron (L2): register (upsert), list, get, enable/disable, delete. Responses
 * carry both the OA/suite wrapper (`cron`, `crons`) and the cron spec's
 * (`cron_job`, `cron_jobs`).
 */
import { invalidRequest, optionWarnings, toWire } from '@ojs/core';
import { cronToWire } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { objectBody } from '../wire.ts';

export async function cronRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.post('/ojs/v1/cron', async (request, reply) => {
    const body = objectBody(request.body);
    const { created, cron } = await engine.cron.register(body, request.ojsTenant);
    const entry = cronToWire(cron);
    reply.code(created ? 201 : 200);
    // A typo in the job's options is reported as PUSH reports it (flat or job_template body).
    const warnings = optionWarnings(
      typeof body.job_template === 'object' && body.job_template !== null
        ? body.job_template
        : body,
    );
    return warnings.length > 0
      ? { cron: entry, cron_job: entry, warnings }
      : { cron: entry, cron_job: entry };
  });

  app.get('/ojs/v1/cron', async () => {
    const crons = (await engine.store.listCrons()).map(cronToWire);
    return { crons, cron_jobs: crons, count: crons.length };
  });

  app.get<{ Params: { name: string } }>('/ojs/v1/cron/:name', async (request) => {
    const entry = cronToWire(await engine.cron.get(request.params.name));
    return { cron: entry, cron_job: entry };
  });

  app.patch<{ Params: { name: string } }>('/ojs/v1/cron/:name', async (request) => {
    const body = objectBody(request.body);
    if (typeof body.enabled !== 'boolean') {
      throw invalidRequest('enabled must be a boolean.', { field: 'enabled' });
    }
    const entry = cronToWire(await engine.cron.setEnabled(request.params.name, body.enabled));
    return { cron: entry, cron_job: entry };
  });

  // Ours (operators, `ojs cron trigger`): enqueue the cron's job now; the schedule is unchanged.
  app.post<{ Params: { name: string } }>('/ojs/v1/cron/:name/trigger', async (request, reply) => {
    objectBody(request.body, { allowEmpty: true });
    const job = await engine.cron.trigger(request.params.name);
    reply.code(201);
    return { job: toWire(job) };
  });

  app.delete<{ Params: { name: string } }>('/ojs/v1/cron/:name', async (request) => {
    const entry = cronToWire(await engine.cron.delete(request.params.name));
    return { deleted: true, name: entry.name, cron: entry, cron_job: entry };
  });
}
