/**
 * Starting the gRPC binding (@ojs/grpc) beside the HTTP server: same host,
 * engine, API keys and manifest. @ojs/grpc is imported only when served, so
 * an HTTP-only server never loads grpc-js.
 */
import { readFileSync } from 'node:fs';
import type { Engine } from '@ojs/engine';
import type { AppConfig } from './config.ts';
import { buildManifest } from './manifest.ts';

/** The options of `ojs serve` (ServeOptions) the gRPC binding reads. */
export interface GrpcServeOptions {
  /** Required to bind a non-loopback address without API keys (and gRPC without TLS). */
  allowInsecure?: boolean;
  /**
   * The gRPC binding (@ojs/grpc) on the same host: false serves HTTP only.
   * Default on.
   */
  grpc?: boolean;
  /** gRPC port: default 9090, or an ephemeral one when `port` is 0 (tests). */
  grpcPort?: number;
  /** PEM files of the gRPC binding's TLS: certificate chain and key; a CA makes it mTLS. */
  grpcTlsCert?: string;
  grpcTlsKey?: string;
  grpcTlsCa?: string;
}

export type GrpcTls = { cert: Buffer; key: Buffer; ca?: Buffer };
export type GrpcServer = Awaited<ReturnType<typeof import('@ojs/grpc').startGrpcServer>>;

/** The gRPC TLS files, read at start so a bad path fails there; cert and key go together. */
export function readGrpcTls(options: GrpcServeOptions): GrpcTls | undefined {
  const { grpcTlsCert: cert, grpcTlsKey: key, grpcTlsCa: ca } = options;
  if (cert === undefined && key === undefined && ca === undefined) return undefined;
  if (cert === undefined || key === undefined) {
    throw new Error('gRPC TLS needs both --grpc-tls-cert and --grpc-tls-key.');
  }
  const read = (path: string, what: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new Error(`Cannot read the gRPC TLS ${what} '${path}': ${(error as Error).message}`);
    }
  };
  return {
    cert: read(cert, 'certificate'),
    key: read(key, 'key'),
    ...(ca === undefined ? {} : { ca: read(ca, 'CA') }),
  };
}

/**
 * Whether gRPC is served, decided before anything listens: not when
 * turned off. API keys travel in call metadata, so beyond loopback gRPC
 * needs TLS (features §11) or --allow-insecure: asked for explicitly, a
 * plaintext binding there is an error; left at its default it is not
 * served and the log says why.
 */
export function grpcServed(
  options: GrpcServeOptions,
  at: { host: string; loopback: boolean; tls?: GrpcTls },
  log: (line: string) => void,
): boolean {
  if (options.grpc === false) return false;
  if (!at.loopback && at.tls === undefined && !options.allowInsecure) {
    if (options.grpcPort !== undefined || options.grpc === true) {
      throw new Error(
        `gRPC on ${at.host} needs TLS (--grpc-tls-cert and --grpc-tls-key) or --allow-insecure; or pass --no-grpc.`,
      );
    }
    log(`gRPC not served on ${at.host}: no TLS (--grpc-tls-cert/--grpc-tls-key); HTTP only`);
    return false;
  }
  return true;
}

/**
 * Starts the gRPC binding (grpcServed said it is served). Port: 9090, or
 * ephemeral when the HTTP port is 0. `ojs serve` starts it once HTTP
 * answers: grpc-js and the protobuf descriptors are most of what a server
 * loads at start (decision 0098).
 */
export async function startGrpcBinding(
  options: GrpcServeOptions,
  at: { engine: Engine; appConfig: AppConfig; host: string; port: number; tls?: GrpcTls },
): Promise<GrpcServer> {
  const { engine, appConfig, host, tls } = at;
  const name = '@ojs/grpc';
  const { startGrpcServer } = (await import(name)) as typeof import('@ojs/grpc');
  const server = await startGrpcServer({
    engine,
    host,
    port: options.grpcPort ?? (at.port === 0 ? 0 : 9090),
    auth: appConfig.auth,
    manifest: () => buildManifest(engine, appConfig),
    serverVersion: appConfig.implementationVersion,
    tls,
    maxBodyBytes: appConfig.bodyLimit,
  });
  // From here the manifest (both bindings') lists gRPC.
  appConfig.grpc = { port: server.port };
  return server;
}
