export { isConnectionError } from './errors.ts';
export { judgePersistence, type Persistence, type PersistenceVerdict } from './persistence.ts';
export { dropPrefix, withConnection } from './prefix.ts';
export { RedisStore, type RedisStoreOptions } from './redis-store.ts';
