/**
 * Primitives of a write transaction: what every body needs to store jobs,
 * events and wake-ups on the connection it runs on.
 */
import { type JobRecord, type OjsEvent, toIso } from '@ojs/core';
import type { TxState } from './database.ts';
import { eventRow, eventValues, jobRow, toNumber } from './rows.ts';
import type { Session, Statements } from './statements.ts';

/** One running transaction: its connection, the store's SQL and NOTIFY channel. */
export interface Tx {
  client: Session;
  sql: Statements;
  schema: string;
  channel: string;
  /** Set `state.xid` from a write statement's txid_current() to spare the lookup before COMMIT. */
  state: TxState;
}

export interface JobWriteRow {
  job: JobRecord;
  expectRev: number;
}

export function hasDuplicates(values: string[]): boolean {
  return new Set(values).size !== values.length;
}

/** NOTIFY the jobs-available channel; delivered only if the transaction commits. */
export async function notifyAvailable(tx: Tx): Promise<void> {
  await tx.client.query(tx.sql.notify, [tx.channel, '']);
}

/** Appends events in order (the last statement before COMMIT in every body). */
export async function appendEvents(tx: Tx, events: readonly OjsEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx.client.query(tx.sql.insertEvents, eventValues(events.map(eventRow)));
}

/** `count` fresh job sequence values, ascending. */
export async function nextSeqs(tx: Tx, count: number): Promise<number[]> {
  if (count === 0) return [];
  const { rows } = await tx.client.query<{ seq: string }>(tx.sql.nextSeqs, [count]);
  return rows.map((row) => toNumber(row.seq)).sort((a, b) => a - b);
}

/** Inserts fully formed jobs (seq set) and registers their queues. */
export async function insertRows(tx: Tx, jobs: JobRecord[], now: number): Promise<void> {
  if (jobs.length === 0) return;
  await tx.client.query(tx.sql.insertJobs, [JSON.stringify(jobs.map(jobRow))]);
  await tx.client.query(tx.sql.ensureQueues, [
    [...new Set(jobs.map((job) => job.queue))],
    toIso(now),
  ]);
}

/** Guarded updates (rev = expectRev); true when every one applied. */
export async function updateRows(tx: Tx, writes: JobWriteRow[]): Promise<boolean> {
  if (writes.length === 0) return true;
  const row = (write: JobWriteRow) => ({ ...jobRow(write.job), expect_rev: write.expectRev });
  if (hasDuplicates(writes.map((w) => w.job.id))) {
    // Several writes of one job: apply them in order, each guarded on the previous.
    for (const write of writes) {
      const result = await tx.client.query(tx.sql.updateJobs, [JSON.stringify([row(write)])]);
      if (result.rowCount !== 1) return false;
    }
    return true;
  }
  const result = await tx.client.query(tx.sql.updateJobs, [JSON.stringify(writes.map(row))]);
  return result.rowCount === writes.length;
}
