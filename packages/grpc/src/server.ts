/**
 * The gRPC server: ojs.v1.OJSService over the engine the HTTP server uses
 * (same process, same store, same API keys and manifest), grpc.health.v1
 * and server reflection. Shutdown: streams end with UNAVAILABLE, new calls
 * are refused, unary calls in flight finish.
 */
import type { Duplex } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { type AuthConfig, DEFAULT_MAX_BODY_BYTES } from '@ojs/core';
import { buildManifest, type Engine } from '@ojs/engine';
import { HealthImplementation } from 'grpc-health-check';
import { authorize, callTenant } from './auth.ts';
import {
  decodeAckBatchRequest,
  decodeEnqueueBatchRequest,
  decodeEnqueueManyRequest,
  decodeEnqueueRequest,
} from './enqueue-codec.ts';
import {
  type BindingContext,
  extensionHandlers,
  logUnexpected,
  requestIdOf,
  responseMetadata,
  unaryHandlers,
  wrapUnary,
} from './handlers.ts';
import { extensionsService, ojsPackageDefinition, ojsService, SERVICE_NAME } from './proto.ts';
import { withEncodedReplies } from './reply-limits.ts';
import { throwIfRefused, transportLimit, withRequestLimits } from './request-limits.ts';
import { toServiceError } from './status.ts';
import { EventStreams } from './stream-events.ts';
import { JobStreams } from './stream-jobs.ts';

type Obj = Record<string, unknown>;

export const DEFAULT_GRPC_PORT = 9090;

export interface GrpcServerOptions {
  engine: Engine;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  auth?: AuthConfig;
  /**
   * The manifest GET /ojs/manifest serves, built per call (Manifest RPC).
   * Default: the engine's capabilities as a gRPC-only server serves them.
   */
  manifest?(): Record<string, unknown>;
  /** x-ojs-conformance-level on every reply (default: the engine's declared level). */
  conformanceLevel?: number;
  serverVersion?: string;
  /** How long shutdown waits for unary calls in flight before cutting them (default 10 s). */
  shutdownGraceMs?: number;
  /**
   * TLS (PEM): the server's certificate chain and key; with `ca`, clients
   * must present a certificate signed by it (mTLS). Absent: plaintext.
   */
  tls?: { cert: Buffer; key: Buffer; ca?: Buffer };
  /**
   * The request size limit, the HTTP binding's `bodyLimit` (default 2 MiB):
   * a larger request message is refused with payload_too_large.
   */
  maxBodyBytes?: number;
  /**
   * The caller accepts the connections and hands each one to
   * `injectConnection` (`ojs serve` listens on the port itself and loads
   * this package on the first connection, decision 0098); nothing is bound
   * here and `port` is only reported.
   */
  external?: boolean;
}

export interface GrpcServer {
  port: number;
  /** `host:port` to dial. */
  address: string;
  jobStreams: JobStreams;
  /** With `external`: serves a connection the caller accepted (TLS as configured). */
  injectConnection(connection: Duplex): void;
  close(): Promise<void>;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  const { engine } = options;
  const host = options.host ?? '127.0.0.1';
  const jobStreams = new JobStreams();
  const eventStreams = new EventStreams();
  const ctx: BindingContext = {
    engine,
    auth: options.auth,
    manifest:
      options.manifest ?? (() => buildManifest(engine.capabilities(), { protocols: ['grpc'] })),
    streams: jobStreams,
    serverVersion: options.serverVersion ?? '0.1.0',
  };
  const level = options.conformanceLevel ?? engine.capabilities().conformanceLevel;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const server = new grpc.Server({
    // Idle streams stay open behind proxies; dead peers are found.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_receive_message_length': transportLimit(maxBodyBytes),
  });

