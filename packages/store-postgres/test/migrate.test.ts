/**
 * Migrations: numbered files applied once each, concurrent starts safe
 * (advisory lock), `ojs migrate` entry point, schema name validation.
 */
import assert from 'node:assert/strict';
import { after, describe, it, test } from 'node:test';
import pg from 'pg';
import { loadMigrations, migrate, migrateMain, PostgresStore } from '../src/index.ts';
import {
  dropSchema,
  openStore,
  POSTGRES_URL,
  testSchema,
  unavailable,
  withAdmin,
} from './helpers.ts';

describe('migration files', () => {
  it('are numbered, ordered and unique', () => {
    const migrations = loadMigrations();
    assert.ok(migrations.length >= 2);
    assert.deepEqual(
      migrations.map((m) => m.version),
      migrations.map((_, i) => i + 1),
    );
    for (const m of migrations) assert.match(m.name, /^\d{3}_[a-z_]+\.sql$/);
  });

  it('reject schema names that would need escaping', () => {
    for (const schema of ['Ojs', 'ojs-1', '1ojs', 'a"b', '', 'x'.repeat(49)]) {
      assert.throws(() => new PostgresStore({ connectionString: POSTGRES_URL, schema }), /schema/);
    }
  });
});

describe('ojs migrate (arguments)', () => {
  const capture = () => {
    const out: string[] = [];
    const err: string[] = [];
    return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
  };

  it('prints usage with --help and refuses a missing or non-postgres store', async () => {
    const help = capture();
    assert.equal(await migrateMain(['--help'], help.io), 0);
    assert.match(help.out.join('\n'), /Usage: ojs migrate/);
    const saved = process.env.OJS_STORE;
    delete process.env.OJS_STORE;
    try {
      const none = capture();
      assert.equal(await migrateMain([], none.io), 2);
      assert.match(none.err.join('\n'), /postgres:\/\//);
      assert.equal(await migrateMain(['--store', 'sqlite:./x.db'], capture().io), 2);
      assert.equal(await migrateMain(['--bogus'], capture().io), 2);
      assert.equal(
        await migrateMain(['--store', POSTGRES_URL, '--schema', 'Bad-Name'], capture().io),
        2,
      );
    } finally {
      if (saved !== undefined) process.env.OJS_STORE = saved;
    }
  });

  it('fails with exit code 1 when the database is unreachable', async () => {
    const run = capture();
    assert.equal(await migrateMain(['--store', 'postgres://postgres@127.0.0.1:1/test'], run.io), 1);
    assert.match(run.err.join('\n'), /Migration failed/);
  });
});

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL migrations', { skip: reason }, () => {});
} else {
  describe('migrate against PostgreSQL', () => {
    const schemas: string[] = [];
    const fresh = (label: string) => {
      const schema = testSchema(label);
      schemas.push(schema);
      return schema;
    };
    after(async () => {
      for (const schema of schemas) await dropSchema(schema);
    });

    it('eight processes starting at once apply every migration exactly once', async () => {
      const schema = fresh('mig');
      const stores = await Promise.all(Array.from({ length: 8 }, () => openStore(schema)));
      try {
        const { rows } = await withAdmin((client) =>
          client.query<{ version: number; name: string }>(
            `SELECT version, name FROM "${schema}".schema_migrations ORDER BY version`,
          ),
        );
        assert.deepEqual(
          rows.map((r) => r.name),
          loadMigrations().map((m) => m.name),
        );
        await stores[3]!.ping();
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    });

    it('migrate() reports what it applied, then nothing', async () => {
      const schema = fresh('mig2');
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
      try {
        assert.deepEqual(
          await migrate(pool, schema),
          loadMigrations().map((m) => m.name),
        );
        assert.deepEqual(await migrate(pool, schema), []);
        // A store with migrate: false works on the migrated schema.
        const store = new PostgresStore({ connectionString: POSTGRES_URL, schema, migrate: false });
        await store.init();
        await store.ping();
        assert.deepEqual(await store.listQueues(), []);
        await store.close();
      } finally {
        await pool.end();
      }
    });

    it('migrateMain applies and then reports up to date', async () => {
      const schema = fresh('mig3');
      const lines: string[] = [];
      const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(`ERR ${l}`) };
      assert.equal(await migrateMain(['--store', POSTGRES_URL, '--schema', schema], io), 0);
      assert.deepEqual(
        lines,
        loadMigrations().map((m) => `Applied ${m.name} to schema '${schema}'.`),
      );
      lines.length = 0;
      assert.equal(await migrateMain(['migrate', POSTGRES_URL, `--schema=${schema}`], io), 0);
      assert.deepEqual(lines, [`Schema '${schema}' is up to date.`]);
    });

    it('a failing migration applies nothing of itself', async () => {
      const schema = fresh('mig4');
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      try {
        const good = loadMigrations();
        const bad = [
          ...good,
          { version: 99, name: '099_bad.sql', sql: 'CREATE TABLE t (x int); SELECT 1/0;' },
        ];
        await assert.rejects(migrate(pool, schema, bad), /division by zero/);
        // The whole run was one transaction: nothing applied, not even the good files.
        const { rows } = await pool.query(
          'SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1',
          [schema],
        );
        assert.equal(rows[0].n, 0);
        assert.deepEqual(
          await migrate(pool, schema),
          good.map((m) => m.name),
        );
      } finally {
        await pool.end();
      }
    });
  });
}
