/**
 * buildApp(config, engine): the HTTP binding as a Fastify instance that is
 * not listening yet, so tests inject requests and main() decides where it
 * binds. Every response, errors and 404s included, carries the exact OJS
 * media type, OJS-Version and X-Request-Id.
 */
import { OjsError } from '@ojs/core';
import type { Engine } from '@ojs/engine';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { type AuthConfig, registerAuth } from './auth.ts';
import { adminVersioningRoutes } from './routes/admin-versioning.ts';
import { cronRoutes } from './routes/cron.ts';
import { deadLetterRoutes } from './routes/dead-letter.ts';
import { eventRoutes } from './routes/events.ts';
import { jobRoutes } from './routes/jobs.ts';
import { queueRoutes } from './routes/queues.ts';
import { systemRoutes } from './routes/system.ts';
import { workerRoutes } from './routes/workers.ts';
import { workflowRoutes } from './routes/workflows.ts';
import {
  DEFAULT_BODY_LIMIT,
  isJsonMediaType,
  OJS_MEDIA_TYPE,
  OJS_VERSION,
  parseJsonBody,
  requestIdFrom,
} from './wire.ts';

export interface AppConfig {
  /** Request body limit in bytes (413 above it). */
  bodyLimit?: number;
  /** Enables POST /ojs/v1/admin/reset (the engine must be in test mode too). */
  testMode?: boolean;
  auth?: AuthConfig;
  /** Fastify logger; false in tests. */
  logger?: boolean | Record<string, unknown>;
  implementationVersion?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    engine: Engine;
    appConfig: AppConfig;
  }
}

/** Maps framework errors (parser, body limit) onto the error catalogue. */
function toOjsError(error: FastifyError, bodyLimit: number): OjsError {
  if (error instanceof OjsError) return error;
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new OjsError('payload_too_large', error.message, { max_bytes: bodyLimit });
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

export async function buildApp(config: AppConfig, engine: Engine): Promise<FastifyInstance> {
  const bodyLimit = config.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const app = Fastify({
    logger: config.logger ?? false,
    bodyLimit,
    genReqId: (req) => requestIdFrom(req.headers['x-request-id']),
    // The suite sleeps up to 6 s between steps on a kept-alive connection.
    keepAliveTimeout: 65_000,
    requestTimeout: 60_000,
    return503OnClosing: true,
  });
  app.decorate('engine', engine);
  app.decorate('appConfig', config);

  // Only the two JSON media types are accepted; anything else is a 400 (HB §4).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
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

  // Callback-style hooks: they run on every request, and async hooks cost a
  // promise and a microtask hop each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('OJS-Version', OJS_VERSION);
    reply.header('X-Request-Id', request.id);
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    // Exactly this media type, no charset (the suite compares it byte for byte).
    if (
      payload !== null &&
      payload !== undefined &&
      reply.getHeader('content-type') !== 'text/plain'
    ) {
      reply.header('Content-Type', OJS_MEDIA_TYPE);
    }
    done(null, payload);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const ojs = toOjsError(error, bodyLimit);
    if (ojs.code === 'internal_error') request.log.error({ err: error }, 'unhandled error');
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

  if (config.auth) registerAuth(app, config.auth);
  await app.register(systemRoutes);
  await app.register(jobRoutes);
  await app.register(workerRoutes);
  await app.register(queueRoutes);
  await app.register(deadLetterRoutes);
  await app.register(eventRoutes);
  await app.register(workflowRoutes);
  await app.register(cronRoutes);
  await app.register(adminVersioningRoutes);
  return app;
}
