/**
 * Starting and stopping a server process: store, engine, HTTP listener,
 * background services, and a graceful shutdown on SIGTERM/SIGINT that stops
 * accepting requests, lets in-flight ones finish and closes the store.
 */
import { isIP } from 'node:net';
import {
  parseApiKeys,
  parseRetention,
  parseRetrySchedule,
  type RetentionPolicy,
  type Store,
  startQuietGc,
} from '@ojs/core';
import {
  Engine,
  ErrorThrottle,
  loadEnqueueHooks,
  type OutboxRelayOptions,
  type TenancyOptions,
  VALIDATION_MODES,
  type ValidationMode,
} from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { AppConfig } from './config.ts';
import {
  type GrpcServeOptions,
  type GrpcServer,
  grpcServed,
  readGrpcTls,
  startGrpcBinding,
} from './grpc-binding.ts';
import {
  createLogger,
  type LogFormat,
  type LogLevel,
  parseLogFormat,
  parseLogLevel,
} from './logging.ts';
import { observeEngine } from './observability.ts';

export { parseLogFormat, parseLogLevel };

import { createStore, DEFAULT_STORE, describeStore } from './stores.ts';

export interface ServeOptions extends GrpcServeOptions {
  host?: string;
  port?: number;
  store?: string;
  testMode?: boolean;
  apiKeys?: string;
  visibilityTimeoutMs?: number;
  /** How often a waiting fetch re-checks the store without a notify (default 250 ms). */
  fetchRecheckMs?: number;
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  /** Run SQLite's statements on their own thread (default false: on the event loop, decision 0080). */
  sqliteThread?: boolean;
  /** Default schema validation mode at enqueue: strict, warn (default) or off. */
  schemaValidation?: ValidationMode;
  /** Refuse ACK/NACK without worker_id and attempt, fetch and heartbeat without worker_id. */
  requireFencing?: boolean;
  logger?: boolean;
  handleSignals?: boolean;
  /** Retention of finished jobs per final state (parseRetentionSpec), over the defaults. */
  retention?: Partial<RetentionPolicy>;
  /**
   * Graceful shutdown: how long the server stays up draining (health 503
   * `draining`, FETCH hands out nothing, ACK/FAIL/heartbeats still served)
   * before it stops accepting requests. Default 0.
   */
  drainMs?: number;
  /** pino level (default info; `silent` turns logging off). */
  logLevel?: LogLevel;
  /** json (default) or pretty (for a terminal). */
  logFormat?: LogFormat;
  /** A log line per HTTP request (default off). */
  logRequests?: boolean;
  /** Prometheus metrics and GET /metrics (default on). */
  metrics?: boolean;
  /** Serve the web dashboard at /ojs/admin/ (default true; --no-dashboard, OJS_DASHBOARD=off). */
  dashboard?: boolean;
  /**
   * Give memory back after a burst once the server is quiet: its main
   * thread and the SQLite store thread (core startQuietGc, decision 0075).
   * Default true; --no-quiet-gc, OJS_QUIET_GC=off.
   */
  quietGc?: boolean;
  /**
   * Webhooks may deliver to loopback, private, link-local and metadata
   * addresses (tests, development; --webhooks-allow-private,
   * OJS_WEBHOOKS_ALLOW_PRIVATE=on).
   */
  webhooksAllowPrivate?: boolean;
  /** Webhook subscriptions may use http: URLs (--webhooks-allow-http, OJS_WEBHOOKS_ALLOW_HTTP=on). */
  webhooksAllowHttp?: boolean;
  /** Delay before each webhook attempt, ms (parseWebhookSchedule; at least 5 attempts). */
  webhooksRetrySchedule?: number[];
  /**
   * Multi-tenancy: `strict` refuses jobs and requests naming no tenant
   * (400; C9's opt-in, --tenancy-strict, OJS_TENANCY_STRICT=on); `fairness`
   * interleaves tenants at dispatch (default on).
   */
  tenancy?: TenancyOptions;
  /**
   * Transactional enqueue's relay (PostgreSQL store): on by default in
   * every process; `enabled: false` (--no-outbox-relay, OJS_OUTBOX_RELAY=off)
   * leaves it to others; `leaseMs` (--outbox-lease-ms, OJS_OUTBOX_LEASE_MS)
   * is how long a dead process's rows wait.
   */
  outbox?: OutboxRelayOptions;
  /**
   * The server's enqueue hooks, in order: built-ins by name (`ojs_validate`,
   * `required_meta:KEY,...`, `max_args_bytes:[QUEUE=]N,...`) and module
   * paths (engine enqueue-hooks.ts). Test mode puts `ojs_validate` first.
   */
  enqueueHooks?: string[];
  /** How long one job may spend in the enqueue hooks before a 500 (default 5000 ms). */
  enqueueHookTimeoutMs?: number;
}

