/**
 * Health, liveness and readiness (http-binding §4.2; ext-observability).
 * These answer without an API key, so load balancers and orchestrators can
 * probe them, and therefore reveal nothing a stranger should not see: no
 * connection strings, no store error text (that goes to the log), no queue
 * names.
 *
 * - `GET /ojs/v1/health` (and `/health`): the structured report, 200 `ok`,
 *   503 `error` while the store is unreachable, 503 `draining` during a
 *   graceful shutdown. `backend.status` is `ok`/`unhealthy`, the conformance
 *   suite's vocabulary (EXT-OBS-002), not OA's connected/disconnected
 *   (decision 0050).
 * - `GET /ojs/v1/ready` (and `/ready`): may this process take traffic? 503
 *   while the store is unreachable or the server drains.
 * - `GET /ojs/v1/live` (and `/live`): is the process serving at all? Never
 *   touches the store, so a store outage does not get the process killed.
 */
import { healthResponse } from '@ojs/engine';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Paths served without authentication (auth.ts lets them through). */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set([
  '/ojs/v1/health',
  '/health',
  '/ojs/v1/ready',
  '/ready',
  '/ojs/v1/live',
  '/live',
]);

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;
  const startedAt = Date.now();
  const uptime = () => Math.floor((Date.now() - startedAt) / 1000);

  const health = async (_request: FastifyRequest, reply: FastifyReply) => {
    const report = await engine.health();
    // Draining (graceful shutdown): not ready for new work, so load
    // balancers and readiness probes move traffic away (GS §Other rules).
    if (!report.ok || report.draining) reply.code(503);
    // The store's own message (host names, ports) is logged, not shown.
    return healthResponse(report, { backend: engine.store.backend, uptimeSeconds: uptime() });
  };
  app.get('/ojs/v1/health', health);
  app.get('/health', health);

  const ready = async (_request: FastifyRequest, reply: FastifyReply) => {
    const report = await engine.health();
    const reason = !report.ok ? 'store_unreachable' : report.draining ? 'draining' : undefined;
    if (reason !== undefined) {
      reply.code(503);
      return { status: 'not_ready', reason };
    }
    return { status: 'ready' };
  };
  app.get('/ojs/v1/ready', ready);
  app.get('/ready', ready);

  const live = async () => ({ status: 'ok', uptime_seconds: uptime() });
  app.get('/ojs/v1/live', live);
  app.get('/live', live);
}
