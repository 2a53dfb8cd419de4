export { type AppConfig, buildApp } from './app.ts';
export { type AuthConfig, parseApiKeys, type Role } from './auth.ts';
export { buildManifest, DECLARED_CONFORMANCE_LEVEL } from './manifest.ts';
export { type RunningServer, type ServeOptions, startServer } from './serve.ts';
