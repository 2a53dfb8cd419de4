/**
 * A prefix records the key layout its data was written in; a server that
 * reads another layout refuses it at init instead of misreading jobs.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisStore } from '../src/index.ts';
import { dropPrefix, openStore, REDIS_URL, testPrefix, unavailable } from './helpers.ts';

const reason = await unavailable();
const prefix = testPrefix('layout');
after(() => (reason === undefined ? dropPrefix(prefix) : undefined));

test('the first server records the layout; a prefix in another layout is refused', {
  skip: reason,
}, async () => {
  const store = await openStore(prefix);
  await store.close();
  const redis = new Redis(REDIS_URL);
  try {
    assert.equal(await redis.get(`{${prefix}}:layout`), 'ojs-redis-1');
    // A second server on the same layout opens the prefix.
    await (await openStore(prefix)).close();
    await redis.set(`{${prefix}}:layout`, 'ojs-redis-0');
    const refused = new RedisStore({ url: REDIS_URL, prefix, log: () => {} });
    await assert.rejects(refused.init(), /holds data in key layout 'ojs-redis-0'/);
  } finally {
    redis.disconnect();
  }
});
