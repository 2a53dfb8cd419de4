/**
 * Workflows (L3): create, inspect and cancel chain / group / batch and the
 * graph form (steps with ids and depends_on, http-binding §4.15).
 */
import { workflowOptionWarnings, workflowToWire } from '@ojs/core';
import type { FastifyInstance } from 'fastify';
import { objectBody } from '../wire.ts';

export async function workflowRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.post('/ojs/v1/workflows', async (request, reply) => {
    const body = objectBody(request.body);
    const workflow = await engine.createWorkflow(body, request.ojsTenant);
    reply.code(201).header('Location', `/ojs/v1/workflows/${workflow.id}`);
    // Typos in the jobs' options, as PUSH reports them (docs/error-codes.md).
    const warnings = workflowOptionWarnings(body);
    return warnings.length > 0
      ? { workflow: workflowToWire(workflow), warnings }
      : { workflow: workflowToWire(workflow) };
  });

  app.get<{ Params: { id: string } }>('/ojs/v1/workflows/:id', async (request) => {
    const workflow = await engine.getWorkflow(request.params.id, request.ojsTenant);
    return { workflow: workflowToWire(workflow, await engine.workflowJobs(workflow)) };
  });

  app.delete<{ Params: { id: string } }>('/ojs/v1/workflows/:id', async (request) => {
    return {
      workflow: workflowToWire(await engine.cancelWorkflow(request.params.id, request.ojsTenant)),
    };
  });
}
