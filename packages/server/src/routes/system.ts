/**
 * Manifest, health and the test-mode reset hook.
 */
import type { FastifyInstance } from 'fastify';
import { buildManifest } from '../manifest.ts';

export async function systemRoutes(app: FastifyInstance): Promise<void> {
  const { engine, appConfig } = app;
  const startedAt = Date.now();

  app.get('/ojs/manifest', async () => buildManifest(engine, appConfig));

  app.get('/ojs/v1/health', async (_request, reply) => {
    const health = await engine.health();
    // Draining (graceful shutdown): not ready for new work, so load
    // balancers and readiness probes move traffic away (GS §Other rules).
    if (!health.ok || health.draining) reply.code(503);
    return {
      status: health.ok ? (health.draining ? 'draining' : 'ok') : 'error',
      version: '1.0',
      uptime_seconds: Math.floor((Date.now() - startedAt) / 1000),
      backend: {
        type: engine.store.backend,
        status: health.ok ? 'connected' : 'disconnected',
        latency_ms: health.latencyMs,
        ...(health.error === undefined ? {} : { error: health.error }),
      },
    };
  });

  // Test mode only: the conformance runner wipes all state before each test.
  if (appConfig.testMode && engine.testMode) {
    app.post('/ojs/v1/admin/reset', async () => {
      await engine.reset();
      return { reset: true };
    });
  }
}
