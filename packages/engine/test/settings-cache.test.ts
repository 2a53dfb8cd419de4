/**
 * The settings cache: entries live `ttlMs` from when their load started; a
 * read in the second half of that life is answered from the cache and
 * reloads the entry in the background (refresh ahead); local writes
 * invalidate at once; failed loads are never cached.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SettingRecord, Store } from '@ojs/core';
import { SettingsCache } from '../src/settings-cache.ts';

/** A store whose getSetting answers only when the test lets it (one load at a time). */
function fakeStore() {
  let version = 0;
  const loads: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  const store = {
    getSetting(namespace: string, key: string): Promise<SettingRecord | null> {
      return new Promise((resolve, reject) => {
        loads.push({
          resolve: () =>
            resolve({
              namespace,
              key,
              value: { version: ++version },
              rev: version,
              updated_at: '',
            }),
          reject,
        });
      });
    },
  } as unknown as Store;
  return { store, loads };
}

const versionOf = (record: SettingRecord | null) => record?.value.version;

/** A cache over fakeStore() with key ('queue', 'a') loaded at time 0 (version 1). */
async function primed() {
  const clock = { now: 0 };
  const { store, loads } = fakeStore();
  const cache = new SettingsCache(store, 1000, () => clock.now);
  const first = cache.get('queue', 'a');
  loads.shift()!.resolve();
  assert.equal(versionOf(await first), 1);
  return { cache, loads, clock };
}

describe('SettingsCache', () => {
  it('answers from the cache and refreshes in the background in the second half of the TTL', async () => {
    let now = 0;
    const { store, loads } = fakeStore();
    const cache = new SettingsCache(store, 1000, () => now);

    const first = cache.get('queue', 'a');
    assert.equal(loads.length, 1);
    loads.shift()!.resolve();
    assert.equal(versionOf(await first), 1);

    now = 400; // first half: cached, no load
    assert.equal(versionOf(await cache.get('queue', 'a')), 1);
    assert.equal(loads.length, 0);

    now = 600; // second half: cached answer at once, one reload started
    assert.equal(versionOf(await cache.get('queue', 'a')), 1);
    assert.equal(versionOf(await cache.get('queue', 'a')), 1);
    assert.equal(loads.length, 1, 'one background reload, not one per read');
    loads.shift()!.resolve();
    await Promise.resolve();

    now = 1100; // past the first load's TTL, 500 ms after the reload started
    assert.equal(versionOf(await cache.get('queue', 'a')), 2);
    assert.equal(loads.length, 1, 'the refreshed entry is itself in its second half');
    loads.shift()!.resolve();
    await Promise.resolve();

    now = 5000; // expired: the read waits for a load of its own
    const expired = cache.get('queue', 'a');
    assert.equal(loads.length, 1);
    loads.shift()!.resolve();
    assert.equal(versionOf(await expired), 4);
  });

  it('a failed background reload keeps the entry until it expires', async () => {
    const { cache, loads, clock } = await primed();

    clock.now = 700;
    assert.equal(versionOf(await cache.get('queue', 'a')), 1);
    loads.shift()!.reject(new Error('store down'));
    await new Promise((resolve) => setImmediate(resolve));

    clock.now = 800; // still cached; a new reload is tried
    assert.equal(versionOf(await cache.get('queue', 'a')), 1);
    assert.equal(loads.length, 1);
    loads.shift()!.resolve();
    await Promise.resolve();
    clock.now = 1200;
    assert.equal(versionOf(await cache.get('queue', 'a')), 2);
  });

  it('a local write drops the entry, and a reload that started before it is not stored', async () => {
    const { cache, loads, clock } = await primed();

    clock.now = 600;
    await cache.get('queue', 'a'); // starts a reload
    const reload = loads.shift()!;
    cache.forget('queue', 'a');
    const fresh = cache.get('queue', 'a');
    assert.equal(loads.length, 1, 'after the write, the next read loads');
    reload.resolve(); // version 2, read before the write
    loads.shift()!.resolve(); // version 3
    assert.equal(versionOf(await fresh), 3);
    await Promise.resolve();
    assert.equal(versionOf(await cache.get('queue', 'a')), 3, 'the older reload was dropped');
  });

  it('invalidate drops the gets and lists of its namespace, and only those', async () => {
    const loads: string[] = [];
    const store = {
      async getSetting(namespace: string, key: string) {
        loads.push(`get ${namespace} ${key}`);
        return null;
      },
      async listSettings(namespace: string, prefix: string) {
        loads.push(`list ${namespace} ${prefix}`);
        return [];
      },
    } as unknown as Store;
    const cache = new SettingsCache(store, 1000, () => 0);
    const readAll = () =>
      Promise.all([
        cache.get('schema', 'a'),
        cache.list('schema', 'a@'),
        cache.get('routing', 'a'),
        cache.list('routing', 'a@'),
      ]);
    await readAll();
    await readAll();
    assert.deepEqual(loads, ['get schema a', 'list schema a@', 'get routing a', 'list routing a@']);

    loads.length = 0;
    cache.invalidate('schema');
    await readAll();
    assert.deepEqual(loads, ['get schema a', 'list schema a@']);

    loads.length = 0;
    cache.forget('routing', 'a');
    await readAll();
    assert.deepEqual(loads, ['get routing a'], 'forget drops that get only');

    loads.length = 0;
    cache.clear();
    await readAll();
    assert.equal(loads.length, 4);
  });

  it('a failed load is not cached', async () => {
    const { store, loads } = fakeStore();
    const cache = new SettingsCache(store, 1000, () => 0);
    const failed = cache.get('queue', 'a');
    loads.shift()!.reject(new Error('store down'));
    await assert.rejects(failed, /store down/);
    const retried = cache.get('queue', 'a');
    assert.equal(loads.length, 1);
    loads.shift()!.resolve();
    assert.equal(versionOf(await retried), 1);
  });
});
