/**
 * The ACK / FAIL / lease-expiry and heartbeat hot path, batched (DESIGN §4
 * "Batched by default"). A settlement batch is one transaction:
 *   1. the basis of each item: the kept copy of a job this process claimed
 *      (core ClaimedJobs; ACK and FAIL only), else the row as stored, read
 *      and locked by `lockJobs` (FOR UPDATE, in id order) — skipped when
 *      every item has a copy;
 *   2. core decides each item in memory (decideSettlement), and ONE
 *      statement (`settleJobs`) writes every decided job, guarded in its
 *      WHERE on its basis (state active, attempt, rev, worker_id), together
 *      with the events of the jobs it wrote (and the NOTIFY of a requeue),
 *      returning the ids it wrote;
 *   3. only if a copy's write was refused (a stale copy: the job was reaped
 *      and re-claimed elsewhere, cancelled, ...), the items of those jobs
 *      go through 1-2 again on the rows as read: a copy never decides
 *      alone, not even a refusal.
 * So a batch of kept jobs is `settleJobs` alone, in autocommit mode
 * (`settleKept`, decision 0083), and only refused items need a transaction
 * (`settleRefusedTx`); other batches are one transaction. Items are
 * independent: a refused item is reported and the others commit. Rows read
 * are locked, so their guard cannot fail in practice; it is there so that a
 * write never lands on a record other than the one decided on, and an item
 * whose row failed it is reported as a conflict. Heartbeats (extendLeases)
 * always read the rows.
 */
import {
  type ClaimedJobs,
  conflict,
  decideLeaseExtension,
  decideSettlement,
  type JobRecord,
  jobColumns,
  type LeaseItem,
  type LeaseResult,
  OjsError,
  type OjsEvent,
  type SettleItem,
  type SettleRequest,
  type SettleResult,
} from '@ojs/core';
import type { Database } from './database.ts';
import {
  arrayLiteral,
  columnLiteral,
  docPatch,
  type EventRow,
  eventRow,
  eventValues,
  jobRow,
  keysLiteral,
} from './rows.ts';
import { SETTLE_COLUMNS, type Statements } from './statements.ts';
import type { Tx } from './tx.ts';

/** A job as read under the row lock: the document and the guard columns. */
interface Locked {
  doc: JobRecord;
  /** The worker_id column as stored (the guard compares the column, not the document). */
  worker_id: string | null;
}

/** What a settlement is decided on: a row as read, or a kept copy (`kept`). */
export interface Basis extends Locked {
  kept?: true;
}

async function lockJobs(tx: Tx, ids: string[]): Promise<Map<string, Locked>> {
  const { rows } = await tx.client.query<Locked>(tx.sql.lockJobs, [
    JSON.stringify([...new Set(ids)]),
  ]);
  return new Map(rows.map((row) => [row.doc.id, row]));
}

/** Event rows tagged with their job, so the write inserts only the events of jobs it wrote. */
function taggedEvents(jobId: string, events: OjsEvent[]): EventRow[] {
  return events.map((event) => ({ ...eventRow(event), job_id: jobId }));
}

/**
 * The guard of a settlement: the job still active (only active jobs are
 * settled), on the attempt, revision and lease holder of its basis.
 */
function guard(read: Locked) {
  return {
    expect_state: 'active',
    expect_attempt: read.doc.attempt,
    expect_rev: read.doc.rev,
    expect_worker_id: read.worker_id,
  };
}

/**
 * The kept copies of the batch's jobs, each taken out of `kept` (used here
 * or stale after this batch). A job with an expiry in the batch is decided
 * on its row: an expiry depends on the lease, which heartbeats change
 * without a new rev, so a copy may hold an old one.
 */
function keptCopies(kept: ClaimedJobs | undefined, items: SettleItem[]): Map<string, Basis> {
  const copies = new Map<string, Basis>();
  if (kept === undefined || kept.size === 0) return copies;
  const expiring = new Set(
    items.filter((item) => item.settlement.kind === 'expire').map((item) => item.id),
  );
  for (const item of items) {
    const job = kept.take(item.id);
    if (job === undefined || expiring.has(item.id)) continue;
    copies.set(item.id, { doc: job, worker_id: job.worker_id ?? null, kept: true });
  }
  return copies;
}

export async function settleJobsTx(
  tx: Tx,
  request: SettleRequest,
  kept?: ClaimedJobs,
): Promise<SettleResult[]> {
  tx.state.xid = null; // until a write returns the transaction's id
  const { items } = request;
  const results: SettleResult[] = new Array(items.length);
  const basis = keptCopies(kept, items);
  const unkept = items.filter((item) => !basis.has(item.id)).map((item) => item.id);
  if (unkept.length > 0) {
    for (const [id, read] of await lockJobs(tx, unkept)) basis.set(id, read);
  }
  const refused = await settleOn(txWriter(tx), request, [...items.keys()], basis, results);
  await settleRefusedTx(tx, request, refused, results);
  return results;
}

