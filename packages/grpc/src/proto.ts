/**
 * The ojs.v1 protocol loaded from our own .proto files (proto/ in this
 * package) with @grpc/proto-loader, and the google.rpc error detail
 * messages encoded with protobufjs (the library proto-loader uses).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { MAX_JSON_DEPTH } from '@ojs/core';
import { PROTO_FILES, LOADER_OPTIONS as SHARED_LOADER_OPTIONS } from '@ojs/sdk/proto-wire';
import protobuf from 'protobufjs';

/** The .proto files ship with the SDK (one copy, read by clients and this server alike). */
export const PROTO_DIR = join(
  dirname(fileURLToPath(import.meta.resolve('@ojs/sdk/package.json'))),
  'proto',
);
export const OJS_PROTO_FILES = PROTO_FILES;

export const LOADER_OPTIONS: protoLoader.Options = {
  ...SHARED_LOADER_OPTIONS,
  includeDirs: [PROTO_DIR],
};

/**
 * protobufjs bounds message nesting at 100 (protoc's default) when it
 * decodes, encodes and converts. A level of JSON in a Struct or ListValue is
 * two messages (the container and its Value), and a job's meta sits in
 * EnqueueOptions, so a request HTTP accepts (64 levels, core MAX_JSON_DEPTH)
 * is about 2 x 64 messages deep: below that bound the server could neither
 * decode it nor send the job back. Deeper messages are still refused while
 * decoding (invalid_payload), and the bound keeps protobufjs's recursion
 * short. (One protobufjs per process: this holds for the process.)
 */
export const PROTOBUF_RECURSION_LIMIT = 2 * MAX_JSON_DEPTH + 8;
const util = protobuf.util as unknown as { recursionLimit: number };
util.recursionLimit = Math.max(util.recursionLimit, PROTOBUF_RECURSION_LIMIT);
protobuf.Reader.recursionLimit = Math.max(protobuf.Reader.recursionLimit, PROTOBUF_RECURSION_LIMIT);

let definition: protoLoader.PackageDefinition | undefined;

export function ojsPackageDefinition(): protoLoader.PackageDefinition {
  definition ??= protoLoader.loadSync(OJS_PROTO_FILES, LOADER_OPTIONS);
  return definition;
}

export const SERVICE_NAME = 'ojs.v1.OJSService';

export function ojsService(): grpc.ServiceDefinition {
  return ojsPackageDefinition()[SERVICE_NAME] as grpc.ServiceDefinition;
}

export const EXTENSIONS_SERVICE_NAME = 'ojsts.v1.WorkerExtensions';

export function extensionsService(): grpc.ServiceDefinition {
  return ojsPackageDefinition()[EXTENSIONS_SERVICE_NAME] as grpc.ServiceDefinition;
}

/** A client constructor for ojs.v1.OJSService generated from our .proto (tests, bench). */
export function ojsClientConstructor(): grpc.ServiceClientConstructor {
  const loaded = grpc.loadPackageDefinition(ojsPackageDefinition()) as unknown as {
    ojs: { v1: { OJSService: grpc.ServiceClientConstructor } };
  };
  return loaded.ojs.v1.OJSService;
}

/** A client constructor for ojsts.v1.WorkerExtensions (AckBatch). */
export function extensionsClientConstructor(): grpc.ServiceClientConstructor {
  const loaded = grpc.loadPackageDefinition(ojsPackageDefinition()) as unknown as {
    ojsts: { v1: { WorkerExtensions: grpc.ServiceClientConstructor } };
  };
  return loaded.ojsts.v1.WorkerExtensions;
}

let rpcRoot: protobuf.Root | undefined;

/** google.rpc.Status / ErrorInfo / BadRequest / RetryInfo. */
export function rpcTypes(): {
  Status: protobuf.Type;
  ErrorInfo: protobuf.Type;
  BadRequest: protobuf.Type;
  RetryInfo: protobuf.Type;
} {
  if (rpcRoot === undefined) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
    root.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto'], {
      keepCase: true,
    });
    rpcRoot = root;
  }
  return {
    Status: rpcRoot.lookupType('google.rpc.Status'),
    ErrorInfo: rpcRoot.lookupType('google.rpc.ErrorInfo'),
    BadRequest: rpcRoot.lookupType('google.rpc.BadRequest'),
    RetryInfo: rpcRoot.lookupType('google.rpc.RetryInfo'),
  };
}
