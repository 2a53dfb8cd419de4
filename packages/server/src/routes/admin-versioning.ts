/**
 * Job versioning admin endpoints (seed 004 §11, features §9): the schema
 * registry under /ojs/v1/admin/schemas and canary routing rules under
 * /ojs/v1/admin/routing. Schema responses are flat (`$.type`, `$.version`,
 * `$.schema`), as the extension suites read them.
 */
import type { SchemaEntry } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { objectBody } from '../wire.ts';

type Params = { type: string; version: string };

function schemaWire(entry: SchemaEntry): Record<string, unknown> {
  const { version_num: _num, ...rest } = entry;
  return rest;
}

export async function adminVersioningRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.put<{ Params: Params }>('/ojs/v1/admin/schemas/:type/:version', async (request, reply) => {
    const entry = await engine.schemas.register(
      request.params.type,
      request.params.version,
      objectBody(request.body, { allowEmpty: true }),
    );
    reply.code(201);
    return schemaWire(entry);
  });

  app.get<{ Params: Params }>('/ojs/v1/admin/schemas/:type/:version', async (request) =>
    schemaWire(await engine.schemas.get(request.params.type, request.params.version)),
  );

  app.delete<{ Params: Params }>('/ojs/v1/admin/schemas/:type/:version', async (request) => {
    const entry = await engine.schemas.delete(request.params.type, request.params.version);
    return { deleted: true, type: entry.type, version: entry.version };
  });

  app.get<{ Params: { type: string } }>('/ojs/v1/admin/schemas/:type', async (request) =>
    schemaWire(await engine.schemas.latest(request.params.type)),
  );

  app.get<{ Params: { type: string } }>('/ojs/v1/admin/schemas/:type/versions', async (request) => {
    const entries = await engine.schemas.list(request.params.type);
    return {
      type: request.params.type,
      versions: entries.map((e, i) => ({
        version: e.version,
        created_at: e.created_at,
        is_latest: i === 0,
        compatible_with: e.compatible_with ?? [],
      })),
    };
  });

  app.put<{ Params: { type: string } }>(
    '/ojs/v1/admin/schemas/:type/validation',
    async (request) => {
      const body = objectBody(request.body);
      // Accept the shape GET answers ({validation: {mode}}) as well as {mode}.
      const nested = body.validation as { mode?: unknown } | undefined;
      const mode = await engine.schemas.setMode(request.params.type, body.mode ?? nested?.mode);
      return { type: request.params.type, validation: { mode } };
    },
  );

  app.get<{ Params: { type: string } }>(
    '/ojs/v1/admin/schemas/:type/validation',
    async (request) => ({
      type: request.params.type,
      validation: { mode: await engine.schemas.modeFor(request.params.type) },
    }),
  );

  app.put<{ Params: { type: string } }>('/ojs/v1/admin/routing/:type', async (request) => ({
    routing: await engine.routing.put(request.params.type, objectBody(request.body)),
  }));

  app.get<{ Params: { type: string } }>('/ojs/v1/admin/routing/:type', async (request) => ({
    routing: await engine.routing.get(request.params.type),
  }));

  app.delete<{ Params: { type: string } }>('/ojs/v1/admin/routing/:type', async (request) => {
    await engine.routing.delete(request.params.type);
    return { deleted: true, type: request.params.type };
  });
}