/**
 * `0,30s,2m,10m,1h,4h,12h,24h`: the delay before each webhook attempt, in
 * ms or with a unit (ms, s, m, h); at least 5 attempts.
 */
export function parseWebhookSchedule(text: string): number[] {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, '': 1 };
  const delays = text.split(',').map((part) => {
    const match = /^\s*(\d{1,9})(ms|s|m|h)?\s*$/.exec(part);
    if (match === null) {
      throw new Error(
        `Webhook retry schedule: '${part}' is not a delay such as 500ms, 30s, 2m or 1h.`,
      );
    }
    return Number(match[1]) * units[match[2] ?? '']!;
  });
  return parseRetrySchedule(delays);
}

/**
 * `completed=P1D,cancelled=P7D,discarded=P30D,dead_letter=P180D` (any
 * subset; `never` keeps that class forever) -> retention in ms. An unknown
 * class or a bad duration is an error naming it.
 */
export function parseRetentionSpec(text: string): Partial<RetentionPolicy> {
  const entries: Record<string, string> = {};
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    const [key, value, extra] = part.split('=');
    if (key === undefined || value === undefined || extra !== undefined) {
      throw new Error(
        `Retention must be class=DURATION pairs such as completed=P1D (got '${part}').`,
      );
    }
    entries[key.trim()] = value.trim();
  }
  try {
    return parseRetention(entries);
  } catch (error) {
    throw new Error(`Invalid retention '${text}': ${(error as Error).message}`);
  }
}

