export { DatabaseClock } from '@ojs/core';
export {
  type Connectable,
  loadMigrations,
  type Migration,
  migrate,
  migrateMain,
} from './migrate.ts';
export { DEFAULT_SCHEMA, jobsAvailableChannel } from './names.ts';
export { PostgresStore, type PostgresStoreOptions } from './postgres-store.ts';
