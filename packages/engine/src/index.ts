export { CronScheduler, cronToWire, parseCronRequest } from './cron.ts';
export * from './engine.ts';
export * from './middleware.ts';
export { Notifier } from './notifier.ts';
export type { ServiceIntervals } from './services.ts';
