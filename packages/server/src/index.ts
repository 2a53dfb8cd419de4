// The API key vocabulary lives in core (both bindings read it); re-exported for callers of @ojs/server.
export { type AuthConfig, parseApiKeys, type Role } from '@ojs/core';
export { buildApp } from './app.ts';
export type { AppConfig } from './config.ts';
export { buildManifest, DECLARED_CONFORMANCE_LEVEL } from './manifest.ts';
export { type RunningServer, type ServeOptions, startServer } from './serve.ts';
