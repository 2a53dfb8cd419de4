export * from '@ojs/sdk/proto-wire';
export { authorize } from './auth.ts';
export * from './convert.ts';
export { manifestToProto } from './handlers.ts';
export {
  LOADER_OPTIONS,
  OJS_PROTO_FILES,
  ojsClientConstructor,
  ojsPackageDefinition,
  PROTO_DIR,
  SERVICE_NAME,
} from './proto.ts';
export {
  DEFAULT_GRPC_PORT,
  type GrpcServer,
  type GrpcServerOptions,
  startGrpcServer,
} from './server.ts';
export { ERROR_DOMAIN, errorDetails, grpcStatusOf, toServiceError } from './status.ts';
