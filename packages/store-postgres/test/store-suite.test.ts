/**
 * The shared store suite (store-testkit) on PostgreSQL: one schema for
 * this file, a fresh store (own pool) per test, emptied with reset().
 */
import { after, test } from 'node:test';
import { runStoreSuite } from '@ojs/store-testkit';
import { dropSchema, openStore, testSchema, unavailable } from './helpers.ts';

const reason = await unavailable();
if (reason !== undefined) {
  test('store-testkit on PostgreSQL', { skip: reason }, () => {});
} else {
  const schema = testSchema('suite');
  after(() => dropSchema(schema));
  runStoreSuite(`postgres (schema ${schema})`, async () => {
    const store = await openStore(schema, { pool: { max: 4 } });
    await store.reset();
    return { store };
  });
}
