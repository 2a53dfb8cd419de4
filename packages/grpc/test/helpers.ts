/**
 * A real `ojs serve` (HTTP and gRPC over one engine) on SQLite or
 * PostgreSQL, and a client generated at run time from our .proto files
 * (@grpc/proto-loader), called through promises.
 */
import * as grpc from '@grpc/grpc-js';
import {
  type LiveServer,
  type StoreKind,
  startLiveServer,
  storeKinds,
} from '../../server/test/stores.ts';
import { ojsClientConstructor } from '../src/proto.ts';
import { errorDetails } from '../src/status.ts';

export { type StoreKind, storeKinds };

// biome-ignore lint/suspicious/noExplicitAny: messages are read dynamically in assertions.
export type Msg = any;

/** A generated client's method, called by name. */
export type RawMethod = (this: grpc.Client, ...args: unknown[]) => grpc.ClientUnaryCall;
export function method(client: grpc.Client, name: string): RawMethod {
  return (client as unknown as Record<string, RawMethod>)[name]!;
}

export interface GrpcCtx {
  server: LiveServer;
  grpcAddress: string;
  client: grpc.Client;
  call(method: string, request?: Msg, metadata?: Record<string, string>): Promise<Msg>;
  /** The call's error: status code, ErrorInfo and BadRequest. */
  fail(method: string, request?: Msg, metadata?: Record<string, string>): Promise<GrpcFailure>;
  http(method: string, path: string, body?: unknown): Promise<{ status: number; body: Msg }>;
  close(): Promise<void>;
}

export interface GrpcFailure {
  code: grpc.status;
  message: string;
  metadata: grpc.Metadata;
  errorInfo?: { reason: string; domain: string; metadata: Record<string, string> };
  badRequest?: { field_violations: { field: string; description: string }[] };
  retryInfo?: unknown;
}

export function toMetadata(values: Record<string, string> = {}): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(values)) metadata.set(key, value);
  return metadata;
}

export function newClient(address: string): grpc.Client {
  const Client = ojsClientConstructor();
  return new Client(address, grpc.credentials.createInsecure());
}

export function unary(
  client: grpc.Client,
  name: string,
  request: Msg = {},
  metadata: Record<string, string> = {},
  deadlineMs = 30_000,
): Promise<Msg> {
  return new Promise((resolve, reject) => {
    method(client, name).call(
      client,
      request,
      toMetadata(metadata),
      { deadline: Date.now() + deadlineMs },
      (error: grpc.ServiceError | null, response: Msg) =>
        error ? reject(error) : resolve(response),
    );
  });
}

export async function startGrpcCtx(
  kind: StoreKind,
  options: Parameters<typeof startLiveServer>[1] = {},
): Promise<GrpcCtx> {
  const server = await startLiveServer(kind, { testMode: true, ...options });
  const address = `127.0.0.1:${server.grpcPort}`;
  const client = newClient(address);
  const call: GrpcCtx['call'] = (method, request, metadata) =>
    unary(client, method, request, metadata);
  return {
    server,
    grpcAddress: address,
    client,
    call,
    async fail(method, request, metadata) {
      try {
        await call(method, request, metadata);
      } catch (error) {
        const e = error as grpc.ServiceError;
        return {
          code: e.code,
          message: e.details,
          metadata: e.metadata,
          ...errorDetails(e.metadata),
        };
      }
      throw new Error(`${method} succeeded; a failure was expected`);
    },
    async http(method, path, body) {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
    },
    async close() {
      client.close();
      await server.close();
    },
  };
}

/** Struct/Value helpers for requests. */
export const v = {
  str: (s: string) => ({ stringValue: s }),
  num: (n: number) => ({ numberValue: n }),
  struct: (fields: Record<string, Msg>) => ({ fields }),
};
