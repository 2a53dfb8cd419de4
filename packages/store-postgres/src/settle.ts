/**
 * The ACK / FAIL / lease-expiry and heartbeat hot path, batched (DESIGN §4
 * "Batched by default"). A batch is one transaction with two statements:
 *   1. `lockJobs` reads every job of the batch as stored and locks it
 *      (FOR UPDATE, in id order);
 *   2. core decides each item in memory (decideSettlement /
 *      decideLeaseExtension), and ONE statement (`settleJobs` /
 *      `extendLeases`) writes every decided job, guarded in its WHERE on
 *      what was read (state active, attempt, rev, worker_id), together with
 *      the events of the jobs it wrote (and the NOTIFY of a requeue).
 * Items are independent: a refused item is reported and the others commit.
 * The rows are locked, so the guard cannot fail in practice; it is there so
 * that a write never lands on a record other than the one decided on, and
 * an item whose row failed it is reported as a conflict.
 */
import {
  conflict,
  decideLeaseExtension,
  decideSettlement,
  type JobRecord,
  jobColumns,
  type LeaseItem,
  type LeaseResult,
  OjsError,
  type OjsEvent,
  type SettleRequest,
  type SettleResult,
} from '@ojs/core';
import { docPatch, eventRow, jobRow } from './rows.ts';
import type { Tx } from './tx.ts';

/** A job as read under the row lock: the document and the guard columns. */
interface Locked {
  doc: JobRecord;
  /** The worker_id column as stored (the guard compares the column, not the document). */
  worker_id: string | null;
}

async function lockJobs(tx: Tx, ids: string[]): Promise<Map<string, Locked>> {
  const { rows } = await tx.client.query<Locked>(tx.sql.lockJobs, [
    JSON.stringify([...new Set(ids)]),
  ]);
  return new Map(rows.map((row) => [row.doc.id, row]));
}

/** Event rows tagged with their job, so the write inserts only the events of jobs it wrote. */
function taggedEvents(jobId: string, events: OjsEvent[]): Record<string, unknown>[] {
  return events.map((event) => ({ ...eventRow(event), job_id: jobId }));
}

/**
 * The guard of a settlement: the job still active (only active jobs are
 * settled), on the attempt, revision and lease holder as read.
 */
function guard(read: Locked) {
  return {
    expect_state: 'active',
    expect_attempt: read.doc.attempt,
    expect_rev: read.doc.rev,
    expect_worker_id: read.worker_id,
  };
}

export async function settleJobsTx(tx: Tx, request: SettleRequest): Promise<SettleResult[]> {
  const { items, now } = request;
  const random = request.random ?? Math.random;
  const stored = await lockJobs(
    tx,
    items.map((item) => item.id),
  );
  // Per id, the record as last decided: a later item of the same id is
  // decided against it, and it is what gets written (one row per id).
  const decided = new Map<string, JobRecord>();
  const results: SettleResult[] = [];
  const events: Record<string, unknown>[] = [];
  for (const item of items) {
    const read = stored.get(item.id);
    if (read === undefined) {
      results.push({ status: 'not_found' });
      continue;
    }
    if (read.doc.workflow_id) {
      // Settled by the engine through commit(), with the workflow's advancement.
      results.push({ status: 'workflow', job: read.doc });
      continue;
    }
    const job = decided.get(item.id) ?? read.doc;
    try {
      const decision = decideSettlement(job, item, now, random);
      decided.set(item.id, decision.job);
      results.push({ status: 'settled', job: decision.job });
      events.push(...taggedEvents(item.id, decision.events));
    } catch (error) {
      if (!(error instanceof OjsError) || error.code !== 'conflict') throw error;
      results.push({ status: 'conflict', error, job });
    }
  }
  if (decided.size === 0) {
    tx.state.xid = null; // read and locked only
    return results;
  }
  const rows = [...decided.values()].map((job) => {
    const read = stored.get(job.id)!;
    const { doc: _whole, ...columns } = jobRow(job);
    return { ...columns, ...docPatch(read.doc, job), ...guard(read) };
  });
  const written = await tx.client.query<{ id: string | null; xid: string | null }>(
    tx.sql.settleJobs,
    [JSON.stringify(rows), JSON.stringify(events), tx.channel],
  );
  // Nothing else in this transaction writes: no row written, nothing to lose at COMMIT.
  tx.state.xid = written.rows.find((row) => row.xid !== null)?.xid ?? null;
  const ids = new Set(written.rows.map((row) => row.id));
  if (rows.every((row) => ids.has(row.id))) return results;
  return items.map((item, index) => {
    const result = results[index]!;
    if (result.status !== 'settled' || ids.has(item.id)) return result;
    const error = conflict(`Job '${item.id}' changed while it was being settled.`, {
      job_id: item.id,
    });
    return { status: 'conflict', error, job: stored.get(item.id)!.doc };
  });
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
  const events: Record<string, unknown>[] = [];
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
    JSON.stringify(events),
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
