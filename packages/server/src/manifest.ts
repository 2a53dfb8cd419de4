/**
 * GET /ojs/manifest (HB §21, CONF §4): the engine's capabilities
 * (engine capabilities.ts) as this HTTP binding serves them. The declared
 * level is the level this server passes in CI, not the level it aims for.
 */
import { DEFAULT_MAX_BODY_BYTES } from '@ojs/core';
import { type Engine, buildManifest as manifestOf } from '@ojs/engine';
import type { AppConfig } from './config.ts';

export { DECLARED_CONFORMANCE_LEVEL } from '@ojs/engine';

export function buildManifest(engine: Engine, config: AppConfig): Record<string, unknown> {
  return manifestOf(engine.capabilities(), {
    // gRPC only when it is served (@ojs/grpc, ojs serve --grpc-port).
    protocols: config.grpc === undefined ? ['http'] : ['http', 'grpc'],
    implementationVersion: config.implementationVersion,
    maxBodyBytes: config.bodyLimit ?? DEFAULT_MAX_BODY_BYTES,
    // GET /metrics only when a registry is served.
    notServed: config.metrics === undefined ? ['metrics'] : [],
    endpoints: {
      base_url: '/ojs/v1',
      manifest: '/ojs/manifest',
      health: '/ojs/v1/health',
      ack_batch: '/ojs/v1/workers/ack/batch',
      push_many: '/ojs/v1/jobs/many',
      admin: '/ojs/v1/admin',
      ready: '/ojs/v1/ready',
      events_stream: '/ojs/v1/events',
      job_events_stream: '/ojs/v1/jobs/{id}/events',
      queue_events_stream: '/ojs/v1/queues/{name}/events',
      websocket: '/ojs/v1/ws',
      live: '/ojs/v1/live',
      ...(config.metrics === undefined ? {} : { metrics: '/metrics' }),
      ...(config.grpc === undefined
        ? {}
        : { grpc: { port: config.grpc.port, service: 'ojs.v1.OJSService' } }),
    },
  });
}
