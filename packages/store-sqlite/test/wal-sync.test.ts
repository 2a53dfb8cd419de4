/**
 * WalSync with GroupCommit on a real WAL database: a committed group is
 * answered only after a WAL sync that started after its COMMIT; groups
 * committed during a sync share the next one; a failed sync fails its
 * callers; reads wait only when they may have seen something not yet
 * synced (our own group, or another connection's commit).
 *
 * The sync is a stand-in the test completes by hand, so "not answered yet"
 * is observed directly (a flag), never inferred from elapsed time.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { GroupCommit } from '../src/group-commit.ts';
import { WalSync } from '../src/wal-sync.ts';

type Callback = (error: NodeJS.ErrnoException | null) => void;

/** Runs the event loop until every pending immediate (the group's COMMIT) has run. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

function tracked<T>(promise: Promise<T>) {
  const state = { done: false, error: undefined as unknown, value: undefined as T | undefined };
  promise.then(
    (value) => {
      state.done = true;
      state.value = value;
    },
    (error: unknown) => {
      state.done = true;
      state.error = error;
    },
  );
  return state;
}

describe('WalSync: durable before answered, without blocking the thread', () => {
  let dir: string;
  let db: DatabaseSync;
  let other: DatabaseSync;
  let syncs: { callback: Callback; committedRows: number }[];
  let group: GroupCommit;

  const count = (conn: DatabaseSync) =>
    (conn.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
  const insert = () => group.write(() => db.exec('INSERT INTO t VALUES (1)'));
  const read = () => group.read(() => count(db));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ojs-walsync-'));
    const path = join(dir, 'db.sqlite');
    db = new DatabaseSync(path);
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE t (x)');
    other = new DatabaseSync(path);
    syncs = [];
    const version = db.prepare('PRAGMA data_version');
    const sync = new WalSync(
      path,
      () => (version.get() as { data_version: number }).data_version,
      (_fd, callback) => {
        // What another connection sees when the sync starts: the commit is done.
        syncs.push({ callback, committedRows: count(other) });
      },
    );
    group = new GroupCommit(db, { sync });
  });
  afterEach(() => {
    other.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a group only after a sync that started after its COMMIT', async () => {
    const writes = [tracked(insert()), tracked(insert())];
    await turn();
    assert.equal(syncs.length, 1, 'one sync for the group');
    assert.equal(syncs[0]!.committedRows, 2, 'the sync started after the COMMIT');
    assert.ok(
      writes.every((w) => !w.done),
      'nobody answered before the sync completed',
    );
    syncs[0]!.callback(null);
    await turn();
    assert.ok(writes.every((w) => w.done && w.error === undefined));
  });

  it('answers a write marked not durable (a claim) at COMMIT, the rest of its group after the sync', async () => {
    const stored = tracked(insert());
    const claimed = tracked(group.write(() => count(db), false));
    await turn();
    assert.equal(syncs.length, 1, 'one sync for the group');
    assert.equal(syncs[0]!.committedRows, 1, 'the sync started after the COMMIT');
    await turn();
    assert.equal(claimed.done, true, 'the claim is answered once committed');
    assert.equal(claimed.value, 1, 'and saw the insert of its group');
    assert.equal(stored.done, false, 'the insert waits for the sync');
    syncs[0]!.callback(null);
    await turn();
    assert.equal(stored.done, true);
    assert.equal(stored.error, undefined);
  });

  it('fails a not-durable write whose COMMIT failed', async () => {
    const claimed = tracked(group.write(() => count(db), false));
    // The group's transaction ends underneath it: its COMMIT fails.
    db.exec('ROLLBACK');
    await turn();
    await turn();
    assert.equal(claimed.done, true);
    assert.ok(claimed.error instanceof Error, 'a COMMIT failure is an error, never a success');
    assert.equal(syncs.length, 0);
  });

  it('a group that changed no row (an empty claim or promotion) is answered without a sync of its own', async () => {
    const first = tracked(insert());
    await turn();
    syncs[0]!.callback(null);
    await turn();
    assert.equal(first.done, true);
    // A durable write that found nothing to change: what it read is on disk.
    const empty = tracked(group.write(() => db.exec('UPDATE t SET x = 2 WHERE x = 99')));
    await turn();
    await turn();
    assert.equal(empty.done, true, 'answered at once');
    assert.equal(empty.error, undefined);
    assert.equal(syncs.length, 1, 'no fdatasync for a group that appended nothing to the WAL');
  });

  it('a group that changed no row still waits for the sync of what it may have seen', async () => {
    const write = tracked(insert());
    await turn();
    assert.equal(syncs.length, 1);
    // Opened while the sync runs: held until it completes, then committed.
    const empty = tracked(group.write(() => count(db)));
    await turn();
    assert.equal(empty.done, false, 'what it read (the insert) is not on disk yet');
    syncs[0]!.callback(null);
    await turn();
    await turn();
    assert.equal(write.done, true);
    assert.equal(empty.done, true, 'answered with the sync that covers the insert');
    assert.equal(empty.value, 1);
    assert.equal(syncs.length, 1, 'and needed no sync of its own');
  });

  it('a group that changed a row and changed it back still syncs (rows changed, not net change)', async () => {
    const write = tracked(
      group.write(() => {
        db.exec('INSERT INTO t VALUES (7)');
        db.exec('DELETE FROM t WHERE x = 7');
      }),
    );
    await turn();
    assert.equal(syncs.length, 1, 'the WAL got frames: synced');
    syncs[0]!.callback(null);
    await turn();
    assert.equal(write.done, true);
  });

  it('holds a group opened during a sync open until that sync completes: later writes share its COMMIT', async () => {
    const first = tracked(insert());
    await turn();
    assert.equal(syncs.length, 1);
    const second = tracked(insert());
    await turn();
    const third = tracked(insert());
    await turn();
    assert.equal(count(other), 1, 'the second and third writes are not committed yet');
    syncs[0]!.callback(null);
    await turn();
    assert.equal(first.done, true);
    assert.equal(syncs.length, 2, 'the held group committed, then its sync started');
    assert.equal(syncs[1]!.committedRows, 3, 'both writes in that one COMMIT');
    assert.equal(second.done || third.done, false, 'answered only after their own sync');
    syncs[1]!.callback(null);
    await turn();
    assert.ok(second.done && third.done);
  });

  it('commits a held group at once when a claim (not durable) joins it', async () => {
    tracked(insert());
    await turn();
    const held = tracked(insert());
    await turn();
    assert.equal(count(other), 1, 'held while the first sync runs');
    const claimed = tracked(group.write(() => count(db), false));
    await turn();
    await turn();
    assert.equal(claimed.done, true, 'the claim is answered without waiting for the sync');
    assert.equal(count(other), 2, 'its group committed');
    assert.equal(held.done, false, 'the insert still waits for a sync after its COMMIT');
  });

  it('groups committed during a sync share the next one', async () => {
    const first = tracked(insert());
    await turn();
    const second = tracked(insert());
    await turn();
    const third = tracked(insert());
    await turn();
    assert.equal(syncs.length, 1, 'one sync in flight at a time');
    syncs[0]!.callback(null);
    await turn();
    assert.ok(first.done);
    assert.ok(!second.done && !third.done, 'later groups wait for a sync of their own');
    assert.equal(syncs.length, 2);
    assert.equal(syncs[1]!.committedRows, 3);
    syncs[1]!.callback(null);
    await turn();
    assert.ok(second.done && third.done);
  });

  it('a read during a sync that covers all it could see is answered with that sync', async () => {
    const write = tracked(insert());
    await turn();
    const during = tracked(read());
    await turn();
    assert.ok(!during.done, 'the data it read is not synced yet');
    syncs[0]!.callback(null);
    await turn();
    assert.ok(write.done);
    assert.equal(during.value, 1, 'answered with the sync in flight');
    assert.equal(syncs.length, 1, 'no second sync needed');
  });

  it('a failed sync fails its callers, and the next read waits for a good one', async () => {
    const write = tracked(insert());
    await turn();
    syncs[0]!.callback(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await turn();
    assert.ok(write.done);
    assert.match(String(write.error), /EIO/);
    const after = tracked(read());
    await turn();
    assert.ok(!after.done, 'not answered from data whose sync failed');
    assert.equal(syncs.length, 2);
    syncs[1]!.callback(null);
    await turn();
    assert.equal(after.value, 1);
  });

  it('a read with nothing unsynced is answered at once; after another connection commits it waits', async () => {
    const write = tracked(insert());
    await turn();
    syncs[0]!.callback(null);
    await turn();
    assert.ok(write.done);
    assert.equal(await read(), 1, 'nothing pending: no sync needed');
    assert.equal(syncs.length, 1);

    other.exec('INSERT INTO t VALUES (2)');
    const seen = tracked(read());
    await turn();
    assert.ok(!seen.done, "another connection's commit may not be durable yet");
    assert.equal(syncs.length, 2);
    syncs[1]!.callback(null);
    await turn();
    assert.equal(seen.value, 2);
  });
});
