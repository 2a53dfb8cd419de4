export { DatabaseClock } from './clock.ts';
export {
  type Connectable,
  loadMigrations,
  type Migration,
  migrate,
  migrateMain,
} from './migrate.ts';
export { DEFAULT_SCHEMA, jobsAvailableChannel } from './names.ts';
export { PostgresStore, type PostgresStoreOptions } from './postgres-store.ts';