function nonNegativeInt(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${name} must be an integer >= 0 (got '${value}').`);
  return n;
}

export interface RunningServer {
  app: FastifyInstance;
  engine: Engine;
  url: string;
  /** `host:port` of the gRPC binding when it is served. */
  grpcAddress?: string;
  grpcPort?: number;
  close(): Promise<void>;
}

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

export function parseValidationMode(value: string): ValidationMode {
  if (!(VALIDATION_MODES as readonly string[]).includes(value)) {
    throw new Error(
      `Schema validation mode must be one of ${VALIDATION_MODES.join(', ')} (got '${value}').`,
    );
  }
  return value as ValidationMode;
}

/** A TCP port number 0..65535 (0 = ephemeral); anything else is an error naming the source. */
export function parsePort(text: string, name: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(port) || port > 65535) {
    throw new Error(`${name} must be a port number 0..65535 (got '${text}').`);
  }
  return port;
}

export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): ServeOptions {
  const options: ServeOptions = {};
  if (env.OJS_HOST) options.host = env.OJS_HOST;
  if (env.OJS_PORT) options.port = parsePort(env.OJS_PORT, 'OJS_PORT');
  if (env.OJS_STORE) options.store = env.OJS_STORE;
  if (env.OJS_TEST_MODE === '1' || env.OJS_TEST_MODE === 'true') options.testMode = true;
  if (env.OJS_API_KEYS) options.apiKeys = env.OJS_API_KEYS;
  if (env.OJS_VISIBILITY_TIMEOUT_MS)
    options.visibilityTimeoutMs = Number(env.OJS_VISIBILITY_TIMEOUT_MS);
  if (env.OJS_FETCH_RECHECK_MS) {
    const ms = Number(env.OJS_FETCH_RECHECK_MS);
    if (!Number.isInteger(ms) || ms < 1 || ms > 3_600_000) {
      throw new Error(
        `OJS_FETCH_RECHECK_MS must be an integer from 1 to 3600000 (got '${env.OJS_FETCH_RECHECK_MS}').`,
      );
    }
    options.fetchRecheckMs = ms;
  }
  if (env.OJS_SCHEMA_VALIDATION)
    options.schemaValidation = parseValidationMode(env.OJS_SCHEMA_VALIDATION);
  if (env.OJS_REQUIRE_FENCING !== undefined && env.OJS_REQUIRE_FENCING !== '') {
    options.requireFencing = parseSwitch('OJS_REQUIRE_FENCING', env.OJS_REQUIRE_FENCING);
  }
  if (env.OJS_GRPC_PORT) options.grpcPort = parsePort(env.OJS_GRPC_PORT, 'OJS_GRPC_PORT');
  if (env.OJS_GRPC_TLS_CERT) options.grpcTlsCert = env.OJS_GRPC_TLS_CERT;
  if (env.OJS_GRPC_TLS_KEY) options.grpcTlsKey = env.OJS_GRPC_TLS_KEY;
  if (env.OJS_GRPC_TLS_CA) options.grpcTlsCa = env.OJS_GRPC_TLS_CA;
  if (env.OJS_GRPC !== undefined && env.OJS_GRPC !== '') {
    options.grpc = parseSwitch('OJS_GRPC', env.OJS_GRPC);
  }
  if (env.OJS_RETENTION) options.retention = parseRetentionSpec(env.OJS_RETENTION);
  if (env.OJS_SHUTDOWN_DRAIN_MS)
    options.drainMs = nonNegativeInt(env.OJS_SHUTDOWN_DRAIN_MS, 'OJS_SHUTDOWN_DRAIN_MS');
  if (env.OJS_SQLITE_SYNCHRONOUS !== undefined && env.OJS_SQLITE_SYNCHRONOUS !== '') {
    if (env.OJS_SQLITE_SYNCHRONOUS !== 'NORMAL' && env.OJS_SQLITE_SYNCHRONOUS !== 'FULL') {
      throw new Error(
        `OJS_SQLITE_SYNCHRONOUS must be FULL or NORMAL (got '${env.OJS_SQLITE_SYNCHRONOUS}').`,
      );
    }
    options.sqliteSynchronous = env.OJS_SQLITE_SYNCHRONOUS;
  }
  if (env.OJS_LOG_LEVEL) options.logLevel = parseLogLevel(env.OJS_LOG_LEVEL);
  if (env.OJS_LOG_FORMAT) options.logFormat = parseLogFormat(env.OJS_LOG_FORMAT);
  if (env.OJS_LOG_REQUESTS)
    options.logRequests = parseSwitch('OJS_LOG_REQUESTS', env.OJS_LOG_REQUESTS);
  if (env.OJS_METRICS) options.metrics = parseSwitch('OJS_METRICS', env.OJS_METRICS);
  if (env.OJS_DASHBOARD !== undefined && env.OJS_DASHBOARD !== '') {
    options.dashboard = parseSwitch('OJS_DASHBOARD', env.OJS_DASHBOARD);
  }
  if (env.OJS_TENANCY_STRICT !== undefined && env.OJS_TENANCY_STRICT !== '') {
    options.tenancy = {
      ...options.tenancy,
      strict: parseSwitch('OJS_TENANCY_STRICT', env.OJS_TENANCY_STRICT),
    };
  }
  if (env.OJS_TENANT_FAIRNESS !== undefined && env.OJS_TENANT_FAIRNESS !== '') {
    options.tenancy = {
      ...options.tenancy,
      fairness: parseSwitch('OJS_TENANT_FAIRNESS', env.OJS_TENANT_FAIRNESS),
    };
  }
  if (env.OJS_OUTBOX_RELAY !== undefined && env.OJS_OUTBOX_RELAY !== '') {
    options.outbox = {
      ...options.outbox,
      enabled: parseSwitch('OJS_OUTBOX_RELAY', env.OJS_OUTBOX_RELAY),
    };
  }
  if (env.OJS_OUTBOX_LEASE_MS !== undefined && env.OJS_OUTBOX_LEASE_MS !== '') {
    options.outbox = {
      ...options.outbox,
      leaseMs: parseOutboxLeaseMs('OJS_OUTBOX_LEASE_MS', env.OJS_OUTBOX_LEASE_MS),
    };
  }
  if (env.OJS_QUIET_GC !== undefined && env.OJS_QUIET_GC !== '') {
    options.quietGc = parseSwitch('OJS_QUIET_GC', env.OJS_QUIET_GC);
  }
  if (env.OJS_ENQUEUE_HOOKS) options.enqueueHooks = parseEnqueueHookList(env.OJS_ENQUEUE_HOOKS);
  if (env.OJS_ENQUEUE_HOOK_TIMEOUT_MS) {
    options.enqueueHookTimeoutMs = nonNegativeInt(
      env.OJS_ENQUEUE_HOOK_TIMEOUT_MS,
      'OJS_ENQUEUE_HOOK_TIMEOUT_MS',
    );
  }
  if (env.OJS_SQLITE_THREAD !== undefined && env.OJS_SQLITE_THREAD !== '') {
    options.sqliteThread = parseSwitch('OJS_SQLITE_THREAD', env.OJS_SQLITE_THREAD);
  }
  if (env.OJS_WEBHOOKS_ALLOW_PRIVATE !== undefined && env.OJS_WEBHOOKS_ALLOW_PRIVATE !== '') {
    options.webhooksAllowPrivate = parseSwitch(
      'OJS_WEBHOOKS_ALLOW_PRIVATE',
      env.OJS_WEBHOOKS_ALLOW_PRIVATE,
    );
  }
  if (env.OJS_WEBHOOKS_ALLOW_HTTP !== undefined && env.OJS_WEBHOOKS_ALLOW_HTTP !== '') {
    options.webhooksAllowHttp = parseSwitch('OJS_WEBHOOKS_ALLOW_HTTP', env.OJS_WEBHOOKS_ALLOW_HTTP);
  }
  if (env.OJS_WEBHOOKS_RETRY_SCHEDULE) {
    options.webhooksRetrySchedule = parseWebhookSchedule(env.OJS_WEBHOOKS_RETRY_SCHEDULE);
  }
  return options;
}

/** `OJS_ENQUEUE_HOOKS`: hook specs separated by `;`. */
export function parseEnqueueHookList(text: string): string[] {
  return text
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The hook specs a server runs: test mode adds the suites' `ojs_validate` probe first. */
export function enqueueHookSpecs(options: ServeOptions): string[] {
  const specs = options.enqueueHooks ?? [];
  return options.testMode && !specs.some((s) => s.split(':')[0] === 'ojs_validate')
    ? ['ojs_validate', ...specs]
    : specs;
}

/** An on/off environment variable; anything else is a configuration error. */
/** The outbox relay's lease: an integer of ms, 1,000 .. 3,600,000 (--outbox-lease-ms, OJS_OUTBOX_LEASE_MS). */
export function parseOutboxLeaseMs(name: string, text: string): number {
  const ms = Number(text);
  if (!/^\d+$/.test(text.trim()) || ms < 1000 || ms > 3_600_000) {
    throw new Error(
      `${name} must be an integer of milliseconds from 1000 to 3600000 (got '${text}').`,
    );
  }
  return ms;
}

function parseSwitch(name: string, text: string): boolean {
  const value = text.toLowerCase();
  if (!['1', '0', 'true', 'false', 'on', 'off'].includes(value)) {
    throw new Error(`${name} must be on or off (got '${text}').`);
  }
  return value === '1' || value === 'true' || value === 'on';
}

/** init() once; a shared store that is unreachable is reported and retried by the caller. */
async function initStore(
  store: Store,
  spec: string,
  log: (line: string) => void,
): Promise<boolean> {
  try {
    await store.init();
    return true;
  } catch (error) {
    // An embedded store that cannot open is a configuration error: fail fast.
    if (store.backend === 'sqlite') throw error;
    log(`store ${describeStore(spec)} unavailable at start: ${(error as Error).message}; retrying`);
    return false;
  }
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 8080;
  const auth = options.apiKeys ? parseApiKeys(options.apiKeys) : undefined;
  if (options.testMode && !isLoopback(host)) {
    throw new Error(
      `Test mode wipes all data on request and is refused on ${host}; bind 127.0.0.1 or turn test mode off.`,
    );
  }
  if (!isLoopback(host) && auth === undefined && !options.allowInsecure) {
    throw new Error(
      `Binding ${host} exposes the server beyond this machine: set OJS_API_KEYS (e.g. "admin:<key>,worker:<key>") or pass --allow-insecure.`,
    );
  }
  // Read before anything opens, so a bad path leaves nothing behind.
  const tls = readGrpcTls(options);
  const enqueueHooks = await loadEnqueueHooks(enqueueHookSpecs(options));
  const storeSpec = options.store ?? DEFAULT_STORE;
  const { logger, flush } = await createLogger({
    level: options.logLevel,
    format: options.logFormat,
  });
  const log = (line: string) => logger.warn(line);
  // Decided before anything opens: a refused gRPC setting leaves nothing behind.
  const serveGrpc = grpcServed(options, { host, loopback: isLoopback(host), tls }, log);
  // A store's own background errors (a lost LISTEN connection, a failed
  // checkpoint) repeat while the outage lasts: logged once, then summarised.
  const storeErrors = new ErrorThrottle(logger);
  const store = await createStore(storeSpec, {
    sqliteSynchronous: options.sqliteSynchronous,
    sqliteThread: options.sqliteThread,
    quietGc: options.quietGc ?? true,
    onError: (error, context) => storeErrors.failed(`store: ${context}`, error, 'store error'),
    log: (level, message) => logger[level](message),
  });
  // A shared store that is down at start is retried in the background while
  // /ojs/v1/health answers 503: the process does not crash-loop.
  const ready = await initStore(store, storeSpec, log);
  const engine = new Engine({
    store,
    testMode: options.testMode,
    visibilityTimeoutMs: options.visibilityTimeoutMs,
    fetchRecheckMs: options.fetchRecheckMs,
    schemaValidation: options.schemaValidation,
    requireFencing: options.requireFencing,
    retention: options.retention,
    logger,
    webhooks: {
      allowPrivate: options.webhooksAllowPrivate,
      allowHttp: options.webhooksAllowHttp,
      retrySchedule: options.webhooksRetrySchedule,
    },
    tenancy: options.tenancy,
    outbox: options.outbox,
    enqueueHooks,
    enqueueHookTimeoutMs: options.enqueueHookTimeoutMs,
  });
  const metrics = observeEngine(engine, store, { metrics: options.metrics });
  const appConfig: AppConfig = {
    testMode: options.testMode,
    auth,
    logger: options.logger ?? false,
    logRequests: options.logRequests,
    metrics,
    dashboard: options.dashboard ?? true,
  };
  const app = await buildApp(appConfig, engine);
  let retrying: NodeJS.Timeout | undefined;
  let closed = false;
  if (ready) engine.start();
  else {
    let delay = 1000;
    const retry = () => {
      retrying = setTimeout(async () => {
        if (closed) return;
        try {
          await store.init();
          log('store reachable again; services started');
          engine.start();
        } catch (error) {
          delay = Math.min(delay * 2, 30_000);
          log(
            `store still unavailable (${(error as Error).message}); retrying in ${delay / 1000} s`,
          );
          retry();
        }
      }, delay);
    };
    retry();
  }
  // HTTP answers first; gRPC starts once it does (decision 0098): grpc-js
  // and the protobuf descriptors are most of what a server loads at start.
  // The manifest lists gRPC from the moment it is bound; startServer
  // returns (and `ojs serve` prints its lines) once both listen.
  let grpc: GrpcServer | undefined;
  try {
    await app.listen({ host, port });
    if (serveGrpc) {
      grpc = await startGrpcBinding(options, { engine, appConfig, host, port, tls }, log);
    }
  } catch (error) {
    // Port taken, say: nothing is left open behind the error.
    clearTimeout(retrying);
    await engine.stop();
    await app.close();
    await store.close();
    throw error;
  }
  const address = app.server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;
  const stopQuietGc =
    options.quietGc === false
      ? undefined
      : startQuietGc({
          onReduced: (before, after, pauseMs) =>
            logger.debug(
              { heap_before: before, heap_after: after, pause_ms: Math.round(pauseMs) },
              'memory given back after a burst',
            ),
        });

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      closed = true;
      clearTimeout(retrying);
      stopQuietGc?.();
      // Draining first: health says so and FETCH hands out nothing, while
      // workers still ACK, FAIL and heartbeat the jobs they hold.
      engine.beginDrain();
      if ((options.drainMs ?? 0) > 0) {
        await new Promise((resolve) => setTimeout(resolve, options.drainMs));
      }
      // gRPC streams end with UNAVAILABLE, new calls are refused; waiting
      // long polls return at once; in-flight requests finish; then the store closes.
      const grpcClosed = grpc?.close();
      await engine.stop();
      await grpcClosed;
      await app.close();
      await store.close();
      flush();
    })();
    return closing;
  };
  if (options.handleSignals) {
    const onSignal = (signal: NodeJS.Signals) => {
      process.stderr.write(`ojs: ${signal} received, shutting down\n`);
      close().then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`ojs: shutdown failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }
  process.stderr.write(
    `ojs: store ${describeStore(storeSpec)}${options.testMode ? ' (TEST MODE: reset endpoint enabled)' : ''}\n`,
  );
  return {
    app,
    engine,
    url,
    ...(grpc === undefined ? {} : { grpcAddress: grpc.address, grpcPort: grpc.port }),
    close,
  };
}
