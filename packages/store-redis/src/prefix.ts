/**
 * A deployment's keys as a whole: every key of a prefix starts with
 * `{prefix}:`, so SCAN MATCH finds them all (operators removing a
 * deployment, test mode's reset, tests cleaning up). Never on a request's
 * path: it walks the keyspace.
 */
import { Redis } from 'ioredis';

/** Deletes every key matching `{prefix}:*` but those in `keep`; how many were deleted. */
export async function deleteKeys(
  redis: Redis,
  tag: string,
  keep: ReadonlySet<string> = new Set(),
): Promise<number> {
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${tag}:*`, 'COUNT', 1000);
    cursor = next;
    const doomed = keys.filter((k) => !keep.has(k));
    if (doomed.length > 0) deleted += await redis.unlink(...doomed);
  } while (cursor !== '0');
  return deleted;
}

/**
 * A connection for one short task (a check, a clean-up): one connection
 * attempt, so an unreachable Redis is an error, not a wait; disconnected
 * when `task` ends.
 */
export async function withConnection<T>(
  url: string,
  task: (redis: Redis) => Promise<T>,
): Promise<T> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 3000,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await task(redis);
  } finally {
    redis.disconnect();
  }
}

/** Deletes a whole deployment (every key of `prefix`) on its own connection; how many keys. */
export function dropPrefix(prefix: string, url = 'redis://127.0.0.1:6379'): Promise<number> {
  return withConnection(url, (redis) => deleteKeys(redis, `{${prefix}}`));
}
