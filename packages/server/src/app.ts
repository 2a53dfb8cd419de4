/**
 * buildApp(config, engine): the HTTP binding as a Fastify instance that is
 * not listening yet, so tests inject requests and main() decides where it
 * binds. Every response, errors and 404s included, carries the exact OJS
 * media type, OJS-Version and X-Request-Id.
 */

import { createRequire } from 'node:module';
import {
  checkRequestText,
  DEFAULT_MAX_BODY_BYTES,
  decodeRequestText,
  MAX_PATH_PARAM_BYTES,
  OjsError,
  requestTooLarge,
  resolveTenant,
  TENANT_HEADERS,
  type TenantScope,
} from '@ojs/core';
import { type Engine, LATENCY_BUCKETS } from '@ojs/engine';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
} from 'fastify';
import { authenticate, authorize, isDashboardAsset } from './auth.ts';
import { clientErrorHandler } from './client-errors.ts';
import type { AppConfig } from './config.ts';
import { adminRoutes } from './routes/admin.ts';
import { adminVersioningRoutes } from './routes/admin-versioning.ts';
import { cronRoutes } from './routes/cron.ts';
import { dashboardRoutes } from './routes/dashboard.ts';
import { dashboardApiRoutes } from './routes/dashboard-api.ts';
import { deadLetterRoutes } from './routes/dead-letter.ts';
import { eventStreamRoutes } from './routes/event-stream.ts';
import { eventRoutes } from './routes/events.ts';
import { healthRoutes } from './routes/health.ts';
import { jobRoutes } from './routes/jobs.ts';
import { metricsRoutes, registerHttpMetrics } from './routes/metrics.ts';
import { outboxRoutes } from './routes/outbox.ts';
import { progressRoutes } from './routes/progress.ts';
import { queueRoutes } from './routes/queues.ts';
import { rateLimitRoutes } from './routes/rate-limits.ts';
import { schedulingRoutes } from './routes/scheduling.ts';
import { systemRoutes } from './routes/system.ts';
import { tenantRoutes } from './routes/tenants.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { websocketRoutes } from './routes/websocket.ts';
import { workerRoutes } from './routes/workers.ts';
import { workflowRoutes } from './routes/workflows.ts';
import {
  isJsonMediaType,
  OJS_MEDIA_TYPE,
  OJS_VERSION,
  parseJsonBody,
  requestIdFrom,
} from './wire.ts';

declare module 'fastify' {
  interface FastifyInstance {
    engine: Engine;
    appConfig: AppConfig;
  }
  interface FastifyRequest {
    /**
     * The tenant the request acts for (X-OJS-Tenant, or the key's bound
     * tenant), resolved once here and handed to every engine operation;
     * undefined: an operator or shared worker (every tenant).
     */
    ojsTenant?: TenantScope;
  }
}

