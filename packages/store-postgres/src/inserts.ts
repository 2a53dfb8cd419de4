/**
 * New jobs: insertJobs (all or nothing, duplicate ids, unique keys with
 * reject / ignore / replace) and the unique policies of commit inserts.
 *
 * Unique keys are enforced by the database: the key's row in unique_locks
 * (primary key) is locked by the inserting transaction, created locked when
 * absent, so concurrent enqueues of one key are decided one after the
 * other; the holder's job row is locked too before it is judged (core
 * uniqueConflicts) or cancelled (replace).
 */
import {
  cancel,
  type InsertResult,
  isTerminal,
  type JobRecord,
  jobColumns,
  jobEvent,
  type OjsEvent,
  toIso,
  uniqueConflicts,
} from '@ojs/core';
import { type Database, OutcomeUnknown, Rollback } from './database.ts';
import { isUniqueViolation } from './errors.ts';
import { columnLiterals, eventRow, eventValues, toNumber } from './rows.ts';
import { ENQUEUE_COLUMNS, type Statements } from './statements.ts';
import {
  appendEvents,
  insertRows,
  type JobWriteRow,
  nextSeqs,
  notifyAvailable,
  type Tx,
  updateRows,
} from './tx.ts';

/** New jobs of one transaction, and the unique-key holders they replace. */
export class InsertBatch {
  readonly pending = new Map<string, JobRecord>();
  readonly replaced: JobWriteRow[] = [];
  readonly events: OjsEvent[] = [];

  get hasAvailable(): boolean {
    return [...this.pending.values()].some((job) => job.state === 'available');
  }
}

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** SQLSTATE raised by ojs_require (sql/005_require.sql): a one-statement write's precondition failed. */
const REQUIRE_FAILED = 'OJ001';

/**
 * Whether insertJobs may try the one-statement enqueue: some jobs, each
 * without a unique key or with a unique policy (a bare unique_key, taken
 * over unconditionally, is left to the transaction path).
 */
export function enqueueInOneStatement(jobs: JobRecord[]): boolean {
  return (
    jobs.length > 0 && jobs.every((job) => job.unique_key === undefined || job.unique !== undefined)
  );
}

/**
 * The fast path of insertJobs: the `enqueue` statement, run on its own
 * (one round trip, its own transaction). Returns null when it stored
 * nothing because a job needs judging (a unique key already held, a
 * duplicate id): the caller then runs insertJobsTx, which reports it. If
 * the connection is lost mid-statement, the jobs are looked up once the
 * statement is over (Database.autocommit): stored exactly as sent means
 * committed.
 */
export async function enqueue(
  db: Database,
  sql: Statements,
  channel: string,
  jobs: JobRecord[],
  events: OjsEvent[],
  now: number,
): Promise<InsertResult[] | null> {
  const ids = new Set(jobs.map((job) => job.id));
  // The stored doc is this one plus seq, assigned by the statement.
  const docs = jobs.map(({ seq: _seq, ...doc }) => doc as JobRecord);
  const columns = docs.map((doc) => jobColumns(doc) as unknown as Record<string, unknown>);
  const stored = (seqs: Map<string | null, string | null>): InsertResult[] =>
    jobs.map((job) => ({
      status: 'inserted',
      // Returned as stored: a JSON round trip, exactly what getJob will read.
      job: clone({ ...job, seq: toNumber(seqs.get(job.id)) }),
    }));
  const [eventDocs, ...eventColumns] = eventValues(
    events.filter((e) => e.subject === undefined || ids.has(e.subject)).map((e) => eventRow(e)),
  );
  try {
    return await db.autocommit(
      sql.enqueue,
      [
        JSON.stringify(docs),
        eventDocs,
        now,
        toIso(now),
        channel,
        ...columnLiterals(columns, ENQUEUE_COLUMNS),
        ...eventColumns,
      ],
      (result: { id: string | null; seq: string | null }[]) =>
        stored(new Map(result.map((row) => [row.id, row.seq]))),
      async () => {
        const { rows: found } = await db.query<{ id: string; seq: string }>(sql.enqueued, [
          JSON.stringify(docs.map((doc) => ({ id: doc.id, doc }))),
        ]);
        if (found.length === 0) return undefined;
        if (found.length !== jobs.length) throw new OutcomeUnknown();
        return stored(new Map(found.map((row) => [row.id, row.seq])));
      },
    );
  } catch (error) {
    const code = (error as { code?: string } | null)?.code;
    if (code === REQUIRE_FAILED || isUniqueViolation(error, 'jobs_pkey')) return null;
    throw error;
  }
}

