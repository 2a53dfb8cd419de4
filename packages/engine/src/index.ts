export { CronScheduler, cronToWire, parseCronRequest } from './cron.ts';
export * from './engine.ts';
export * from './middleware.ts';
export { Notifier } from './notifier.ts';
export { type RoutingConfig, VersionRouter } from './routing.ts';
export {
  type SchemaEntry,
  SchemaRegistry,
  VALIDATION_MODES,
  type ValidationMode,
} from './schemas.ts';
export type { ServiceIntervals } from './services.ts';
