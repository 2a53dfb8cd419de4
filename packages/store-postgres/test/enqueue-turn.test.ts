/**
 * Concurrent enqueues of one event-loop turn share one `enqueue` statement
 * while one of the turn batch's statements runs (inserts.ts EnqueueTurn); a
 * call that finds none running and none waiting goes at once (decision
 * 0129). First with a stand-in statement (when calls go, how they are
 * grouped, sliced, and sent alone again), then on PostgreSQL (a taken id
 * inside a group refuses only its own call).
 */
import assert from 'node:assert/strict';
import { after, describe, it, test } from 'node:test';
import { type InsertResult, type JobRecord, type OjsEvent, parseEnqueueRequest } from '@ojs/core';
import { EnqueueTurn } from '../src/inserts.ts';
import { dropSchema, openStore, testSchema, unavailable } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const job = (body: Record<string, unknown> = {}): JobRecord =>
  parseEnqueueRequest({ type: 'turn.test', args: [], ...body }, T0, {
    visibilityTimeoutMs: 300_000,
  });

/**
 * A stand-in statement: records each run's job ids when it is sent;
 * `answer` decides what it returns. After `hold()`, the next run is
 * answered only once released (a statement in flight).
 */
function statement(answer: (jobs: JobRecord[]) => InsertResult[] | null | Error) {
  const runs: string[][] = [];
  let gate: Promise<void> | undefined;
  const run = async (jobs: JobRecord[], _events: OjsEvent[], _now: number) => {
    runs.push(jobs.map((j) => j.id));
    const held = gate;
    gate = undefined;
    await held;
    const out = answer(jobs);
    if (out instanceof Error) throw out;
    return out;
  };
  const hold = () => {
    let release!: () => void;
    gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    return release;
  };
  return { runs, run, hold };
}
const inserted = (jobs: JobRecord[]): InsertResult[] =>
  jobs.map((j) => ({ status: 'inserted', job: { ...j, seq: 1 } }));
const ids = (results: (InsertResult[] | null)[]) =>
  results.map((r) => r?.map((x) => (x.status === 'inserted' ? x.job.id : x.status)) ?? null);

/** A first call, sent at once and held: the turn batch has a statement running. */
function busy(turn: EnqueueTurn, hold: () => () => void) {
  const release = hold();
  const first = [job()];
  const answered = turn.enqueue(first, [], T0);
  return {
    first,
    /** Answers it (its own outcome is not looked at). */
    done: async () => {
      release();
      await answered.catch(() => undefined);
    },
  };
}