/**
 * Items `refused` (decided on copies whose write the guard refused) decided
 * again on their rows as read and locked, filling their `results`.
 */
export async function settleRefusedTx(
  tx: Tx,
  request: SettleRequest,
  refused: number[],
  results: SettleResult[],
): Promise<void> {
  if (refused.length === 0) return;
  const ids = refused.map((index) => request.items[index]!.id);
  await settleOn(txWriter(tx), request, refused, await lockJobs(tx, ids), results);
}

/**
 * Whether a batch can be written by one statement on its own (decision
 * 0083): every item has a kept copy, none is an expiry, and no id repeats
 * (a repeated id is decided against the item before it, on the row).
 */
export function keptAlone(kept: ClaimedJobs, request: SettleRequest): boolean {
  const ids = new Set<string>();
  for (const item of request.items) {
    if (item.settlement.kind === 'expire' || ids.has(item.id) || !kept.has(item.id)) return false;
    ids.add(item.id);
  }
  return true;
}

/**
 * A batch `keptAlone` accepted, decided on the kept copies and written by
 * `write` (one statement on its own). Returns the results and the indexes
 * of items whose copy the guard refused, to be settled on their rows
 * (settleRefusedTx); their results are filled then.
 */
export async function settleKept(
  write: Writer,
  request: SettleRequest,
  kept: ClaimedJobs,
): Promise<{ results: SettleResult[]; refused: number[] }> {
  const results: SettleResult[] = new Array(request.items.length);
  const basis = keptCopies(kept, request.items);
  const refused = await settleOn(write, request, [...request.items.keys()], basis, results);
  return { results, refused };
}

/** Writes decided jobs guarded on their basis, with their events; returns the ids written. */
export type Writer = (
  jobs: JobRecord[],
  basis: Map<string, Basis>,
  events: EventRow[],
) => Promise<Set<string>>;

/** The rows settleJobs returns: one per job written, plus one with id NULL when it notified. */
type WrittenRow = { id: string | null; xid: string | null };

function writtenIds(rows: WrittenRow[]): Set<string> {
  return new Set(rows.flatMap((row) => (row.id === null ? [] : [row.id])));
}

/** The Writer of a transaction: settleJobs in it, noting its xid. */
function txWriter(tx: Tx): Writer {
  return async (jobs, basis, events) => {
    if (jobs.length === 0) return new Set();
    const written = await tx.client.query<WrittenRow>(
      tx.sql.settleJobs,
      settleParams(jobs, basis, events, tx.channel),
    );
    // Nothing else in this transaction writes: no row written, nothing to lose at COMMIT.
    const xid = written.rows.find((row) => row.xid !== null)?.xid;
    if (xid !== undefined) tx.state.xid = xid;
    return writtenIds(written.rows);
  };
}

/**
 * The Writer of settleKept: settleJobs on its own, in autocommit mode
 * (decision 0083). Lost after it was sent: the statement is atomic, so it
 * committed if any job shows what it wrote (its decided state and rev);
 * if none does it did not commit (or every row was refused), and it is
 * sent again, guarded as before.
 */
export function autocommitWriter(db: Database, sql: Statements, channel: string): Writer {
  return async (jobs, basis, events) => {
    if (jobs.length === 0) return new Set();
    return db.autocommit<WrittenRow, Set<string>>(
      sql.settleJobs,
      settleParams(jobs, basis, events, channel),
      writtenIds,
      async () => {
        const { rows } = await db.query<{ doc: JobRecord }>(sql.jobsByIds, [
          jobs.map((job) => job.id),
        ]);
        const stored = new Map(rows.map((row) => [row.doc.id, row.doc]));
        const written = new Set(
          jobs
            .filter((job) => {
              const now = stored.get(job.id);
              return now !== undefined && now.rev === job.rev && now.state === job.state;
            })
            .map((job) => job.id),
        );
        return written.size > 0 ? written : undefined;
      },
    );
  };
}

/**
 * Decides items `indexes` of the request on `basis` (per id), writes the
 * decided jobs with one guarded `settleJobs`, and fills their `results`.
 * Per id, items are decided in order, each against the previous one's
 * result (one row written per id: the last decision). Returns the indexes
 * of the items decided on a copy whose job was not written (the guard
 * refused the copy, or every decision on it did): their results stand
 * only once decided again on the row.
 */