  const implementation: grpc.UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(unaryHandlers(ctx))) {
    implementation[name] = wrapUnary(ctx, name, handler, level);
  }
  // Response headers go out once the stream is set up (`ready`): a client
  // that saw them knows StreamEvents has fixed where its events start.
  const streaming =
    (
      name: string,
      serve: (
        call: grpc.ServerWritableStream<Obj, Obj>,
        ready: () => void,
        tenant: string | undefined,
      ) => Promise<void>,
    ) =>
    (call: grpc.ServerWritableStream<Obj, Obj>) => {
      const requestId = requestIdOf(call.metadata);
      let sent = false;
      const ready = () => {
        if (sent) return;
        sent = true;
        call.sendMetadata(responseMetadata(requestId, level, ctx.serverVersion));
      };
      (async () => {
        const key = authorize(ctx.auth, name, call.metadata);
        const tenant = callTenant(call.metadata, key);
        throwIfRefused(call.request);
        await serve(call, ready, tenant?.id);
      })().then(
        () => {
          if (!call.cancelled && !call.destroyed) call.end();
        },
        (error: unknown) => {
          logUnexpected(name, error);
          if (!call.cancelled) call.emit('error', toServiceError(error, requestId));
        },
      );
    };
  implementation.StreamJobs = streaming('StreamJobs', (call, ready, tenant) =>
    jobStreams.serve(engine, call, ready, tenant),
  );
  implementation.StreamEvents = streaming('StreamEvents', (call, ready, tenant) =>
    eventStreams.serve(engine, call, ready, tenant),
  );
  server.addService(
    withEncodedReplies(
      withRequestLimits(ojsService(), maxBodyBytes, {
        Enqueue: decodeEnqueueRequest,
        EnqueueBatch: decodeEnqueueBatchRequest,
      }),
    ),
    implementation,
  );
  // ojs-ts extensions in their own service (decision 0047).
  const extensions: grpc.UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(extensionHandlers(ctx))) {
    extensions[name] = wrapUnary(ctx, name, handler, level);
  }
  server.addService(
    withEncodedReplies(
      withRequestLimits(extensionsService(), maxBodyBytes, {
        EnqueueMany: decodeEnqueueManyRequest,
        AckBatch: decodeAckBatchRequest,
      }),
    ),
    extensions,
  );

  // grpc.health.v1: "" and the OJS service follow the store's health.
  const health = new HealthImplementation({ '': 'NOT_SERVING', [SERVICE_NAME]: 'NOT_SERVING' });
  health.addToServer(server);
  const updateHealth = async () => {
    const state = await engine.health();
    const status = state.ok && !state.draining ? 'SERVING' : 'NOT_SERVING';
    health.setStatus('', status);
    health.setStatus(SERVICE_NAME, status);
  };
  await updateHealth();
  const healthTimer = setInterval(() => void updateHealth().catch(() => {}), 1000);
  healthTimer.unref();

  new ReflectionService(ojsPackageDefinition()).addToServer(server);

  const credentials =
    options.tls === undefined
      ? grpc.ServerCredentials.createInsecure()
      : grpc.ServerCredentials.createSsl(
          options.tls.ca ?? null,
          [{ cert_chain: options.tls.cert, private_key: options.tls.key }],
          options.tls.ca !== undefined,
        );
  const injector = options.external ? server.createConnectionInjector(credentials) : undefined;
  const port =
    injector !== undefined
      ? (options.port ?? DEFAULT_GRPC_PORT)
      : await new Promise<number>((resolve, reject) => {
          server.bindAsync(
            `${host.includes(':') ? `[${host}]` : host}:${options.port ?? DEFAULT_GRPC_PORT}`,
            credentials,
            (error, bound) => (error ? reject(error) : resolve(bound)),
          );
        });

  let closing: Promise<void> | undefined;
  return {
    port,
    address: `${host.includes(':') ? `[${host}]` : host}:${port}`,
    jobStreams,
    injectConnection(connection) {
      if (injector === undefined) throw new Error('injectConnection needs the external option.');
      injector.injectConnection(connection);
    },
    close() {
      closing ??= (async () => {
        clearInterval(healthTimer);
        health.setStatus('', 'NOT_SERVING');
        health.setStatus(SERVICE_NAME, 'NOT_SERVING');
        jobStreams.closeAll();
        eventStreams.closeAll();
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => {
            server.forceShutdown();
            resolve();
          }, options.shutdownGraceMs ?? 10_000);
          server.tryShutdown(() => {
            clearTimeout(force);
            resolve();
          });
        });
      })();
      return closing;
    },
  };
}