describe('EnqueueTurn', () => {
  it('a call with no statement running and none waiting is sent at once', async () => {
    const { runs, run, hold } = statement(inserted);
    const turn = new EnqueueTurn(run);
    const release = hold();
    const alone = [job()];
    const answered = turn.enqueue(alone, [], T0);
    assert.deepEqual(runs, [alone.map((j) => j.id)], 'sent in this turn, before it ends');
    // While it runs, the calls of a turn wait for the turn's end, together.
    const next = [job()];
    const later = turn.enqueue(next, [], T0);
    assert.equal(runs.length, 1);
    release();
    assert.deepEqual(ids([await answered, await later]), [
      alone.map((j) => j.id),
      next.map((j) => j.id),
    ]);
    assert.equal(runs.length, 2);
    // Idle again: the next call goes at once.
    const again = turn.enqueue([job()], [], T0);
    assert.equal(runs.length, 3);
    await again;
  });

  it('while a statement runs, the calls of one turn are one statement; each call gets its own results, in order', async () => {
    const { runs, run, hold } = statement(inserted);
    const turn = new EnqueueTurn(run);
    const running = busy(turn, hold);
    const calls = [[job(), job()], [job()], [job(), job(), job()]];
    const answered = Promise.all(calls.map((jobs) => turn.enqueue(jobs, [], T0)));
    await running.done();
    const results = await answered;
    assert.equal(runs.length, 2);
    assert.deepEqual(
      runs[1],
      calls.flat().map((j) => j.id),
    );
    assert.deepEqual(
      ids(results),
      calls.map((jobs) => jobs.map((j) => j.id)),
    );
  });

  it('a group that stores nothing (a job needs judging): each call runs again on its own', async () => {
    const taken = job();
    const { runs, run, hold } = statement((jobs) =>
      jobs.some((j) => j.id === taken.id) ? null : inserted(jobs),
    );
    const turn = new EnqueueTurn(run);
    const running = busy(turn, hold);
    const a = [job()];
    const c = [job(), job()];
    const answered = Promise.all([
      turn.enqueue(a, [], T0),
      turn.enqueue([taken], [], T0),
      turn.enqueue(c, [], T0),
    ]);
    await running.done();
    const results = await answered;
    assert.equal(runs.length, 5, 'the running one, the group, then each call alone');
    assert.deepEqual(ids(results), [a.map((j) => j.id), null, c.map((j) => j.id)]);
  });

  it('a statement refused for its data (SQLSTATE 22/23): each call alone; other errors fail the group', async () => {
    const bad = job();
    const refused = Object.assign(new Error('invalid input'), { code: '22P02' });
    const { runs, run, hold } = statement((jobs) =>
      jobs.some((j) => j.id === bad.id) ? refused : inserted(jobs),
    );
    const turn = new EnqueueTurn(run);
    const running = busy(turn, hold);
    const good = [job()];
    const settled = Promise.allSettled([turn.enqueue(good, [], T0), turn.enqueue([bad], [], T0)]);
    await running.done();
    const outcomes = await settled;
    assert.equal(runs.length, 4, 'the running one, the group, then each call alone');
    assert.equal(outcomes[0]!.status, 'fulfilled');
    assert.equal(outcomes[1]!.status, 'rejected');

    const lost = new Error('Connection terminated unexpectedly');
    const failing = statement(() => lost);
    const turn2 = new EnqueueTurn(failing.run);
    const running2 = busy(turn2, failing.hold);
    const settled2 = Promise.allSettled([
      turn2.enqueue([job()], [], T0),
      turn2.enqueue([job()], [], T0),
    ]);
    await running2.done();
    const both = await settled2;
    // The outcome of a lost statement is not known: no call runs it again.
    assert.equal(failing.runs.length, 2, 'the running one, the group');
    assert.deepEqual(
      both.map((o) => (o.status === 'rejected' ? o.reason : o.status)),
      [lost, lost],
    );
  });
});

const reason = await unavailable();
if (reason !== undefined) {
  test('EnqueueTurn on PostgreSQL', { skip: reason }, () => {});
} else {
  describe('concurrent single enqueues on PostgreSQL', () => {
    const schema = testSchema('turn');
    after(() => dropSchema(schema));

    it('50 in one turn while one runs: all stored, seqs ascend in call order', async () => {
      const store = await openStore(schema, { pool: { max: 4 } });
      try {
        await store.reset();
        // Sent at once (nothing ran): the 50 below wait for the turn's end, together.
        const running = store.insertJobs([job()], [], T0);
        const jobs = Array.from({ length: 50 }, () => job());
        const results = await Promise.all(jobs.map((j) => store.insertJobs([j], [], T0)));
        await running;
        const seqs = results.map(([r]) => {
          assert.equal(r!.status, 'inserted');
          return (r as { job: JobRecord }).job.seq!;
        });
        assert.deepEqual(
          seqs,
          [...seqs].sort((x, y) => x - y),
        );
        for (const [i, j] of jobs.entries()) {
          const stored = await store.getJob(j.id);
          assert.equal(stored?.seq, seqs[i]);
        }
      } finally {
        await store.close();
      }
    });

    it('an id taken inside the group: that call gets duplicate_id, the others are stored', async () => {
      const store = await openStore(schema, { pool: { max: 4 } });
      try {
        await store.reset();
        const first = job();
        await store.insertJobs([first], [], T0);
        const others = Array.from({ length: 10 }, () => job());
        const again = { ...job(), id: first.id };
        const results = await Promise.all([
          ...others.slice(0, 5).map((j) => store.insertJobs([j], [], T0)),
          store.insertJobs([again], [], T0),
          ...others.slice(5).map((j) => store.insertJobs([j], [], T0)),
        ]);
        assert.equal(results[5]![0]!.status, 'duplicate_id');
        for (const [i, r] of results.entries()) {
          if (i !== 5) assert.equal(r[0]!.status, 'inserted');
        }
        for (const j of others) assert.ok(await store.getJob(j.id));
        assert.equal((await store.getJob(first.id))?.type, first.type);
      } finally {
        await store.close();
      }
    });
  });
}
