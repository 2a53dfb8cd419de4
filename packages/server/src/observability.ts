/**
 * What `ojs serve` turns on for observing a server process: the job
 * lifecycle log and the Prometheus metrics (job counters and histograms,
 * queue depths, store latencies, Node process metrics). Traces need no
 * setup here: spans go through @opentelemetry/api and cost nothing until
 * the user registers a tracer provider (tracing.ts).
 */
import type { Store } from '@ojs/core';
import {
  type Engine,
  instrumentStore,
  JobMetrics,
  JobTracing,
  LifecycleLog,
  registerQueueDepth,
  registerWebhookMetrics,
  TenantMetrics,
} from '@ojs/engine';
import { collectDefaultMetrics, Registry } from 'prom-client';

export interface ObservabilityOptions {
  /** Prometheus metrics and GET /metrics (default true). */
  metrics?: boolean;
  /**
   * Level of the routine lifecycle lines (enqueued, started, completed);
   * default debug: at info they cost more than 10% of the hot path
   * (decision 0051). Failures are logged at warn/error either way.
   */
  lifecycleLevel?: 'info' | 'debug';
}

/** Registers the lifecycle log and the metrics on an engine; returns the registry, if any. */
export function observeEngine(
  engine: Engine,
  store: Store,
  options: ObservabilityOptions = {},
): Registry | undefined {
  engine.observers.add(new LifecycleLog(engine.logger, options.lifecycleLevel ?? 'debug'));
  // Spans only once the application registers a tracer provider (tracing.ts).
  engine.observers.add(new JobTracing());
  if (options.metrics === false) return undefined;
  const registry = new Registry();
  engine.observers.add(new JobMetrics(registry));
  engine.observers.add(new TenantMetrics(registry));
  registerQueueDepth(registry, store);
  registerWebhookMetrics(registry, engine.webhooks);
  instrumentStore(store, registry);
  collectDefaultMetrics({ register: registry });
  return registry;
}
