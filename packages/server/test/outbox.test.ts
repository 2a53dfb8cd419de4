/**
 * Transactional enqueue (decision 0109) end to end on PostgreSQL: an
 * application's transaction writes jobs with `<schema>.enqueue(...)`; the
 * servers relay the committed rows into jobs through the normal enqueue
 * path. A rolled-back transaction leaves no job; a committed one exactly
 * one, with three `ojs serve` processes relaying and one SIGKILLed in the
 * middle; an invalid envelope is kept with its error and blocks nothing;
 * client-chosen ids and unique keys behave as on POST /ojs/v1/jobs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ServerProcess, startServerProcess } from '../../../scripts/lib.ts';
import { startServer } from '../src/serve.ts';
import { POSTGRES_URL, storeKinds, tempStore } from './stores.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are read dynamically in assertions.
type Json = any;

interface PgPool {
  query(text: string, params?: unknown[]): Promise<{ rows: Json[] }>;
  connect(): Promise<PgPoolClient>;
  end(): Promise<void>;
  on(event: string, listener: () => void): void;
}
interface PgPoolClient {
  query(text: string, params?: unknown[]): Promise<{ rows: Json[] }>;
  release(): void;
}

async function pool(max: number): Promise<PgPool> {
  const name = 'pg';
  const { default: pg } = (await import(name)) as {
    default: { Pool: new (o: { connectionString: string; max: number }) => PgPool };
  };
  const p = new pg.Pool({ connectionString: POSTGRES_URL, max });
  p.on('error', () => {});
  return p;
}

function schemaOf(store: string): string {
  return new URL(store).searchParams.get('schema')!;
}

/** Polls `check` until it holds or `ms` passed; the caller asserts on what it then reads. */
async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
}

function kill(server: ServerProcess): Promise<void> {
  return new Promise((resolve) => {
    server.child.once('exit', () => resolve());
    server.child.kill('SIGKILL');
  });
}

