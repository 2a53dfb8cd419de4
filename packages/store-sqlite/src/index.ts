export { loadMigrations, migrate } from './migrate.ts';
export { SqliteStore, type SqliteStoreOptions } from './sqlite-store.ts';
export { SqliteThreadStore, type SqliteThreadStoreOptions } from './thread-store.ts';
