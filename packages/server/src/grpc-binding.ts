/**
 * Starting the gRPC binding (@ojs/grpc) beside the HTTP server: same host,
 * engine, API keys and manifest. The port is bound at start, but @ojs/grpc
 * (grpc-js, protobufjs and the descriptors: most of what a server would
 * load at start, decision 0098) is imported on the first connection to it,
 * so a server nobody calls over gRPC never loads it.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
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
/** The gRPC port as `ojs serve` holds it. */
export interface GrpcServer {
  port: number;
  /** `host:port` to dial. */
  address: string;
  close(): Promise<void>;
}

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
 * Binds the gRPC port (grpcServed said it is served): 9090, or ephemeral
 * when the HTTP port is 0. The first connection loads @ojs/grpc, which
 * then serves it and every later one (each handed over as accepted, TLS as
 * configured); that first call waits for the load, once. A port that is
 * taken fails here, at start.
 */
export async function startGrpcBinding(
  options: GrpcServeOptions,
  at: { engine: Engine; appConfig: AppConfig; host: string; port: number; tls?: GrpcTls },
  log: (line: string) => void,
): Promise<GrpcServer> {
  const { engine, appConfig, host, tls } = at;
  // Not read until the binding takes them over.
  const listener = createServer({ pauseOnConnect: true });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen({ host, port: options.grpcPort ?? (at.port === 0 ? 0 : 9090) }, () => {
      listener.off('error', reject);
      resolve();
    });
  });
  const port = (listener.address() as { port: number }).port;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  type Binding = Awaited<ReturnType<typeof import('@ojs/grpc').startGrpcServer>>;
  let binding: Promise<Binding> | undefined;
  const load = async (): Promise<Binding> => {
    // By its literal name: the installed build bundles it (decision 0108).
    const { startGrpcServer } = await import('@ojs/grpc');
    return startGrpcServer({
      engine,
      host,
      port,
      external: true,
      auth: appConfig.auth,
      manifest: () => buildManifest(engine, appConfig),
      serverVersion: appConfig.implementationVersion,
      tls,
      maxBodyBytes: appConfig.bodyLimit,
    });
  };
  const sockets = new Set<Socket>();
  // After the bind (accept failures such as EMFILE): logged, never fatal.
  listener.on('error', (error) => log(`gRPC listener: ${error.message}`));
  listener.on('connection', (socket: Socket) => {
    sockets.add(socket);
    // A peer that resets before (or after) the handover must not crash the process.
    socket.on('error', () => socket.destroy());
    socket.once('close', () => sockets.delete(socket));
    binding ??= load();
    binding.then(
      (server) => {
        if (socket.destroyed) return;
        server.injectConnection(socket);
        // Accepted paused (so no byte is read before the binding has it): reading starts now.
        socket.resume();
      },
      (error: unknown) => {
        log(`gRPC binding failed to start: ${(error as Error).message}`);
        socket.destroy();
      },
    );
  });
  // From here the manifest (both bindings') lists gRPC.
  appConfig.grpc = { port };
  return {
    port,
    address,
    async close() {
      // Done once every connection it accepted has ended.
      const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
      // The binding ends the calls and connections it serves (gracefully)...
      await binding?.then(
        (server) => server.close(),
        () => {},
      );
      // ...and none is left that it did not take over.
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