const kinds = await storeKinds();
if (!kinds.includes('postgres')) {
  it('transactional enqueue needs PostgreSQL', { skip: 'PostgreSQL unreachable' }, () => {});
} else {
  describe('transactional enqueue on PostgreSQL, three server processes, one SIGKILLed', () => {
    const { store, cleanup } = tempStore('postgres');
    const schema = schemaOf(store);
    let servers: ServerProcess[] = [];
    let db: PgPool;

    before(async () => {
      // A short lease: the killed process's rows are relayed again after 1 s.
      const env = { OJS_OUTBOX_LEASE_MS: '1000', OJS_LOG_LEVEL: 'silent' };
      servers = [await startServerProcess(store, env)];
      servers.push(...(await Promise.all([1, 2].map(() => startServerProcess(store, env)))));
      db = await pool(20);
    });
    after(async () => {
      await Promise.all(servers.map((s) => s.stop()));
      await db.end();
      await cleanup();
    });

    it('1,000 rolled-back transactions leave no job; 1,000 committed leave exactly 1,000 jobs, each once', async (t) => {
      const committed: string[] = [];
      const rolledBack: string[] = [];
      let killed: Promise<void> | undefined;
      // 20 application connections, each a stream of transactions; every
      // other one rolls back.
      await Promise.all(
        Array.from({ length: 20 }, async (_, connection) => {
          const client = await db.connect();
          try {
            for (let i = 0; i < 100; i++) {
              const n = connection * 100 + i;
              await client.query('BEGIN');
              const { rows } = await client.query(
                `SELECT "${schema}".enqueue('outbox.test', jsonb_build_array($1::int), '{"queue":"outbox"}') AS id`,
                [n],
              );
              if (i % 2 === 0) {
                await client.query('COMMIT');
                committed.push(rows[0].id);
              } else {
                await client.query('ROLLBACK');
                rolledBack.push(rows[0].id);
              }
              // Mid-run: one relaying process dies with whatever it holds.
              if (committed.length === 300 && killed === undefined) killed = kill(servers[1]!);
            }
          } finally {
            client.release();
          }
        }),
      );
      await killed;
      // What the dead process held at its death (a random point of its work)
      // waits for its lease to run out, then another process relays it.
      const { rows: orphaned } = await db.query(
        `SELECT count(*) AS n FROM "${schema}".outbox WHERE lease_owner LIKE $1`,
        [`%:${servers[1]!.child.pid}:%`],
      );
      t.diagnostic(`rows leased to the killed process: ${orphaned[0].n}`);
      assert.equal(committed.length, 1000);
      assert.equal(rolledBack.length, 1000);
      const jobCount = async () =>
        Number(
          (await db.query(`SELECT count(*) AS n FROM "${schema}".jobs WHERE queue = 'outbox'`))
            .rows[0].n,
        );
      const outboxCount = async () =>
        Number((await db.query(`SELECT count(*) AS n FROM "${schema}".outbox`)).rows[0].n);
      await until(async () => (await outboxCount()) === 0 && (await jobCount()) >= 1000, 60_000);
      assert.equal(await outboxCount(), 0, 'every committed row relayed');
      const { rows } = await db.query(
        `SELECT id, doc -> 'args' ->> 0 AS n FROM "${schema}".jobs WHERE queue = 'outbox'`,
      );
      assert.equal(rows.length, 1000, 'exactly one job per committed transaction');
      assert.deepEqual(rows.map((r) => r.id).sort(), [...committed].sort());
      // Each job enqueued once: one job.enqueued event per job (a row of
      // the log holds one event in doc or a run of them in docs, migration 015).
      const { rows: events } = await db.query(
        `SELECT ev ->> 'subject' AS subject, count(*) AS n
           FROM "${schema}".events e,
                unnest(CASE WHEN e.n = 1 THEN ARRAY[e.doc] ELSE e.docs END) AS ev
          WHERE ev ->> 'type' = 'job.enqueued' AND ev -> 'data' ->> 'queue' = 'outbox'
          GROUP BY 1`,
      );
      assert.equal(events.length, 1000);
      assert.ok(events.every((e) => Number(e.n) === 1));
      // And the surviving servers hand them out.
      const fetched = await fetch(`${servers[0]!.url}/ojs/v1/workers/fetch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ queues: ['outbox'], count: 10, wait_ms: 0 }),
      });
      assert.equal(((await fetched.json()) as Json).jobs.length, 10);
    });
  });

  describe('transactional enqueue: what the enqueue path refuses', () => {
    const { store, cleanup } = tempStore('postgres');
    const schema = schemaOf(store);
    let server: Awaited<ReturnType<typeof startServer>>;
    let db: PgPool;
    const api = async (
      path: string,
      init?: RequestInit,
    ): Promise<{ status: number; body: Json }> => {
      const res = await fetch(`${server.url}${path}`, init);
      return { status: res.status, body: await res.json() };
    };
    const jobCount = async (queue: string) =>
      Number(
        (await db.query(`SELECT count(*) AS n FROM "${schema}".jobs WHERE queue = $1`, [queue]))
          .rows[0].n,
      );
    const pendingCount = async () =>
      Number(
        (await db.query(`SELECT count(*) AS n FROM "${schema}".outbox WHERE state = 'pending'`))
          .rows[0].n,
      );

    before(async () => {
      server = await startServer({ store, port: 0, logLevel: 'silent' });
      db = await pool(2);
    });
    after(async () => {
      await server.close();
      await db.end();
      await cleanup();
    });

    it('an invalid envelope is kept with its error, is not enqueued and blocks nothing', async () => {
      const client = await db.connect();
      let badId: string;
      try {
        await client.query('BEGIN');
        await client.query(`SELECT "${schema}".enqueue('ok.first', '[1]', '{"queue":"refuse"}')`);
        badId = (
          await client.query(
            `SELECT "${schema}".enqueue_envelope('{"type":"Not A Type","args":{},"options":{"queue":"refuse"}}') AS id`,
          )
        ).rows[0].id;
        await client.query(`SELECT "${schema}".enqueue('ok.second', '[2]', '{"queue":"refuse"}')`);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
      await until(async () => (await pendingCount()) === 0, 10_000);
      assert.equal(await jobCount('refuse'), 2);
      const listed = await api('/ojs/v1/admin/outbox?state=invalid');
      assert.equal(listed.status, 200);
      assert.equal(listed.body.counts.invalid, 1);
      const [entry] = listed.body.entries;
      assert.equal(entry.envelope.id, badId);
      assert.equal(entry.state, 'invalid');
      assert.equal(entry.error.code, 'invalid_payload');
      assert.equal(entry.error.retryable, false);
      assert.equal((await api(`/ojs/v1/jobs/${badId}`)).status, 404);
      // Not retried by itself: still there, same attempts, after the relay
      // ran again (a later row it relayed shows it did).
      await db.query(`SELECT "${schema}".enqueue('ok.marker', '[]', '{"queue":"refuse"}')`);
      await until(async () => (await jobCount('refuse')) === 3, 10_000);
      assert.equal(await jobCount('refuse'), 3);
      const again = await api(`/ojs/v1/admin/outbox/${entry.id}`);
      assert.equal(again.body.entry.attempts, entry.attempts);
      // An operator removes it.
      const removed = await api(`/ojs/v1/admin/outbox/${entry.id}`, { method: 'DELETE' });
      assert.equal(removed.status, 200);
      assert.equal((await api(`/ojs/v1/admin/outbox/${entry.id}`)).status, 404);
    });

    it('a taken client-chosen id and a held unique key are refused as POST /ojs/v1/jobs refuses them', async () => {
      const id = '01a22691-5b54-7c45-bb80-000000000001';
      const posted = await api('/ojs/v1/jobs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id, type: 'dup.id', args: [], options: { queue: 'dups' } }),
      });
      assert.equal(posted.status, 201);
      const unique = (onConflict: string) =>
        JSON.stringify({
          type: 'dup.key',
          args: [onConflict],
          options: {
            queue: 'dups',
            unique: { keys: ['type'], on_conflict: onConflict },
          },
        });
      await db.query(`SELECT "${schema}".enqueue_envelope($1::jsonb)`, [
        JSON.stringify({ id, type: 'dup.id', args: [], options: { queue: 'dups' } }),
      ]);
      await until(async () => (await pendingCount()) === 0, 10_000);
      await db.query(`SELECT "${schema}".enqueue_envelope($1::jsonb)`, [unique('reject')]);
      await until(async () => (await pendingCount()) === 0, 10_000);
      await db.query(`SELECT "${schema}".enqueue_envelope($1::jsonb)`, [unique('reject')]);
      await db.query(`SELECT "${schema}".enqueue_envelope($1::jsonb)`, [unique('ignore')]);
      await until(async () => (await pendingCount()) === 0, 10_000);
      const invalid = (await api('/ojs/v1/admin/outbox?state=invalid')).body.entries as Json[];
      const codes = invalid.map((e: Json) => [e.envelope.type, e.error.code]);
      // POST answers 409 `duplicate` to both; `ignore` answers with the holder (no new job, no error).
      assert.deepEqual(codes, [
        ['dup.id', 'duplicate'],
        ['dup.key', 'duplicate'],
      ]);
      assert.equal(await jobCount('dups'), 2);
    });

    it('the API refuses a malformed row id and an unknown listing parameter', async () => {
      assert.equal((await api('/ojs/v1/admin/outbox/abc')).status, 400);
      const typo = await api('/ojs/v1/admin/outbox?stat=invalid');
      assert.equal(typo.status, 400);
      assert.match(typo.body.error.message, /stat/);
    });
  });

  describe('the outbox API on a store without one', () => {
    it('answers unsupported on SQLite', async () => {
      const { store, cleanup } = tempStore('sqlite');
      const server = await startServer({ store, port: 0, logLevel: 'silent' });
      try {
        const res = await fetch(`${server.url}/ojs/v1/admin/outbox`);
        assert.equal(res.status, 422);
        assert.equal(((await res.json()) as Json).error.code, 'unsupported');
      } finally {
        await server.close();
        await cleanup();
      }
    });
  });
}
