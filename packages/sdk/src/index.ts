/**
 * @ojs/sdk: Open Job Spec client and worker for TypeScript.
 * Zero runtime dependencies; Node >= 18 (global fetch, AbortController).
 *
 *   import { OjsClient, OjsWorker } from '@ojs/sdk';
 *   const client = new OjsClient({ url: 'http://127.0.0.1:8080' });
 *   await client.enqueue('email.send', ['ada@example.com']);
 *   const worker = new OjsWorker({ url: 'http://127.0.0.1:8080', concurrency: 16 });
 *   worker.register('email.send', async (ctx) => send(ctx.args[0], { signal: ctx.signal }));
 *   await worker.start();
 *
 * Transactional enqueue (PostgreSQL store): `enqueueInTransaction(client, ...)`
 * with the application's own pg / postgres.js connection.
 * In-process mode: `@ojs/sdk/in-process`. Test modes: `@ojs/sdk/testing`
 * (also exported here as `testing`).
 */
export {
  type BulkAction,
  type BulkResult,
  type BulkStep,
  type JobFilter,
  type JobQuery,
  type JobQueryPage,
  OjsAdmin,
  type OutboxEntry,
  type OutboxPage,
  type OutboxQuery,
  type Pool,
  type PoolDefinition,
  type PoolStatus,
  type QueueConfigUpdate,
  type SchedulingStats,
  type SchedulingStrategy,
  type TenantInfo,
  type TenantLimits,
  type TenantUpdate,
} from './admin.ts';
export {
  buildEnvelope,
  Client,
  type ClientOptions,
  type JobTypeMap,
  manifestSupports,
  OjsClient,
  toIsoDuration,
  toWireRetry,
  toWireUnique,
} from './client.ts';
export {
  AesGcmCodec,
  type AesGcmOptions,
  CODEC_META,
  type Codec,
  CodecChain,
  CodecError,
  ENCRYPTED_PLACEHOLDER,
  fromBase64,
  GzipCodec,
  generateKey,
  isEncoded,
  toBase64,
  ZstdCodec,
} from './codec.ts';
export {
  consoleLogger,
  type Logger,
  type LogLevel,
  silentLogger,
} from './config.ts';
export {
  AuthenticationError,
  BackendError,
  ConflictError,
  ConnectionError,
  DiscardError,
  DuplicateJobError,
  JobCancelledError,
  JobNotFoundError,
  JobTimeoutError,
  LeaseLostError,
  NotFoundError,
  OjsError,
  type OjsErrorOptions,
  PayloadTooLargeError,
  PermissionDeniedError,
  parseErrorResponse,
  QueuePausedError,
  RateLimitedError,
  ShutdownError,
  SnoozeError,
  TimeoutError,
  UnsupportedFeatureError,
  ValidationError,
  WorkflowNotFoundError,
} from './errors.ts';
export {
  type EventStreamOptions,
  type EventStreamQuery,
  eventStreamPath,
} from './event-stream.ts';
export {
  type ErrorCodeInfo,
  ErrorCodes,
  lookupErrorCode,
  normalizeErrorCode,
} from './generated/error-codes.ts';
export { OJS_MEDIA_TYPE } from './generated/media-type.ts';
export { isUuidv7, uuidv7 } from './generated/uuid.ts';
export {
  type VerifyOptions,
  verifyWebhookSignature,
  webhookSignature,
  webhookSignatureHeader,
} from './generated/webhook-signature.ts';
export { GraphBuilder, type GraphDefinition, type GraphStep, graph } from './graph.ts';
export {
  HttpTransport,
  type HttpTransportOptions,
  SDK_VERSION,
  type TransportRetryOptions,
} from './http.ts';
export {
  currentTraceContext,
  type EnqueueMiddleware,
  type EnqueueNext,
  type ExecutionMiddleware,
  type ExecutionNext,
  type JobContext,
  MiddlewareChain,
  newTraceparent,
  parseTraceparent,
  type TraceContext,
  traceContext,
  traceContextEnqueue,
  traceContextExecution,
  withTraceContext,
} from './middleware.ts';
export { testing } from './testing.ts';
export {
  enqueueEnvelopeInTransaction,
  enqueueInTransaction,
  type PostgresJsSql,
  type SqlAdapter,
  type SqlRow,
  type TransactionalDb,
  type TransactionalEnqueueOptions,
  type TransactionalOptions,
} from './transactional.ts';
export * from './types.ts';
export type {
  OjsWebhooks,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookDeliveryQuery,
  WebhookDeliveryState,
  WebhookFilter,
  WebhookSubscription,
  WebhookSubscriptionInput,
  WebhookSubscriptionPatch,
  WebhookTestResult,
} from './webhooks.ts';
export {
  backtraceOf,
  describeError,
  type HandlerOptions,
  type JobHandler,
  OjsWorker,
  Worker,
  type WorkerEvents,
  type WorkerOptions,
  type WorkerState,
} from './worker.ts';