/** Maps framework errors (parser, body limit, router) onto the error catalogue. */
function toOjsError(error: FastifyError, bodyLimit: number): OjsError {
  if (error instanceof OjsError) return error;
  switch (error.code) {
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new OjsError(
        'uri_too_long',
        `A path parameter is longer than ${MAX_PATH_PARAM_BYTES} bytes.`,
        { max_bytes: MAX_PATH_PARAM_BYTES },
      );
    case 'FST_ERR_BAD_URL':
      return new OjsError(
        'invalid_request',
        'The request path is not valid: a percent-encoding is malformed or not UTF-8.',
      );
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return requestTooLarge(bodyLimit);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new OjsError('invalid_request', error.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new OjsError('invalid_payload', error.message);
  }
  if (
    error.validation !== undefined ||
    (error.statusCode !== undefined && error.statusCode < 500)
  ) {
    return new OjsError('invalid_request', error.message);
  }
  return new OjsError('internal_error', 'Internal server error.');
}

/** Each string of a parameter object (path or query; a repeated query key is an array) is storable text of at most `maxBytes`. */
function checkParams(source: unknown, maxBytes: number): void {
  if (typeof source !== 'object' || source === null) return;
  for (const name in source) {
    const value = (source as Record<string, unknown>)[name];
    if (typeof value === 'string') checkRequestText(name, value, maxBytes);
    else if (Array.isArray(value)) {
      for (const text of value)
        if (typeof text === 'string') checkRequestText(name, text, maxBytes);
    }
  }
}

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;

/**
 * Fastify's own schema compilers (ajv and fast-json-stringify, ~40
 * modules), loaded by the first route with a schema instead of by every
 * Fastify instance as it is made: no route here has one (the bodies are
 * checked by core), so a server starts without them (decision 0098).
 * Resolved from fastify, as fastify itself would. (Given as factories,
 * fastify counts them as custom compilers: a header schema would be
 * compiled as written, not with its keys lower-cased.)
 */
function lazySchemaCompilers(): CompilersFactory {
  const builders = new Map<string, (...args: unknown[]) => never>();
  const load = (name: string) => {
    let builder = builders.get(name);
    if (builder === undefined) {
      builder = createRequire(import.meta.resolve('fastify'))(name)() as (
        ...args: unknown[]
      ) => never;
      builders.set(name, builder);
    }
    return builder;
  };
  return {
    buildValidator: (...args: unknown[]) => load('@fastify/ajv-compiler')(...args),
    buildSerializer: (...args: unknown[]) => load('@fastify/fast-json-stringify-compiler')(...args),
  };
}

export async function buildApp(config: AppConfig, engine: Engine): Promise<FastifyInstance> {
  const bodyLimit = config.bodyLimit ?? DEFAULT_MAX_BODY_BYTES;
  const app = Fastify({
    ...(config.logRequests
      ? // (Typed as Fastify's base logger so the instance type stays the default one.)
        { loggerInstance: engine.logger as unknown as FastifyBaseLogger }
      : { logger: config.logger ?? false }),
    bodyLimit,
    genReqId: (req) => requestIdFrom(req.headers['x-request-id']),
    // The suite sleeps up to 6 s between steps on a kept-alive connection.
    keepAliveTimeout: 65_000,
    requestTimeout: 60_000,
    return503OnClosing: true,
    // Longer than any stored name or id (core limits.ts), so everything the
    // server accepts can be addressed by path; longer parameters get a 414.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_BYTES },
    // Errors the router raises before any route (bad percent-encoding, a
    // parameter too long) get the OJS envelope, after authentication.
    frameworkErrors: (error, request, reply) => {
      const failed = config.auth ? authenticate(request, config.auth) : undefined;
      const ojs = failed ?? toOjsError(error as FastifyError, bodyLimit);
      // (reply is typed for route replies; this one has no route.)
      (reply as unknown as FastifyReply)
        .code(ojs.status)
        .header('OJS-Version', OJS_VERSION)
        .header('X-Request-Id', request.id)
        .header('Content-Type', OJS_MEDIA_TYPE)
        // A Buffer, so the media type goes out exactly as set (no charset).
        .send(Buffer.from(JSON.stringify(ojs.toBody(request.id))));
    },
    // Requests Node's HTTP parser refuses (431, malformed request lines, bytes
    // outside ASCII in the path) never reach a route: answer them in the
    // envelope too, with Connection: close, since the connection ends.
    clientErrorHandler,
    schemaController: { compilersFactory: lazySchemaCompilers() },
  });
  app.decorate('engine', engine);
  app.decorate('appConfig', config);

  // Only the two JSON media types are accepted; anything else is a 400 (HB §4).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    let text: string;
    try {
      text = decodeRequestText(body as Buffer);
    } catch (error) {
      return done(error as Error);
    }
    if (!isJsonMediaType(req.headers['content-type'])) {
      if (text.trim() === '') return done(null, undefined);
      return done(
        new OjsError(
          'invalid_request',
          `Content-Type '${req.headers['content-type'] ?? ''}' is not supported; use ${OJS_MEDIA_TYPE}.`,
        ),
      );
    }
    try {
      done(null, parseJsonBody(text));
    } catch (error) {
      done(error as Error);
    }
  });

  // One callback-style onRequest hook for everything a request needs before
  // its route: the binding's headers, then authentication (when keys are
  // configured), then the tenant. Each hook Fastify runs costs its hook
  // runner on every request, and an async hook a promise and a microtask
  // hop too (decision 0124).
  const auth = config.auth !== undefined && config.auth.keys.length > 0 ? config.auth : undefined;
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('OJS-Version', OJS_VERSION);
    reply.header('X-Request-Id', request.id);
    if (auth !== undefined) {
      const refused = authorize(request, auth);
      if (refused !== undefined) return done(refused);
    }
    // After authentication: the key's tenant is known. A request naming no
    // tenant (the common case) reads two absent headers and nothing more.
    const headers = request.headers;
    const named = headers[TENANT_HEADERS[0]] ?? headers[TENANT_HEADERS[1]];
    if (named === undefined && request.ojsKeyTenant === undefined) return done();
    try {
      request.ojsTenant = resolveTenant(
        Array.isArray(named) ? named[0] : named,
        request.ojsKeyTenant,
      );
    } catch (error) {
      return done(error as Error);
    }
    done();
  });
  // Path and query parameters: storable text of bounded size (core limits.ts),
  // checked before any route reads them. (The query's size is bounded by
  // Node's header limit: 431 above it.) No allocation for a request without
  // any (the worker protocol's and PUSH's paths).
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      checkParams(request.params, MAX_PATH_PARAM_BYTES);
      checkParams(request.query, Number.POSITIVE_INFINITY);
    } catch (error) {
      return done(error as Error);
    }
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    // Exactly this media type, no charset (the suite compares it byte for byte).
    // The dashboard's files keep their own types (HTML, JS, CSS); its 404s
    // and errors are JSON and get the OJS media type like any other.
    const type = reply.getHeader('content-type');
    if (
      payload !== null &&
      payload !== undefined &&
      type !== 'text/plain' &&
      !(isDashboardAsset(_request.url) && !String(type ?? '').startsWith('application/json'))
    ) {
      reply.header('Content-Type', OJS_MEDIA_TYPE);
    }
    done(null, payload);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const ojs = toOjsError(error, bodyLimit);
    if (ojs.code === 'internal_error') {
      engine.logger.error({ err: error, request_id: request.id }, 'unhandled error');
    }
    // Any refusal that says when to come back (a hook's quota, say) says so in the header.
    const retryAfter = ojs.retryAfterSeconds;
    if (retryAfter !== undefined && (ojs.status === 429 || ojs.status === 503)) {
      reply.header('Retry-After', String(retryAfter));
    }
    reply.code(ojs.status).send(ojs.toBody(request.id));
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new OjsError(
      'not_found',
      `No route for ${request.method} ${request.url.split('?')[0]}.`,
      {
        resource_type: 'route',
        resource_id: request.url.split('?')[0],
      },
    );
    reply.code(404).send(error.toBody(request.id));
  });

  if (config.metrics !== undefined) {
    registerHttpMetrics(app, config.metrics, LATENCY_BUCKETS);
    await app.register(metricsRoutes(config.metrics));
  }
  await app.register(systemRoutes);
  await app.register(healthRoutes);
  await app.register(jobRoutes);
  await app.register(workerRoutes);
  await app.register(queueRoutes);
  await app.register(deadLetterRoutes);
  await app.register(eventStreamRoutes);
  await app.register(websocketRoutes);
  await app.register(eventRoutes);
  await app.register(workflowRoutes);
  await app.register(cronRoutes);
  await app.register(schedulingRoutes);
  await app.register(adminVersioningRoutes);
  await app.register(adminRoutes);
  await app.register(progressRoutes);
  await app.register(rateLimitRoutes);
  await app.register(tenantRoutes);
  await app.register(outboxRoutes);
  await app.register(dashboardApiRoutes);
  await app.register(webhookRoutes);
  if (config.dashboard) await app.register(dashboardRoutes);
  return app;
}
