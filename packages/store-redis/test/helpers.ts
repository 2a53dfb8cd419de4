/**
 * Test plumbing: the Redis URL (OJS_TEST_REDIS_URL), a key prefix per store
 * (its keys deleted afterwards), and the skip rule: without a reachable
 * Redis the tests skip with a printed reason, except under CI=true where
 * they fail.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { dropPrefix as dropDeployment, RedisStore, type RedisStoreOptions } from '../src/index.ts';

export const REDIS_URL = process.env.OJS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let checked: Promise<string | undefined> | undefined;

/** undefined when Redis answers; otherwise the reason to skip (throws under CI=true). */
export function unavailable(): Promise<string | undefined> {
  checked ??= (async () => {
    const redis = new Redis(REDIS_URL, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      connectTimeout: 3000,
    });
    redis.on('error', () => {});
    try {
      await redis.connect();
      await redis.ping();
      return undefined;
    } catch (error) {
      const reason = `Redis unreachable at ${REDIS_URL} (${(error as Error).message}); set OJS_TEST_REDIS_URL`;
      if (process.env.CI === 'true')
        throw new Error(`${reason} (CI=true: failing instead of skipping)`);
      console.log(`# skipping Redis tests: ${reason}`);
      return reason;
    } finally {
      redis.disconnect();
    }
  })();
  return checked;
}

/** A fresh key prefix for one store. */
export function testPrefix(label: string): string {
  return `ojs-t-${label}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** Deletes every key of a prefix. */
export async function dropPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  await dropDeployment(prefix, url);
}

export async function openStore(
  prefix: string,
  options: RedisStoreOptions = {},
): Promise<RedisStore> {
  const store = new RedisStore({ url: REDIS_URL, prefix, ...options });
  await store.init();
  return store;
}
