/**
 * GET /ojs/manifest (HB §21, CONF §4). The declared level is the level this
 * server passes in CI, not the level it aims for.
 */
import { DEFAULT_MAX_BODY_BYTES, LIMITS, MAX_META_BYTES, MAX_WORKFLOW_STEPS } from '@ojs/core';
import { type Engine, MAX_ACK_BATCH } from '@ojs/engine';
import type { AppConfig } from './config.ts';
import { MAX_PUSH_MANY } from './routes/jobs.ts';

/** Highest conformance level whose suites pass on every store in CI. */
export const DECLARED_CONFORMANCE_LEVEL = 4;

export function buildManifest(engine: Engine, config: AppConfig): Record<string, unknown> {
  const level = DECLARED_CONFORMANCE_LEVEL;
  return {
    specversion: '1.0',
    ojs_version: '1.0',
    implementation: {
      name: 'ojs-ts',
      version: config.implementationVersion ?? '0.1.0',
      language: 'typescript',
      backend: engine.store.backend,
    },
    conformance_level: level,
    conformance_tier: 'runtime',
    // gRPC only when it is served (@ojs/grpc, ojs serve --grpc-port).
    protocols: config.grpc === undefined ? ['http'] : ['http', 'grpc'],
    backend: engine.store.backend,
    capabilities: {
      dead_letter: true,
      delayed_jobs: level >= 2,
      job_ttl: level >= 2,
      cron_jobs: level >= 2,
      workflows: level >= 3,
      batch_enqueue: level >= 4,
      priority_queues: level >= 4,
      unique_jobs: level >= 4,
      pause_resume: level >= 4,
      rate_limiting: level >= 4,
      schema_validation: true,
      job_versioning: true,
      long_poll_fetch: true,
      ack_batch: true,
      push_many: true,
      admin_api: true,
      job_search: true,
      bulk_operations: true,
      progress: true,
      queue_config: true,
      backpressure: true,
      retention: true,
      graceful_shutdown: true,
      metrics: config.metrics !== undefined,
      // Server-Sent Events at the RT paths and GET /ojs/v1/events (event-stream.ts).
      event_stream: true,
      // RT §3 subscriptions at /ojs/v1/ws (websocket.ts).
      websocket: true,
    },
    extensions: {
      official: [
        { name: 'schema-registry', uri: 'urn:ojs:ext:schema-registry', version: '1.0.0' },
        { name: 'admin-api', uri: 'urn:ojs:ext:admin-api', version: '1.0.0' },
        { name: 'dead-letter', uri: 'urn:ojs:ext:dead-letter', version: '1.0.0' },
        { name: 'rate-limiting', uri: 'urn:ojs:ext:rate-limiting', version: '1.0.0' },
        { name: 'progress', uri: 'urn:ojs:ext:progress', version: '1.0.0' },
        { name: 'queue-config', uri: 'urn:ojs:ext:queue-config', version: '1.0.0' },
        { name: 'graceful-shutdown', uri: 'urn:ojs:ext:graceful-shutdown', version: '1.0.0' },
        { name: 'middleware', uri: 'urn:ojs:ext:middleware', version: '1.0.0' },
        { name: 'observability', uri: 'urn:ojs:ext:observability', version: '1.0.0' },
      ],
      experimental: [
        {
          name: 'job-versioning',
          uri: 'urn:ojs:ext:experimental:job-versioning',
          version: '0.1.0',
        },
        { name: 'backpressure', uri: 'urn:ojs:ext:backpressure', version: '1.0.0' },
        // RT 0.1.0 (Experimental): Server-Sent Events and WebSocket.
        { name: 'realtime', uri: 'urn:ojs:ext:experimental:realtime', version: '0.1.0' },
        {
          // Ours: one request acknowledges many jobs (POST endpoints.ack_batch).
          name: 'ack-batch',
          uri: 'urn:ojs-ts:ext:ack-batch',
          version: '0.1.0',
        },
        {
          // Ours: one request carries many independent PUSHes (POST endpoints.push_many).
          name: 'push-many',
          uri: 'urn:ojs-ts:ext:push-many',
          version: '0.1.0',
        },
      ],
    },
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
    limits: {
      max_body_bytes: config.bodyLimit ?? DEFAULT_MAX_BODY_BYTES,
      max_meta_bytes: MAX_META_BYTES,
      max_batch_size: engine.maxBatchSize,
      max_fetch_count: engine.maxFetchCount,
      max_fetch_wait_ms: engine.maxFetchWaitMs,
      max_ack_batch: MAX_ACK_BATCH,
      max_push_many: MAX_PUSH_MANY,
      max_workflow_steps: MAX_WORKFLOW_STEPS,
      // Every bound of core limits.ts (strings, arrays, depth, numbers, schemas).
      ...LIMITS,
    },
    unique_job_strength: 'strong',
    // ACK/NACK/heartbeat are fenced on worker_id and attempt when sent, or
    // must send them (`ojs serve --require-fencing`).
    worker_fencing: engine.requireFencing ? 'required' : 'when_sent',
  };
}
