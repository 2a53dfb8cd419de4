/**
 * The outbox of transactional enqueue (decision 0109) at the store: rows
 * exist only for committed transactions, a claim leases each row to one
 * relay, a lease left by a dead relay expires, and an insert consuming rows
 * stores nothing unless it still holds every one of them.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it, test } from 'node:test';
import { type JobRecord, parseEnqueueRequest } from '@ojs/core';
import type { PostgresStore } from '../src/index.ts';
import { OutboxLeaseLost } from '../src/outbox.ts';
import { dropSchema, openStore, testSchema, unavailable, withAdmin } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

function jobFrom(envelope: unknown): JobRecord {
  return parseEnqueueRequest(envelope, T0, { visibilityTimeoutMs: 30_000 });
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL outbox', { skip: reason }, () => {});
} else {
  describe('PostgreSQL outbox', () => {
    const schema = testSchema('outbox');
    let store: PostgresStore;

    before(async () => {
      store = await openStore(schema);
    });
    after(async () => {
      await store.close();
      await dropSchema(schema);
    });
    beforeEach(async () => {
      await withAdmin((c) => c.query(`TRUNCATE "${schema}".outbox`));
    });

    const sql = (text: string) => withAdmin((c) => c.query(text));

    it('keeps a row only when the transaction commits; enqueue() returns the id in its envelope', async () => {
      const ids = await withAdmin(async (c) => {
        await c.query('BEGIN');
        await c.query(`SELECT "${schema}".enqueue('x.rolled', '[1]')`);
        await c.query('ROLLBACK');
        await c.query('BEGIN');
        const { rows } = await c.query<{ id: string }>(
          `SELECT "${schema}".enqueue('x.kept', '[2]', '{"queue":"q1"}', '{"k":"v"}') AS id`,
        );
        await c.query('COMMIT');
        return rows.map((r) => r.id);
      });
      const entries = await store.outbox.list({ limit: 10 });
      assert.equal(entries.length, 1);
      const envelope = entries[0]!.envelope as Record<string, unknown>;
      assert.deepEqual(envelope, {
        id: ids[0],
        type: 'x.kept',
        args: [2],
        options: { queue: 'q1' },
        meta: { k: 'v' },
      });
      // The id is a UUIDv7 core accepts as a client-chosen id.
      assert.equal(jobFrom(envelope).id, ids[0]);
    });

    it('enqueue() keeps nulls inside args, options and meta; leaves out only a NULL options or meta', async () => {
      await sql(
        `SELECT "${schema}".enqueue('x.nulls', '[{"a":null},null]', NULL, '{"k":null}'),
                "${schema}".enqueue('x.nulls', '[]', '{"queue":null}', NULL)`,
      );
      const envelopes = (await store.outbox.list({ limit: 10 })).map(
        (e) => e.envelope as Record<string, unknown>,
      );
      assert.deepEqual(envelopes[0]!.args, [{ a: null }, null]);
      assert.deepEqual(envelopes[0]!.meta, { k: null });
      assert.equal('options' in envelopes[0]!, false);
      assert.deepEqual(envelopes[1]!.options, { queue: null });
      assert.equal('meta' in envelopes[1]!, false);
    });

    it('enqueue_envelope keeps a client-chosen id and gives one to an envelope without', async () => {
      const chosen = '01a22691-5b54-7c45-bb80-c443b7155635';
      const { rows } = await sql(
        `SELECT "${schema}".enqueue_envelope('{"id":"${chosen}","type":"a.b","args":[]}') AS a,
                "${schema}".enqueue_envelope('{"type":"a.b","args":[]}') AS b,
                "${schema}".enqueue_envelope('[1]') AS c`,
      );
      assert.equal(rows[0].a, chosen);
      assert.match(
        rows[0].b,
        /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      assert.equal(rows[0].c, null);
      assert.equal((await store.outbox.counts()).pending, 3);
    });

    it('leases each row to one relay; a lease that expired is claimed again', async () => {
      await sql(
        `SELECT "${schema}".enqueue('x.y', jsonb_build_array(i)) FROM generate_series(1, 10) AS i`,
      );
      const [a, b] = await Promise.all([
        store.outbox.claim('relay-a', 6, 60_000),
        store.outbox.claim('relay-b', 6, 60_000),
      ]);
      assert.equal(a.length + b.length, 10);
      assert.equal(new Set([...a, ...b].map((r) => r.id)).size, 10);
      assert.deepEqual(await store.outbox.claim('relay-c', 10, 60_000), []);
      // relay-a died: its lease runs out and relay-c takes its rows.
      await sql(`UPDATE "${schema}".outbox SET lease_until = now() - interval '1 second'
                  WHERE lease_owner = 'relay-a'`);
      const again = await store.outbox.claim('relay-c', 10, 60_000);
      assert.deepEqual(
        again.map((r) => r.id),
        a.map((r) => r.id),
      );
      assert.ok(again.every((r) => r.attempts === 2));
    });

    it('an insert consuming rows deletes them with its jobs, and stores nothing once a row changed hands', async () => {
      await sql(
        `SELECT "${schema}".enqueue('x.y', jsonb_build_array(i)) FROM generate_series(1, 3) AS i`,
      );
      const rows = await store.outbox.claim('relay-a', 10, 60_000);
      const jobs = rows.map((r) => jobFrom(r.envelope));
      // relay-b took the last row after relay-a's lease ran out.
      await sql(`UPDATE "${schema}".outbox SET lease_owner = 'relay-b' WHERE id = ${rows[2]!.id}`);
      await assert.rejects(
        store.insertJobs(jobs, [], T0, { owner: 'relay-a', ids: rows.map((r) => r.id) }),
        OutboxLeaseLost,
      );
      assert.equal(await store.getJob(jobs[0]!.id), null);
      assert.equal((await store.outbox.counts()).pending, 3);
      // Its own two rows: consumed with their jobs, in one step.
      const results = await store.insertJobs(jobs.slice(0, 2), [], T0, {
        owner: 'relay-a',
        ids: rows.slice(0, 2).map((r) => r.id),
      });
      assert.deepEqual(
        results.map((r) => r.status),
        ['inserted', 'inserted'],
      );
      assert.notEqual(await store.getJob(jobs[0]!.id), null);
      assert.deepEqual(
        (await store.outbox.list({ limit: 10 })).map((r) => r.id),
        [rows[2]!.id],
      );
    });

    it('an insert refused for a taken id consumes nothing', async () => {
      await sql(`SELECT "${schema}".enqueue('x.y', '[]')`);
      const [row] = await store.outbox.claim('relay-a', 10, 60_000);
      const job = jobFrom(row!.envelope);
      await store.insertJobs([job], [], T0);
      const results = await store.insertJobs([job], [], T0, { owner: 'relay-a', ids: [row!.id] });
      assert.equal(results[0]!.status, 'duplicate_id');
      assert.equal((await store.outbox.get(row!.id))?.state, 'pending');
    });

    it('finish: done rows go, invalid rows stay with their error, retried rows wait', async () => {
      await sql(
        `SELECT "${schema}".enqueue('x.y', jsonb_build_array(i)) FROM generate_series(1, 3) AS i`,
      );
      const rows = await store.outbox.claim('relay-a', 10, 60_000);
      const error = { code: 'invalid_payload', message: 'bad', retryable: false };
      const busy = { code: 'queue_full', message: 'full', retryable: true };
      // Another relay's settlement of rows it does not hold changes nothing.
      await store.outbox.finish('relay-b', [{ id: rows[0]!.id, outcome: 'done' }], 1000);
      assert.equal((await store.outbox.counts()).pending, 3);
      await store.outbox.finish(
        'relay-a',
        [
          { id: rows[0]!.id, outcome: 'done' },
          { id: rows[1]!.id, outcome: 'invalid', error },
          { id: rows[2]!.id, outcome: 'retry', error: busy },
        ],
        60_000,
      );
      assert.equal(await store.outbox.get(rows[0]!.id), null);
      const invalid = await store.outbox.get(rows[1]!.id);
      assert.equal(invalid?.state, 'invalid');
      assert.deepEqual(invalid?.error, error);
      assert.deepEqual(await store.outbox.list({ state: 'invalid', limit: 10 }), [invalid]);
      const putOff = await store.outbox.get(rows[2]!.id);
      assert.equal(putOff?.state, 'pending');
      assert.deepEqual(putOff?.error, busy);
      // Put off: not claimable before its delay; invalid: never, until retried.
      assert.deepEqual(await store.outbox.claim('relay-c', 10, 60_000), []);
      const retried = await store.outbox.retry(rows[1]!.id);
      assert.equal(retried?.state, 'pending');
      assert.equal(retried?.error, null);
      assert.deepEqual(
        (await store.outbox.claim('relay-c', 10, 60_000)).map((r) => r.id),
        [rows[1]!.id],
      );
      assert.equal((await store.outbox.remove(rows[2]!.id))?.id, rows[2]!.id);
      assert.equal(await store.outbox.remove(rows[2]!.id), null);
    });

    it('pages in id order from `after`', async () => {
      await sql(
        `SELECT "${schema}".enqueue('x.y', jsonb_build_array(i)) FROM generate_series(1, 5) AS i`,
      );
      const first = await store.outbox.list({ limit: 2 });
      const next = await store.outbox.list({ limit: 10, after: first[1]!.id });
      assert.equal(first.length + next.length, 5);
      const all = [...first, ...next].map((r) => Number(r.id));
      assert.deepEqual(
        all,
        [...all].sort((x, y) => x - y),
      );
    });

    it('a committed row wakes the relays (NOTIFY at COMMIT)', async () => {
      let woken = 0;
      let resolve!: () => void;
      const heard = new Promise<void>((r) => {
        resolve = r;
      });
      const off = store.outbox.onRows(() => {
        woken++;
        resolve();
      });
      // The LISTEN connection opens on the first subscription: rows are
      // committed until one is heard.
      const writing = (async () => {
        while (woken === 0) {
          await sql(`SELECT "${schema}".enqueue('x.y', '[]')`);
          await Promise.race([heard, new Promise((r) => setTimeout(r, 50))]);
        }
      })();
      await heard;
      await writing;
      off();
      assert.ok(woken > 0);
    });
  });
}
