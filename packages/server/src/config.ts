/**
 * What buildApp is given: the HTTP binding's settings. Its own module so
 * the routes and the manifest can read the type without importing app.ts
 * (which imports them).
 */
import type { AuthConfig } from '@ojs/core';
import type { Registry } from 'prom-client';

export interface AppConfig {
  /** Request body limit in bytes (413 above it); the gRPC binding applies it to a message. */
  bodyLimit?: number;
  /** Enables POST /ojs/v1/admin/reset (the engine must be in test mode too). */
  testMode?: boolean;
  auth?: AuthConfig;
  /** Fastify logger; false in tests. */
  logger?: boolean | Record<string, unknown>;
  implementationVersion?: string;
  /**
   * Log a line per request (method, url, status, time) through the engine's
   * logger. Off by default: it costs a child logger per request.
   */
  logRequests?: boolean;
  /** The process's metrics registry: serves GET /metrics and times every request. */
  metrics?: Registry;
  /** Set when the gRPC binding is served: the manifest lists it (protocols, endpoints.grpc). */
  grpc?: { port: number };
  /** Serve the web dashboard at /ojs/admin/ (packages/dashboard); its API routes are always on. */
  dashboard?: boolean;
}
