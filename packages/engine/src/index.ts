export {
  buildManifest,
  DECLARED_CONFORMANCE_LEVEL,
  type EngineCapabilities,
  type ExtensionEntry,
  engineCapabilities,
  MAX_PUSH_MANY,
  type ManifestBinding,
  pushManyItems,
} from './capabilities.ts';
export type { EngineContext, WorkerDirective } from './context.ts';
export { type CronContext, CronScheduler, cronToWire, parseCronRequest } from './cron.ts';
export * from './engine.ts';
export * from './enqueue-hooks.ts';
export { EventTail, type TailFilter } from './event-tail.ts';
export {
  type BulkResult,
  type BulkStep,
  JobAdmin,
  type JobListPage,
  type JobListRequest,
} from './job-admin.ts';
export * from './middleware.ts';
export { Notifier } from './notifier.ts';
export {
  elapsedMs,
  type JobObserver,
  JobObservers,
} from './observability/lifecycle.ts';
export { ErrorThrottle, LifecycleLog, type Logger, silentLogger } from './observability/log.ts';
export {
  DURATION_BUCKETS,
  instrumentStore,
  JobMetrics,
  LATENCY_BUCKETS,
  MAX_TENANT_LABELS,
  QUEUE_TIME_BUCKETS,
  registerQueueDepth,
  registerWebhookMetrics,
  TenantMetrics,
} from './observability/metrics.ts';
export {
  CounterSeries,
  HistogramSeries,
  SeriesCounter,
  SeriesHistogram,
} from './observability/series.ts';
export {
  JobTracing,
  jobAttributes,
  spanContextOf,
  tracingEnabled,
} from './observability/tracing.ts';
export { OutboxRelay, type OutboxRelayOptions } from './outbox-relay.ts';
export {
  type QueueConfiguration,
  type QueuePressure,
  QueueSettingsRegistry,
  setsRetry,
} from './queue-settings.ts';
export { type RetentionContext, type RetentionOptions, RetentionPruner } from './retention.ts';
export { type RoutingConfig, VersionRouter } from './routing.ts';
export {
  DispatchWindow,
  FairScheduler,
  POOL_NAMESPACE,
  type PoolView,
  type QueueDispatchStats,
} from './scheduling.ts';
export {
  type SchemaEntry,
  SchemaRegistry,
  VALIDATION_MODES,
  type ValidationMode,
} from './schemas.ts';
export type { ServiceIntervals, ServicesContext } from './services.ts';
export {
  TENANT_LIMITS_LINK,
  TENANT_NAMESPACE,
  type TenancyOptions,
  TenantRegistry,
  type TenantStats,
} from './tenants.ts';
export {
  type DeliveryQuery,
  type WebhookObserver,
  type WebhookOptions,
  WebhookService,
  type WebhookTestResult,
} from './webhooks/service.ts';

export * from './wire-responses.ts';
export {
  HEARTBEAT_TIMEOUT_MS,
  parseWorkerState,
  WORKER_STATES,
  type WorkerHealth,
  type WorkerRecord,
  WorkerRegistry,
  type WorkerState,
} from './workers.ts';