type Enqueue = (
  jobs: JobRecord[],
  events: OjsEvent[],
  now: number,
) => Promise<InsertResult[] | null>;

interface TurnCall {
  jobs: JobRecord[];
  events: OjsEvent[];
  now: number;
  resolve: (results: InsertResult[] | null) => void;
  reject: (error: unknown) => void;
}

/**
 * The statement refused the data (SQLSTATE class 22 or 23): it was rolled
 * back, nothing is stored, and each call can run again on its own. Any
 * other error (a lost connection: outcome unknown) stays the group's.
 */
const refusedData = (error: unknown) =>
  /^2[23]/.test((error as { code?: string } | null)?.code ?? '');

/**
 * Concurrent enqueues, one statement: the one-statement enqueues of one
 * event-loop turn (every request the server read in that turn) run as one
 * `enqueue` statement: one round trip, one commit, one NOTIFY, instead of
 * one each. Only while one of its statements runs (or waits for its
 * flush), though: a call that finds none running and none waiting goes at
 * once (decision 0129). An idle server's PUSH then does not wait for the
 * turn, behind the requests read with it (a worker's next FETCH and its
 * ACK, whose statements went first); a burst from idle costs one statement
 * more (its first call), and under load a statement is always running.
 * Jobs keep the calls' order within a statement (their seqs ascend in it);
 * each call gets its own slice of the results. If the group's statement stores
 * nothing because a job needs judging (an id taken, by the store or by
 * another call of the group), each call runs again on its own, so only
 * that call takes the transaction path. Calls with unique keys are not
 * grouped (enqueueTurn's caller): a key held by one call would send every
 * call of the group through the fallback.
 */
export class EnqueueTurn {
  #calls: TurnCall[] = [];
  /** Statements sent and not answered yet (their flush included). */
  #running = 0;
  readonly #statement: Enqueue;

  constructor(run: Enqueue) {
    this.#statement = run;
  }

  readonly #run: Enqueue = async (jobs, events, now) => {
    this.#running++;
    try {
      return await this.#statement(jobs, events, now);
    } finally {
      this.#running--;
    }
  };

  enqueue(jobs: JobRecord[], events: OjsEvent[], now: number): Promise<InsertResult[] | null> {
    // Nothing to share a statement with: no statement runs, none waits.
    if (this.#calls.length === 0 && this.#running === 0) return this.#run(jobs, events, now);
    return new Promise((resolve, reject) => {
      // After the poll phase: the calls of every request read in this turn are in.
      if (this.#calls.length === 0) setImmediate(() => this.#flush());
      this.#calls.push({ jobs, events, now, resolve, reject });
    });
  }

  async #flush(): Promise<void> {
    const calls = this.#calls;
    this.#calls = [];
    const alone = (call: TurnCall) =>
      this.#run(call.jobs, call.events, call.now).then(call.resolve, call.reject);
    if (calls.length === 1) return alone(calls[0]!);
    let results: InsertResult[] | null;
    try {
      results = await this.#run(
        calls.flatMap((call) => call.jobs),
        calls.flatMap((call) => call.events),
        Math.max(...calls.map((call) => call.now)),
      );
    } catch (error) {
      if (!refusedData(error)) {
        for (const call of calls) call.reject(error);
        return;
      }
      results = null;
    }
    if (results === null) {
      await Promise.all(calls.map(alone));
      return;
    }
    let offset = 0;
    for (const call of calls) {
      call.resolve(results.slice(offset, offset + call.jobs.length));
      offset += call.jobs.length;
    }
  }
}

/** The body of insertJobs: throws Rollback(results) when any job is refused. */
export async function insertJobsTx(
  tx: Tx,
  jobs: JobRecord[],
  events: OjsEvent[],
  now: number,
): Promise<InsertResult[]> {
  const existing = new Map<string, JobRecord>();
  if (jobs.length > 0) {
    const { rows } = await tx.client.query<{ doc: JobRecord }>(tx.sql.jobsByIds, [
      jobs.map((job) => job.id),
    ]);
    for (const row of rows) existing.set(row.doc.id, row.doc);
  }
  const seqs = await nextSeqs(tx, jobs.length);
  const batch = new InsertBatch();
  const results: InsertResult[] = [];
  let abort = false;
  for (const [index, job] of jobs.entries()) {
    const sameId = existing.get(job.id) ?? batch.pending.get(job.id);
    if (sameId !== undefined) {
      results.push({ status: 'duplicate_id', existing: sameId });
      abort = true;
      continue;
    }
    const holder = await resolveUniqueKey(tx, job, now, batch);
    if (holder !== null) {
      if (job.unique!.on_conflict === 'reject') {
        results.push({ status: 'rejected', existing: holder });
        abort = true;
      } else {
        results.push({ status: 'existing', existing: holder });
      }
      continue;
    }
    // Returned as stored: a JSON round trip, exactly what getJob will read.
    const stored = clone({ ...job, seq: seqs[index]! });
    batch.pending.set(job.id, stored);
    results.push({ status: 'inserted', job: stored });
  }
  if (abort) throw new Rollback(results);
  await writeBatch(tx, batch, now);
  await appendEvents(tx, [
    ...batch.events,
    ...events.filter((e) => e.subject === undefined || batch.pending.has(e.subject)),
  ]);
  if (batch.hasAvailable) await notifyAvailable(tx);
  return results;
}

