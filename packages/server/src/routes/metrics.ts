/**
 * GET /metrics: the Prometheus text exposition of the process's registry
 * (job metrics, queue depths, store and HTTP latencies, Node process
 * metrics). `Content-Type: text/plain` exactly (the ext-observability suite
 * compares it byte for byte; Prometheus reads text/plain as format 0.0.4).
 * Served when metrics are on (`--metrics`, default on); under API keys it
 * is the admin role's, like every operations endpoint.
 */
import { SeriesHistogram } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

export function metricsRoutes(registry: Registry) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/metrics', async (_request, reply) => {
      const text = await registry.metrics();
      reply.header('Content-Type', 'text/plain');
      return text;
    });
  };
}

/**
 * HTTP request metrics: one histogram by method, route pattern (never the
 * raw URL: ids would explode the series) and status code.
 */
export function registerHttpMetrics(
  app: FastifyInstance,
  registry: Registry,
  buckets: number[],
): void {
  // series.ts: the series of a label set is found by one Map lookup, and
  // observing it is a bucket search and three additions (no label hash).
  const histogram = new SeriesHistogram({
    name: 'ojs_http_request_duration_seconds',
    help: 'HTTP requests by method, route and status code.',
    labelNames: ['method', 'route', 'status_code'],
    buckets,
    registers: [registry],
  });
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    histogram
      .labels(request.method, route, String(reply.statusCode))
      .observe(reply.elapsedTime / 1000);
    done();
  });
}
