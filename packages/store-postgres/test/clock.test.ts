/**
 * The database clock: offset arithmetic (pure) and agreement with the
 * database's clock_timestamp().
 */
import assert from 'node:assert/strict';
import { after, describe, it, test } from 'node:test';
import { DatabaseClock } from '../src/index.ts';
import { dropSchema, openStore, testSchema, unavailable, withAdmin } from './helpers.ts';

describe('DatabaseClock (offset arithmetic)', () => {
  it('takes the database reading as the midpoint of the fastest round trip', () => {
    const clock = new DatabaseClock();
    clock.apply([
      { sentAt: 1000, receivedAt: 1040, dbMs: 6000 }, // slow sample, ignored
      { sentAt: 2000, receivedAt: 2004, dbMs: 7002 }, // midpoint 2002 -> offset 5000
      { sentAt: 3000, receivedAt: 3010, dbMs: 8100 },
    ]);
    assert.equal(clock.offsetMs, 5000);
    assert.ok(clock.synced);
    assert.ok(Math.abs(clock.now() - (Date.now() + 5000)) < 50);
  });

  it('never goes backwards when a re-measurement lowers the offset', () => {
    const clock = new DatabaseClock();
    clock.apply([{ sentAt: 0, receivedAt: 0, dbMs: 10_000 }]);
    const before = clock.now();
    clock.apply([{ sentAt: 0, receivedAt: 0, dbMs: 0 }]);
    assert.ok(clock.now() >= before);
    assert.equal(clock.now(), before, 'holds still until the new clock catches up');
  });
});

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL clock', { skip: reason }, () => {});
} else {
  describe('PostgresStore.clock', () => {
    const schema = testSchema('clock');
    after(() => dropSchema(schema));

    it('agrees with the database clock within a few milliseconds', async () => {
      const store = await openStore(schema);
      try {
        assert.ok(store.clock.synced);
        const db = await withAdmin(async (client) => {
          const before = store.clock.now();
          const { rows } = await client.query<{ ms: number }>(
            'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms',
          );
          return { before, ms: rows[0]!.ms, after: store.clock.now() };
        });
        assert.ok(db.ms >= db.before - 5 && db.ms <= db.after + 5, JSON.stringify(db));
        assert.ok(Number.isInteger(store.clock.now()));
      } finally {
        await store.close();
      }
    });
  });
}