/**
 * Commit inserts (workflow steps, cron firings): unique policies apply, but
 * a held key (reject or ignore) skips the job instead of failing the commit.
 * Returns the batch written and the ids skipped.
 */
export async function commitInsertsTx(
  tx: Tx,
  inserts: JobRecord[],
  now: number,
): Promise<{ batch: InsertBatch; skipped: Set<string> }> {
  const batch = new InsertBatch();
  const skipped = new Set<string>();
  if (inserts.length === 0) return { batch, skipped };
  const seqs = await nextSeqs(tx, inserts.length);
  for (const [index, job] of inserts.entries()) {
    if ((await resolveUniqueKey(tx, job, now, batch)) !== null) {
      skipped.add(job.id);
      continue;
    }
    batch.pending.set(job.id, { ...job, seq: seqs[index]! });
  }
  await writeBatch(tx, batch, now);
  return { batch, skipped };
}

/** Stores a batch: cancels replaced holders (guarded), inserts the new jobs. */
async function writeBatch(tx: Tx, batch: InsertBatch, now: number): Promise<void> {
  if (!(await updateRows(tx, batch.replaced))) {
    throw new Error('A job holding a unique key changed while it was locked.');
  }
  await insertRows(tx, [...batch.pending.values()], now);
}

/**
 * Unique policy of one new job: returns the holder when the key is held and
 * the policy is reject or ignore (the job must not be inserted); otherwise
 * cancels a holder to replace (in `batch`) and points the key at the new
 * job. Jobs without a unique key pass through.
 */
async function resolveUniqueKey(
  tx: Tx,
  job: JobRecord,
  now: number,
  batch: InsertBatch,
): Promise<JobRecord | null> {
  if (job.unique_key === undefined) return null;
  if (job.unique !== undefined) {
    const holder = await uniqueHolder(tx, job, now, batch.pending);
    if (holder !== null && holder.id !== job.id) {
      const policy = job.unique.on_conflict;
      if (policy === 'reject' || policy === 'ignore') return holder;
      // replace: the old job is cancelled in the same transaction.
      if (!isTerminal(holder.state)) {
        const cancelled = cancel(holder, now);
        if (batch.pending.has(holder.id)) batch.pending.set(holder.id, cancelled);
        else batch.replaced.push({ job: cancelled, expectRev: holder.rev });
        batch.events.push(jobEvent('job.cancelled', cancelled, { reason: 'unique_replace' }, now));
      }
    }
  }
  await tx.client.query(tx.sql.takeUniqueKey, [job.unique_key, job.id, now]);
  return null;
}

/**
 * Locks the job's unique key (creating its row, locked, when absent) and
 * returns the job holding it if that job still conflicts, else null.
 */
async function uniqueHolder(
  tx: Tx,
  job: JobRecord,
  now: number,
  pending: Map<string, JobRecord>,
): Promise<JobRecord | null> {
  const { client, sql } = tx;
  const key = job.unique_key!;
  for (let attempt = 0; attempt < 10; attempt++) {
    const { rows } = await client.query<{ job_id: string; locked_at: number }>(sql.lockUniqueKey, [
      key,
    ]);
    const lock = rows[0];
    if (lock === undefined) {
      const created = await client.query(sql.createUniqueKey, [key, job.id, now]);
      if (created.rowCount === 1) return null;
      continue; // another transaction created it meanwhile: lock and judge that one
    }
    const holder =
      pending.get(lock.job_id) ??
      (await client.query<{ doc: JobRecord }>(sql.lockJob, [lock.job_id])).rows[0]?.doc ??
      null;
    if (holder === null) return null;
    return uniqueConflicts(holder, job.unique!, lock.locked_at, now) ? holder : null;
  }
  throw new Error(`Could not lock unique key ${key}.`);
}