async function settleOn(
  write: Writer,
  request: SettleRequest,
  indexes: number[],
  basis: Map<string, Basis>,
  results: SettleResult[],
): Promise<number[]> {
  const { items, now } = request;
  const random = request.random ?? Math.random;
  // Per id, the record as last decided: a later item of the same id is
  // decided against it, and it is what gets written (one row per id).
  const decided = new Map<string, JobRecord>();
  const events: EventRow[] = [];
  for (const index of indexes) {
    const item = items[index]!;
    const read = basis.get(item.id);
    if (read === undefined) {
      results[index] = { status: 'not_found' };
      continue;
    }
    if (read.doc.workflow_id) {
      // Settled by the engine through commit(), with the workflow's advancement.
      results[index] = { status: 'workflow', job: read.doc };
      continue;
    }
    const job = decided.get(item.id) ?? read.doc;
    try {
      const decision = decideSettlement(job, item, now, random);
      decided.set(item.id, decision.job);
      results[index] = { status: 'settled', job: decision.job };
      events.push(...taggedEvents(item.id, decision.events));
    } catch (error) {
      // A fence or state refusal (409), or another tenant's job (404, as the engine reports it).
      if (
        !(error instanceof OjsError) ||
        (error.code !== 'conflict' && error.code !== 'not_found')
      ) {
        throw error;
      }
      results[index] = { status: 'conflict', error, job };
    }
  }
  const written = await write([...decided.values()], basis, events);
  const refused: number[] = [];
  for (const index of indexes) {
    const id = items[index]!.id;
    const read = basis.get(id);
    if (read === undefined || written.has(id)) continue;
    if (read.kept) {
      refused.push(index);
    } else if (results[index]!.status === 'settled') {
      const error = conflict(`Job '${id}' changed while it was being settled.`, { job_id: id });
      results[index] = { status: 'conflict', error, job: read.doc };
    }
  }
  return refused;
}

/** A row of settleJobs: a decided job's columns, its document patch and its guard. */
export type SettleRow = Record<string, unknown> & {
  id: string;
  doc_set: Record<string, unknown>;
  doc_unset: string[];
};

/**
 * The values of settleJobs: the events' documents, the channel, the rows
 * as one array per column (SETTLE_COLUMNS), the events' columns (`events`:
 * rows.ts eventValues).
 */
export function settleValues(rows: SettleRow[], events: string[], channel: string): unknown[] {
  const [eventDocs, ...eventColumns] = events;
  const values: unknown[] = [eventDocs, channel];
  for (const [name] of SETTLE_COLUMNS) {
    if (name === 'doc_set') values.push(JSON.stringify(rows.map((row) => row.doc_set)));
    else if (name === 'doc_unset')
      values.push(arrayLiteral(rows.map((row) => keysLiteral(row.doc_unset))));
    else values.push(columnLiteral(rows, name));
  }
  values.push(...eventColumns);
  return values;
}

/** The values of settleJobs: the decided rows, guarded on their basis, the events, the channel. */
function settleParams(
  jobs: JobRecord[],
  basis: Map<string, Basis>,
  events: EventRow[],
  channel: string,
): unknown[] {
  const rows: SettleRow[] = jobs
    .map((job) => {
      const read = basis.get(job.id)!;
      // A settlement never changes the tenant: its column is not sent.
      const { doc: _whole, tenant_id: _tenant, ...columns } = jobRow(job);
      return { ...columns, ...docPatch(read.doc, job), ...guard(read) };
    })
    // Rows not read first are locked by the UPDATE itself, in the order
    // sent: the id order `lockJobs` uses, so that two batches over the same
    // jobs lock them alike (a deadlock would only be retried, but waits).
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return settleValues(rows, eventValues(events), channel);
}

export async function extendLeasesTx(
  tx: Tx,
  items: LeaseItem[],
  now: number,
): Promise<LeaseResult[]> {
  const stored = await lockJobs(
    tx,
    items.map((item) => item.id),
  );
  const extended = new Map<string, JobRecord>();
  const results: LeaseResult[] = [];
  const events: EventRow[] = [];
  for (const item of items) {
    const job = extended.get(item.id) ?? stored.get(item.id)?.doc ?? null;
    const decision = decideLeaseExtension(job, item, now);
    results.push(decision.result);
    if (decision.result.status === 'extended') {
      extended.set(item.id, decision.result.job);
      events.push(...taggedEvents(item.id, decision.events));
    }
  }
  if (extended.size === 0) {
    tx.state.xid = null; // read and locked only
    return results;
  }
  const rows = [...extended.values()].map((job) => {
    const read = stored.get(job.id)!;
    return {
      id: job.id,
      lease_until: job.lease_until,
      deadline: jobColumns(job).deadline,
      // No rev: a heartbeat neither depends on it nor changes it (a lease is not a revision).
      expect_state: 'active',
      expect_attempt: read.doc.attempt,
      expect_worker_id: read.worker_id,
    };
  });
  const written = await tx.client.query<{ id: string; xid: string }>(tx.sql.extendLeases, [
    JSON.stringify(rows),
    ...eventValues(events),
  ]);
  tx.state.xid = written.rows[0]?.xid ?? null;
  if (written.rows.length === rows.length) return results;
  const ids = new Set(written.rows.map((row) => row.id));
  return items.map((item, index) => {
    const result = results[index]!;
    if (result.status !== 'extended' || ids.has(item.id)) return result;
    return { status: 'not_held', job: stored.get(item.id)!.doc };
  });
}
