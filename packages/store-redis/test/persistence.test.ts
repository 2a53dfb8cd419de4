/**
 * What a 201 means on a given Redis: judgePersistence for every
 * configuration (no AOF with and without RDB snapshots, AOF everysec, AOF
 * always, AOF with appendfsync no, an evicting maxmemory-policy, CONFIG
 * refused), then the store reading a real server's settings: a
 * redis-server of the test's own started with AOF always (an 'info'
 * verdict at init) and the shared test Redis, which runs without AOF (a
 * 'warn' verdict).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { judgePersistence, type Persistence, RedisStore } from '../src/index.ts';
import { dropPrefix, REDIS_URL, testPrefix, unavailable } from './helpers.ts';
import { type RedisServer, redisServer, redisServerMissing } from './redis-server.ts';

const base: Persistence = {
  appendonly: 'no',
  appendfsync: 'everysec',
  save: '3600 1 300 100 60 10000',
  maxmemoryPolicy: 'noeviction',
};

describe('judgePersistence', () => {
  it('no AOF, RDB snapshots: warn, jobs since the last snapshot are lost', () => {
    const verdict = judgePersistence(base);
    assert.equal(verdict.level, 'warn');
    assert.match(verdict.message, /appendonly no/);
    assert.match(verdict.message, /lost when Redis restarts/);
    assert.match(verdict.message, /RDB snapshots \(save 3600 1 300 100 60 10000\)/);
    assert.match(verdict.message, /Run Redis with appendonly yes/);
    assert.doesNotMatch(verdict.message, /maxmemory-policy/);
  });

  it('no AOF and no snapshots (save ""): warn, nothing is written to disk', () => {
    for (const save of ['', '   ']) {
      const verdict = judgePersistence({ ...base, save });
      assert.equal(verdict.level, 'warn');
      assert.match(verdict.message, /Nothing is written to disk/);
      assert.doesNotMatch(verdict.message, /RDB/);
    }
  });

  it('no AOF with save unreadable (null): warn, nothing claimed about snapshots', () => {
    const verdict = judgePersistence({ ...base, save: null });
    assert.equal(verdict.level, 'warn');
    assert.match(verdict.message, /Nothing is written to disk/);
  });

  it('AOF everysec: info, up to about a second of acknowledged writes at risk', () => {
    const verdict = judgePersistence({ ...base, appendonly: 'yes', appendfsync: 'everysec' });
    assert.equal(verdict.level, 'info');
    assert.match(verdict.message, /appendfsync everysec/);
    assert.match(verdict.message, /about one second/);
  });

  it('AOF always: info, a job is on disk before its reply', () => {
    const verdict = judgePersistence({ ...base, appendonly: 'yes', appendfsync: 'always' });
    assert.deepEqual(verdict, {
      level: 'info',
      message:
        'Redis AOF with appendfsync always: an acknowledged job is on disk before its reply.',
    });
  });

  it('AOF with appendfsync no: the message names the setting', () => {
    const verdict = judgePersistence({ ...base, appendonly: 'yes', appendfsync: 'no' });
    assert.match(verdict.message, /appendfsync no/);
  });

  it('AOF with appendfsync no does not promise "about one second" (the OS flushes when it likes, ~30 s on Linux)', {}, () => {
    const verdict = judgePersistence({ ...base, appendonly: 'yes', appendfsync: 'no' });
    assert.doesNotMatch(verdict.message, /about one second/);
  });

  it('an evicting maxmemory-policy turns any verdict into a warning that names it', () => {
    for (const appendfsync of ['always', 'everysec']) {
      for (const policy of ['allkeys-lru', 'volatile-ttl', 'allkeys-random']) {
        const verdict = judgePersistence({
          ...base,
          appendonly: 'yes',
          appendfsync,
          maxmemoryPolicy: policy,
        });
        assert.equal(verdict.level, 'warn', `${appendfsync} + ${policy}`);
        assert.match(verdict.message, new RegExp(`maxmemory-policy is ${policy}`));
        assert.match(verdict.message, /set noeviction/);
      }
    }
    const noAof = judgePersistence({ ...base, maxmemoryPolicy: 'allkeys-lru' });
    assert.equal(noAof.level, 'warn');
    assert.match(noAof.message, /appendonly no/);
    assert.match(noAof.message, /maxmemory-policy is allkeys-lru/);
  });

  it('noeviction, or a policy that could not be read, adds nothing', () => {
    for (const maxmemoryPolicy of ['noeviction', null]) {
      const verdict = judgePersistence({
        ...base,
        appendonly: 'yes',
        appendfsync: 'always',
        maxmemoryPolicy,
      });
      assert.equal(verdict.level, 'info');
      assert.doesNotMatch(verdict.message, /maxmemory-policy/);
    }
  });

  it('CONFIG refused (a managed Redis): warn, unknown, not guessed', () => {
    const verdict = judgePersistence({
      appendonly: null,
      appendfsync: null,
      save: null,
      maxmemoryPolicy: null,
    });
    assert.equal(verdict.level, 'warn');
    assert.match(verdict.message, /persistence unknown \(CONFIG GET refused\)/);
    assert.match(verdict.message, /appendonly yes/);
  });
});

const missing = redisServerMissing();

describe('the store reads a real Redis', () => {
  describe('redis-server --appendonly yes --appendfsync always', { skip: missing }, () => {
    let redis: RedisServer;

    before(async () => {
      redis = await redisServer(['--appendonly', 'yes', '--appendfsync', 'always']);
      await redis.start();
    });

    after(async () => {
      await redis?.dispose();
    });

    it('persistence() reads the settings and init() logs the info verdict', async () => {
      const logged: [string, string][] = [];
      const store = new RedisStore({
        url: redis.url,
        prefix: 'persistence',
        log: (level, message) => logged.push([level, message]),
      });
      try {
        await store.init();
        const persistence = await store.persistence();
        assert.equal(persistence.appendonly, 'yes');
        assert.equal(persistence.appendfsync, 'always');
        assert.equal(persistence.save, '');
        assert.equal(persistence.maxmemoryPolicy, 'noeviction');
        assert.deepEqual(logged, [
          [
            'info',
            'Redis AOF with appendfsync always: an acknowledged job is on disk before its reply.',
          ],
        ]);
      } finally {
        await store.close();
      }
    });

    it('an evicting policy set at run time is read at the next init (warn)', async () => {
      const logged: [string, string][] = [];
      const store = new RedisStore({
        url: redis.url,
        prefix: 'persistence',
        log: (level, message) => logged.push([level, message]),
      });
      const admin = new Redis(redis.url, { lazyConnect: true });
      try {
        await admin.connect();
        await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
        await store.init();
        assert.equal(logged.length, 1);
        assert.equal(logged[0]![0], 'warn');
        assert.match(logged[0]![1], /maxmemory-policy is allkeys-lru/);
      } finally {
        admin.disconnect();
        await store.close();
      }
    });
  });

  describe('the shared test Redis (appendonly no)', async () => {
    const reason = await unavailable();
    it('init() logs the warn verdict', { skip: reason }, async (t) => {
      const logged: [string, string][] = [];
      const prefix = testPrefix('persistence');
      const store = new RedisStore({
        url: REDIS_URL,
        prefix,
        log: (level, message) => logged.push([level, message]),
      });
      try {
        await store.init();
        const persistence = await store.persistence();
        if (persistence.appendonly !== 'no') {
          t.skip(`this Redis runs with appendonly ${persistence.appendonly}`);
          return;
        }
        assert.equal(logged.length, 1);
        assert.equal(logged[0]![0], 'warn');
        assert.match(logged[0]![1], /appendonly no/);
        assert.deepEqual(logged[0], ['warn', judgePersistence(persistence).message]);
      } finally {
        await store.close();
        await dropPrefix(prefix);
      }
    });
  });
});
