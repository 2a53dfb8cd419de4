/**
 * Database.autocommit when the connection is lost mid-statement: it checks
 * the statement's outcome on another pooled connection, so it must give the
 * lost one back first. With every pooled connection lost at once (here the
 * pool's only one) it used to wait for a free connection it was itself
 * holding, until the pool's connection timeout, once per retry, and then
 * answered 503 "outcome unknown" instead of the verified result.
 */
import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import pg from 'pg';
import { Database } from '../src/database.ts';
import { eventually, POSTGRES_URL, terminateBackends, unavailable, withAdmin } from './helpers.ts';

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL connection loss during autocommit', { skip: reason }, () => {});
} else {
  describe('Database.autocommit on connection loss', () => {
    it('verifies on a fresh connection even when the pool holds only the lost one', async () => {
      const app = `ojs-test-autocommit-${process.pid}`;
      const pool = new pg.Pool({
        connectionString: POSTGRES_URL,
        max: 1,
        connectionTimeoutMillis: 2000,
        application_name: app,
      });
      pool.on('error', () => {});
      const errors: Error[] = [];
      const db = new Database(pool, new Map(), (error) => errors.push(error));
      let verified = 0;
      try {
        const running = db.autocommit(
          'SELECT pg_sleep(60) AS slept',
          [],
          () => 'finished',
          async () => {
            verified++;
            return 'verified';
          },
        );
        // Terminate the backend once it runs the statement (sent, so not retried blindly).
        await eventually(
          () =>
            withAdmin(async (client) => {
              const { rows } = await client.query(
                `SELECT 1 FROM pg_stat_activity
                  WHERE application_name = $1 AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`,
                [app],
              );
              return rows.length === 1;
            }),
          10_000,
          'the statement to run',
        );
        assert.equal(await terminateBackends(app), 1);
        assert.equal(await running, 'verified');
        assert.equal(verified, 1);
        assert.deepEqual(errors, []);
      } finally {
        await pool.end();
      }
    });
  });
}
