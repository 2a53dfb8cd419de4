export { loadMigrations, migrate } from './migrate.ts';
export { SqliteStore, type SqliteStoreOptions } from './sqlite-store.ts';
export { SqliteThreadStore } from './thread-store.ts';
