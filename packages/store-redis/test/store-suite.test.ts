/**
 * The shared store suite (store-testkit) on Redis: a fresh store with its
 * own key prefix per test, its keys deleted after it.
 */
import { test } from 'node:test';
import { runStoreSuite } from '@ojs/store-testkit';
import { dropPrefix, openStore, testPrefix, unavailable } from './helpers.ts';

const reason = await unavailable();
if (reason !== undefined) {
  test('store-testkit on Redis', { skip: reason }, () => {});
} else {
  runStoreSuite('redis', async () => {
    const prefix = testPrefix('suite');
    const store = await openStore(prefix);
    return { store, cleanup: () => dropPrefix(prefix) };
  });
}
