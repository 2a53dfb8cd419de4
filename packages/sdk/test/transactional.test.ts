/**
 * Transactional enqueue from TypeScript (docs/transactional-enqueue.md)
 * against a real server on PostgreSQL (a schema of its own) that relays the
 * outbox: with `pg` and with postgres.js, a rolled-back transaction leaves
 * no job and no outbox row; a committed one gives exactly one job, with the
 * id the helper returned. Whole envelopes keep a client-chosen id; one the
 * server refuses is kept as an invalid row, seen, retried and deleted
 * through the admin client. On SQLite the admin outbox is unsupported.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  enqueueEnvelopeInTransaction,
  enqueueInTransaction,
  isUuidv7,
  NotFoundError,
  type OjsClient,
  UnsupportedFeatureError,
  uuidv7,
} from '@ojs/sdk';
import pg from 'pg';
import postgres from 'postgres';
import {
  POSTGRES_URL,
  startTestServer,
  storeSkipReason,
  type TestServer,
  waitFor,
} from './helpers.ts';

const skip = await storeSkipReason('postgres');

describe('transactional enqueue with the application connection', { skip, timeout: 60_000 }, () => {
  let server: TestServer;
  let client: OjsClient;
  let schema: string;
  let db: pg.Client;
  let sql: postgres.Sql;

  before(async () => {
    server = await startTestServer({ store: 'postgres' });
    client = server.client();
    schema = server.schema!;
    db = new pg.Client({ connectionString: POSTGRES_URL });
    await db.connect();
    sql = postgres(POSTGRES_URL, { max: 2, onnotice: () => {} });
  });
  after(async () => {
    await sql?.end();
    await db?.end();
    await server?.close();
  });

  /** The job once the relay has made it (the outbox is relayed in commit order). */
  const relayed = (id: string) =>
    waitFor(() => client.getJob(id).catch(() => undefined), { what: `job ${id} relayed` });

  const jobsOfType = async (type: string) =>
    (await client.admin.listJobs({ type, limit: 100 })).jobs.map((job) => job.id);

  /**
   * Nothing left of a rolled-back enqueue: a marker committed after it is
   * relayed (so the relay has passed it), yet it has no job and the outbox
   * holds no row.
   */
  const assertNothingFrom = async (id: string, type: string) => {
    const marker = await enqueueInTransaction(db, 'tx.marker', [], { schema });
    await relayed(marker);
    await assert.rejects(client.getJob(id), NotFoundError);
    assert.deepEqual(await jobsOfType(type), []);
    assert.deepEqual((await client.admin.outbox()).counts, { pending: 0, invalid: 0 });
  };

  it('pg: ROLLBACK leaves nothing; COMMIT gives one job with the returned id', async () => {
    await db.query('BEGIN');
    const dropped = await enqueueInTransaction(db, 'tx.pg.rollback', ['a'], { schema });
    assert.ok(isUuidv7(dropped));
    await db.query('ROLLBACK');
    await assertNothingFrom(dropped, 'tx.pg.rollback');

    await db.query('BEGIN');
    const id = await enqueueInTransaction(db, 'tx.pg.commit', ['ada@example.com', { n: 1 }], {
      schema,
      options: { queue: 'tx-mail', priority: 5 },
      meta: { order_id: 42 },
    });
    // Invisible to the server until COMMIT.
    await assert.rejects(client.getJob(id), NotFoundError);
    await db.query('COMMIT');
    const job = await relayed(id);
    assert.equal(job.type, 'tx.pg.commit');
    assert.deepEqual(job.args, ['ada@example.com', { n: 1 }]);
    assert.equal(job.queue, 'tx-mail');
    assert.equal(job.priority, 5);
    assert.equal(job.meta?.order_id, 42);
    assert.deepEqual(await jobsOfType('tx.pg.commit'), [id]);
    assert.deepEqual((await client.admin.outbox()).counts, { pending: 0, invalid: 0 });
  });

  it('postgres.js: a sql.begin that throws leaves nothing; one that returns gives one job', async () => {
    let dropped = '';
    await assert.rejects(
      sql.begin(async (tx) => {
        dropped = await enqueueInTransaction(tx, 'tx.pgjs.rollback', [1], { schema });
        throw new Error('the application changes its mind');
      }),
      /changes its mind/,
    );
    assert.ok(isUuidv7(dropped));
    await assertNothingFrom(dropped, 'tx.pgjs.rollback');

    const id = await sql.begin((tx) =>
      enqueueInTransaction(tx, 'tx.pgjs.commit', [{ to: 'ada@example.com' }], {
        schema,
        options: { queue: 'tx-pgjs' },
      }),
    );
    const job = await relayed(id);
    assert.deepEqual(job.args, [{ to: 'ada@example.com' }]);
    assert.equal(job.queue, 'tx-pgjs');
    assert.deepEqual(await jobsOfType('tx.pgjs.commit'), [id]);
    // `sql` itself (no transaction): the statement commits on its own.
    const single = await enqueueInTransaction(sql, 'tx.pgjs.single', [], { schema });
    await relayed(single);
  });

  it('an adapter returning rows; whole envelopes keep a client-chosen id, else get a UUIDv7', async () => {
    const adapter = {
      query: async (text: string, params: (string | null)[]) => (await db.query(text, params)).rows,
    };
    const chosen = uuidv7();
    await db.query('BEGIN');
    const kept = await enqueueEnvelopeInTransaction(
      adapter,
      { id: chosen, type: 'tx.envelope', args: [1], options: { queue: 'tx-env' } },
      { schema },
    );
    const fresh = await enqueueEnvelopeInTransaction(
      adapter,
      { type: 'tx.envelope', args: [2] },
      { schema },
    );
    await db.query('COMMIT');
    assert.equal(kept, chosen);
    assert.ok(fresh !== null && isUuidv7(fresh) && fresh !== chosen);
    assert.equal((await relayed(chosen)).queue, 'tx-env');
    assert.deepEqual((await relayed(fresh)).args, [2]);
    assert.deepEqual((await jobsOfType('tx.envelope')).sort(), [chosen, fresh].sort());
  });

  it('a refused envelope is kept invalid with its error; retried and deleted through the admin client', async () => {
    const id = await enqueueEnvelopeInTransaction(
      db,
      { type: 'tx.invalid', args: 'not an array' },
      { schema },
    );
    const [entry] = await waitFor(
      async () => {
        const page = await client.admin.outbox({ state: 'invalid' });
        return page.entries.length > 0 && page.entries;
      },
      { what: 'the invalid row' },
    );
    assert.ok(entry !== undefined);
    assert.equal((entry.envelope as { id: string }).id, id);
    assert.equal(entry.state, 'invalid');
    assert.equal(entry.error?.code, 'invalid_payload');
    assert.equal(entry.error?.retryable, false);
    const page = await client.admin.outbox();
    assert.deepEqual(page.counts, { pending: 0, invalid: 1 });
    assert.equal(page.relaying, true);
    assert.deepEqual(await client.admin.outboxEntry(entry.id), entry);
    await assert.rejects(client.getJob(id!), NotFoundError);

    // A retry puts it back to pending; the relay refuses it again.
    const retried = await client.admin.retryOutboxEntry(entry.id);
    assert.equal(retried.state, 'pending');
    assert.equal(retried.error, null);
    await waitFor(
      async () => {
        const again = await client.admin.outboxEntry(entry.id);
        return again.state === 'invalid' && again.attempts > entry.attempts;
      },
      { what: 'the retried row refused again' },
    );
    const removed = await client.admin.deleteOutboxEntry(entry.id);
    assert.equal(removed.id, entry.id);
    await assert.rejects(client.admin.outboxEntry(entry.id), NotFoundError);
    assert.deepEqual((await client.admin.outbox()).counts, { pending: 0, invalid: 0 });
  });

  it('pages of the outbox listing follow nextAfter', async () => {
    const ids: (string | null)[] = [];
    await db.query('BEGIN');
    for (let n = 0; n < 3; n++) {
      ids.push(await enqueueEnvelopeInTransaction(db, { type: 'tx.page', args: {} }, { schema }));
    }
    await db.query('COMMIT');
    await waitFor(async () => (await client.admin.outbox()).counts.invalid === 3, {
      what: 'three invalid rows',
    });
    const first = await client.admin.outbox({ limit: 2 });
    assert.equal(first.entries.length, 2);
    assert.ok(first.nextAfter !== undefined);
    const second = await client.admin.outbox({ limit: 2, after: first.nextAfter });
    assert.equal(second.entries.length, 1);
    assert.equal(second.nextAfter, undefined);
    assert.deepEqual(
      [...first.entries, ...second.entries].map((e) => (e.envelope as { id: string }).id),
      ids,
    );
    for (const entry of [...first.entries, ...second.entries]) {
      await client.admin.deleteOutboxEntry(entry.id);
    }
  });
});

describe('the admin outbox on a store without one', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => server?.close());

  it('is unsupported on SQLite', async () => {
    await assert.rejects(server.client().admin.outbox(), (error: unknown) => {
      assert.ok(error instanceof UnsupportedFeatureError);
      assert.match((error as Error).message, /PostgreSQL/);
      return true;
    });
  });
});
