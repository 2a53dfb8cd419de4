/**
 * Manifest and the test-mode reset hook (health: health.ts).
 */
import type { FastifyInstance } from 'fastify';
import { buildManifest } from '../manifest.ts';

export async function systemRoutes(app: FastifyInstance): Promise<void> {
  const { engine, appConfig } = app;

  app.get('/ojs/manifest', async () => buildManifest(engine, appConfig));

  // Test mode only: the conformance runner wipes all state before each test.
  if (appConfig.testMode && engine.testMode) {
    app.post('/ojs/v1/admin/reset', async () => {
      await engine.reset();
      return { reset: true };
    });
  }
}
