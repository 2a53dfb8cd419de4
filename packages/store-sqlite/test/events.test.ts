/**
 * The SQLite event log (migration 010): one b-tree entry per per-job event,
 * `after` cursors found without an index on id, a type index holding only
 * the rarer types, and the migration carrying an existing log over.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { makeEvent, type OjsEvent } from '@ojs/core';
import { loadMigrations, migrate } from '../src/migrate.ts';
import { SqliteStore } from '../src/sqlite-store.ts';
import { listEvents } from '../src/statements.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

function events(count: number, type = 'job.enqueued', from = 0): OjsEvent[] {
  return Array.from({ length: count }, (_, i) =>
    makeEvent(type, `job-${from + i}`, { index: from + i, queue: 'q', job_type: 't' }, T0 + i),
  );
}

const indexes = (list: OjsEvent[]) => list.map((e) => e.data.index);

describe('SQLite event log', () => {
  let dir: string;
  let path: string;
  let a: SqliteStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ojs-events-'));
    path = join(dir, 'ojs.db');
    a = new SqliteStore({ path, checkpointThread: false });
    await a.init();
  });
  afterEach(async () => {
    await a.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a cursor another connection listed is found without its remembered position', async () => {
    const log = events(50);
    await a.appendEvents(log);
    const b = new SqliteStore({ path, checkpointThread: false });
    await b.init();
    try {
      // Neither store has listed anything: both search the log for the cursor.
      assert.deepEqual(
        indexes(await b.listEvents({ after: log[46]!.id, limit: 10 })),
        [47, 48, 49],
      );
      const page = await a.listEvents({ limit: 20 });
      // A remembers where page's events are; B never listed them.
      for (const store of [a, b]) {
        assert.deepEqual(
          indexes(await store.listEvents({ after: page.at(-1)!.id, limit: 3 })),
          [20, 21, 22],
        );
      }
    } finally {
      await b.close();
    }
  });

  it('a remembered position whose row now holds another event is not trusted', async () => {
    const first = events(5);
    await a.appendEvents(first);
    assert.equal((await a.listEvents({ limit: 10 })).length, 5);
    // The log emptied: new events take the same seqs (INTEGER PRIMARY KEY).
    assert.equal(await a.pruneEvents(0), 5);
    const second = events(5, 'job.enqueued', 100);
    await a.appendEvents(second);
    // first[2] is gone: an unknown cursor lists from the start, not after seq 3.
    assert.deepEqual(
      indexes(await a.listEvents({ after: first[2]!.id, limit: 10 })),
      [100, 101, 102, 103, 104],
    );
    assert.deepEqual(indexes(await a.listEvents({ after: second[2]!.id, limit: 10 })), [103, 104]);
  });

  it('a filter on rarer types reads the partial type index; per-job types walk the log in seq order', async () => {
    await a.close();
    const db = new DatabaseSync(path);
    try {
      const plan = (types: string[], newestFirst: boolean) => {
        const query = listEvents({ types, limit: 50, newestFirst }, 0);
        return (
          db.prepare(`EXPLAIN QUERY PLAN ${query.sql}`).all(...query.params) as { detail: string }[]
        )
          .map((row) => row.detail)
          .join('; ');
      };
      assert.match(plan(['workflow.started'], true), /USING INDEX ojs_events_type/);
      assert.match(plan(['job.failed', 'job.discarded'], false), /USING INDEX ojs_events_type/);
      // The per-job types are not in it: the log's own order, no index.
      assert.doesNotMatch(plan(['job.completed'], true), /ojs_events_type/);
      assert.doesNotMatch(plan(['job.completed', 'job.failed'], true), /ojs_events_type/);
    } finally {
      db.close();
      a = new SqliteStore({ path, checkpointThread: false });
      await a.init();
    }
  });

  it('a filter mixing per-job and rarer types lists both', async () => {
    const log = [
      ...events(3),
      ...events(2, 'workflow.started', 3),
      ...events(2, 'job.completed', 5),
    ];
    await a.appendEvents(log);
    assert.deepEqual(
      indexes(await a.listEvents({ types: ['workflow.started'], limit: 10 })),
      [3, 4],
    );
    assert.deepEqual(
      indexes(
        await a.listEvents({
          types: ['job.completed', 'workflow.started'],
          limit: 10,
          newestFirst: true,
        }),
      ),
      [6, 5, 4, 3],
    );
  });
});

describe('SQLite migration 010 (event log without the id index)', () => {
  it('carries the existing events over, in order, with their seqs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-events-010-'));
    const path = join(dir, 'ojs.db');
    try {
      const db = new DatabaseSync(path);
      migrate(
        db,
        loadMigrations().filter((m) => m.version < 10),
      );
      const log = [...events(3), ...events(2, 'cron.fired', 3)];
      const insert = db.prepare(
        'INSERT INTO ojs_events (id, type, queue, job_type, doc) VALUES (?, ?, ?, ?, ?)',
      );
      for (const event of log) {
        insert.run(event.id, event.type, 'q', 't', JSON.stringify(event));
      }
      db.close();
      const store = new SqliteStore({ path, checkpointThread: false });
      await store.init();
      try {
        assert.deepEqual(await store.listEvents({ limit: 10 }), log);
        assert.deepEqual(
          indexes(await store.listEvents({ after: log[1]!.id, limit: 10 })),
          [2, 3, 4],
        );
        assert.deepEqual(
          indexes(await store.listEvents({ types: ['cron.fired'], limit: 10 })),
          [3, 4],
        );
        await store.appendEvents(events(1, 'job.started', 5));
        assert.deepEqual(indexes(await store.listEvents({ after: log[4]!.id, limit: 10 })), [5]);
      } finally {
        await store.close();
      }
      const check = new DatabaseSync(path);
      const indexNames = (
        check
          .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ojs_events'",
          )
          .all() as {
          name: string;
        }[]
      ).map((row) => row.name);
      check.close();
      assert.deepEqual(indexNames, ['ojs_events_type']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
