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
import { makeEvent, type OjsEvent, parseEnqueueRequest } from '@ojs/core';
import { loadMigrations, migrate } from '../src/migrate.ts';
import { insertValues } from '../src/rows.ts';
import { SqliteStore } from '../src/sqlite-store.ts';
import { INSERT_JOB, listEventRows } from '../src/statements.ts';

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
        const query = listEventRows({ types, limit: 50, newestFirst }, 0);
        const bound = newestFirst ? Number.MAX_SAFE_INTEGER : 0;
        return (
          db.prepare(`EXPLAIN QUERY PLAN ${query.sql}`).all(...query.params, bound, 50) as {
            detail: string;
          }[]
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
  describe('rows of several events (migration 014)', () => {
    /** The log's rows: seq, n, and their type / queue columns. */
    function rows(): { seq: number; n: number; type: string | null; queue: string | null }[] {
      const db = new DatabaseSync(path);
      try {
        return (
          db.prepare('SELECT seq, n, type, queue FROM ojs_events ORDER BY seq').all() as {
            seq: number;
            n: number;
            type: string | null;
            queue: string | null;
          }[]
        ).map((row) => ({ ...row }));
      } finally {
        db.close();
      }
    }

    /** 0-2 enqueued (q1, q1, q2), 3 workflow.started, 4-6 started/completed (q1), 7 enqueued. */
    function mixed(): OjsEvent[] {
      const at = (type: string, index: number, queue: string) =>
        makeEvent(type, `job-${index}`, { index, queue, job_type: 't' }, T0 + index);
      return [
        at('job.enqueued', 0, 'q1'),
        at('job.enqueued', 1, 'q1'),
        at('job.enqueued', 2, 'q2'),
        at('workflow.started', 3, 'q1'),
        at('job.started', 4, 'q1'),
        at('job.completed', 5, 'q1'),
        at('job.started', 6, 'q1'),
        at('job.enqueued', 7, 'q1'),
      ];
    }

    it('a run of per-job events is one row; rarer types and lone events are rows of their own', async () => {
      const log = mixed();
      await a.appendEvents(log);
      assert.deepEqual(rows(), [
        { seq: 1, n: 3, type: 'job.enqueued', queue: null },
        { seq: 4, n: 1, type: 'workflow.started', queue: 'q1' },
        { seq: 5, n: 4, type: null, queue: 'q1' },
      ]);
      assert.deepEqual(await a.listEvents({ limit: 100 }), log);
    });

    it('filters, limits, newest first and subjects look inside the rows', async () => {
      await a.appendEvents(mixed());
      const list = async (filter: Partial<Parameters<typeof a.listEvents>[0]>) =>
        indexes(await a.listEvents({ limit: 100, ...filter }));
      assert.deepEqual(await list({ queues: ['q2'] }), [2]);
      assert.deepEqual(await list({ queues: ['q1'], limit: 3 }), [0, 1, 3]);
      assert.deepEqual(await list({ types: ['job.started'] }), [4, 6]);
      assert.deepEqual(await list({ types: ['job.started', 'workflow.started'] }), [3, 4, 6]);
      assert.deepEqual(
        await list({ types: ['job.enqueued'], newestFirst: true, limit: 3 }),
        [7, 2, 1],
      );
      assert.deepEqual(await list({ newestFirst: true, limit: 2 }), [7, 6]);
      assert.deepEqual(await list({ subject: 'job-5' }), [5]);
      assert.deepEqual(await list({ subject: 'job-9' }), []);
      assert.deepEqual(await list({ jobTypes: ['t'], types: ['job.completed'] }), [5]);
    });

    it('a cursor inside a row lists the rest of that row, whoever listed it', async () => {
      const log = mixed();
      await a.appendEvents(log);
      const page = await a.listEvents({ limit: 6 });
      assert.deepEqual(indexes(await a.listEvents({ after: page.at(-1)!.id, limit: 10 })), [6, 7]);
      const b = new SqliteStore({ path, checkpointThread: false });
      await b.init();
      try {
        // B never listed them: found by searching the rows.
        assert.deepEqual(
          indexes(await b.listEvents({ after: log[1]!.id, limit: 10 })),
          [2, 3, 4, 5, 6, 7],
        );
        assert.deepEqual(
          indexes(await b.listEvents({ after: log[5]!.id, limit: 1, newestFirst: true })),
          [7],
        );
        // An id found only inside another event's data is no cursor.
        const decoy = makeEvent('job.started', 'x', { index: 8, id: 'evt_nope' }, T0);
        await b.appendEvents([decoy, { ...decoy, id: 'evt_other', data: { index: 9 } }]);
        assert.deepEqual(indexes(await b.listEvents({ after: 'evt_nope', limit: 2 })), [0, 1]);
      } finally {
        await b.close();
      }
    });

    it('a listing reads as many pages of rows as its limit and filter need', async () => {
      for (let i = 0; i < 40; i++) await a.appendEvents(events(1, 'queue.paused', i));
      const range = (from: number, to: number) =>
        Array.from({ length: Math.abs(to - from) + 1 }, (_, i) =>
          from < to ? from + i : from - i,
        );
      assert.deepEqual(indexes(await a.listEvents({ limit: 35 })), range(0, 34));
      assert.deepEqual(indexes(await a.listEvents({ limit: 35, newestFirst: true })), range(39, 5));
      // Rows of several events, the one match in the last of them.
      for (let i = 0; i < 40; i++) await a.appendEvents(events(3, 'job.enqueued', 100 + 3 * i));
      const last = makeEvent('job.started', 'z', { index: 500, queue: 'z', job_type: 't' }, T0);
      await a.appendEvents([{ ...last }, { ...last, id: `${last.id}-2`, data: { index: 501 } }]);
      assert.deepEqual(indexes(await a.listEvents({ queues: ['z'], limit: 5 })), [500]);
      assert.equal((await a.listEvents({ types: ['job.enqueued'], limit: 1000 })).length, 120);
    });

    it('pruning keeps exactly the newest N, cutting into a row', async () => {
      const first = events(5);
      await a.appendEvents(first);
      await a.appendEvents(events(4, 'job.completed', 5));
      assert.equal(await a.pruneEvents(6, 2), 2);
      assert.deepEqual(indexes(await a.listEvents({ limit: 100 })), [2, 3, 4, 5, 6, 7, 8]);
      assert.equal(await a.pruneEvents(6), 1);
      assert.deepEqual(indexes(await a.listEvents({ limit: 100 })), [3, 4, 5, 6, 7, 8]);
      // Cut to one event: the rest of the row is a row of one event, with its id.
      assert.equal(await a.pruneEvents(5), 1);
      assert.deepEqual(rows()[0], { seq: 5, n: 1, type: 'job.enqueued', queue: 'q' });
      assert.deepEqual(
        indexes(await a.listEvents({ after: first[3]!.id, limit: 100 })),
        [4, 5, 6, 7, 8],
      );
      assert.deepEqual(
        indexes(await a.listEvents({ after: first[4]!.id, limit: 100 })),
        [5, 6, 7, 8],
      );
      // Positions go on after the last row.
      await a.appendEvents(events(2, 'job.started', 9));
      assert.equal(await a.pruneEvents(2), 5);
      assert.deepEqual(indexes(await a.listEvents({ limit: 100 })), [9, 10]);
      assert.equal(await a.pruneEvents(0), 2);
      assert.deepEqual(rows(), []);
    });

    it('a refused batch writes none of its events and leaves no gap in the positions', async () => {
      await a.appendEvents(events(2));
      // A batch refused as a whole (duplicate id) writes none of its events.
      const [job] = await a.insertJobs(
        [jobRecord('dup')],
        [makeEvent('job.enqueued', 'dup', { index: 50 }, T0)],
        T0,
      );
      assert.equal(job!.status, 'inserted');
      const refused = await a.insertJobs(
        [jobRecord('dup')],
        [makeEvent('job.enqueued', 'dup', { index: 51 }, T0)],
        T0,
      );
      assert.equal(refused[0]!.status, 'duplicate_id');
      await a.appendEvents(events(2, 'job.started', 2));
      assert.deepEqual(
        rows().map((row) => [row.seq, row.n]),
        [
          [1, 2],
          [3, 1],
          [4, 2],
        ],
      );
      assert.equal(await a.pruneEvents(4), 1);
    });

    it("the writes of one group share its rows, in write order, without a refused write's events", async () => {
      await a.insertJobs([jobRecord('held')], [], T0);
      // Issued in one turn: one group, each write its own SAVEPOINT.
      const refused = () =>
        a.insertJobs(
          [jobRecord('held')],
          [makeEvent('job.enqueued', 'held', { index: 99 }, T0)],
          T0,
        );
      // Refused first (its events were the group's first) and between two writes.
      const writes = await Promise.all([
        refused(),
        a.appendEvents(events(2, 'job.enqueued', 0)),
        refused(),
        a.appendEvents(events(1, 'job.started', 2)),
        a.appendEvents(events(1, 'queue.paused', 3)),
        a.appendEvents(events(200, 'job.completed', 4)),
      ]);
      for (const at of [0, 2]) {
        assert.equal((writes[at] as { status: string }[])[0]!.status, 'duplicate_id');
      }
      // A run is cut at 128 events (MAX_EVENT_RUN).
      assert.deepEqual(
        rows().map((row) => [row.seq, row.n, row.type]),
        [
          [1, 3, null],
          [4, 1, 'queue.paused'],
          [5, 128, 'job.completed'],
          [133, 72, 'job.completed'],
        ],
      );
      assert.deepEqual(
        indexes(await a.listEvents({ limit: 1000 })),
        Array.from({ length: 204 }, (_, i) => i),
      );
    });
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

function jobRecord(id: string) {
  return {
    ...parseEnqueueRequest({ type: 't', args: [] }, T0, { visibilityTimeoutMs: 30_000 }),
    id,
  };
}

describe('SQLite migration 014 (rows of several events)', () => {
  it('carries an existing log and its jobs over; new runs follow the old positions', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-events-014m-'));
    const path = join(dir, 'ojs.db');
    try {
      const db = new DatabaseSync(path);
      migrate(
        db,
        loadMigrations().filter((m) => m.version < 14),
      );
      const job = jobRecord('kept-job');
      db.prepare(INSERT_JOB).run(...insertValues(job, 1));
      const log = [...events(3), ...events(2, 'cron.fired', 3)];
      const insert = db.prepare(
        'INSERT INTO ojs_events (id, type, queue, job_type, doc) VALUES (?, ?, ?, ?, ?)',
      );
      for (const event of log) insert.run(event.id, event.type, 'q', 't', JSON.stringify(event));
      db.close();
      const store = new SqliteStore({ path, checkpointThread: false });
      await store.init();
      try {
        assert.equal((await store.getJob('kept-job'))?.state, 'available');
        assert.deepEqual(await store.listEvents({ limit: 10 }), log);
        assert.deepEqual(
          indexes(await store.listEvents({ after: log[1]!.id, limit: 10 })),
          [2, 3, 4],
        );
        assert.deepEqual(
          indexes(await store.listEvents({ types: ['cron.fired'], newestFirst: true, limit: 1 })),
          [4],
        );
        await store.appendEvents(events(3, 'job.started', 5));
        assert.deepEqual(
          indexes(await store.listEvents({ after: log[4]!.id, limit: 10 })),
          [5, 6, 7],
        );
        assert.equal(await store.pruneEvents(4), 4);
        assert.deepEqual(indexes(await store.listEvents({ limit: 10 })), [4, 5, 6, 7]);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
