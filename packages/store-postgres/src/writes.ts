/**
 * The bodies of the write transactions other than inserts: commit (guarded
 * updates, deletes, workflow and cron records, inserts, events, all or
 * nothing) and the time-driven promotion / expiry of jobs.
 */
import { type Commit, expire, type JobRecord, jobEvent, promote, toIso } from '@ojs/core';
import { Rollback } from './database.ts';
import { commitInsertsTx } from './inserts.ts';
import { cronRow } from './rows.ts';
import { appendEvents, hasDuplicates, notifyAvailable, type Tx, updateRows } from './tx.ts';

/** Jobs handled per promoteDueJobs call (per kind: expired, promoted). */
const PROMOTE_BATCH = 1000;

/** The body of commit: throws Rollback(false) as soon as a guard fails. */
export async function commitTx(tx: Tx, commit: Commit, now: number): Promise<boolean> {
  const { client, sql } = tx;
  const updates = commit.updates ?? [];
  if (!(await updateRows(tx, updates))) throw new Rollback(false);

  const deletes = (commit.deletes ?? []).map((d) => ({ id: d.id, expect_rev: d.expectRev }));
  if (deletes.length > 0) {
    const result = await client.query(sql.deleteJobs, [JSON.stringify(deletes)]);
    if (hasDuplicates(deletes.map((d) => d.id)) || result.rowCount !== deletes.length) {
      throw new Rollback(false);
    }
    await client.query(sql.releaseUniqueKeys, [deletes.map((d) => d.id)]);
  }

  const workflows = (commit.workflowUpdates ?? []).map((w) => ({
    id: w.workflow.id,
    rev: w.workflow.rev,
    expect_rev: w.expectRev,
    doc: w.workflow,
  }));
  if (workflows.length > 0) {
    const result = await client.query(sql.updateWorkflows, [JSON.stringify(workflows)]);
    if (hasDuplicates(workflows.map((w) => w.id)) || result.rowCount !== workflows.length) {
      throw new Rollback(false);
    }
  }

  const crons = (commit.cronUpdates ?? []).map((c) => ({
    ...cronRow(c.cron),
    expect_rev: c.expectRev,
  }));
  if (crons.length > 0) {
    const result = await client.query(sql.updateCrons, [JSON.stringify(crons)]);
    if (hasDuplicates(crons.map((c) => c.name)) || result.rowCount !== crons.length) {
      throw new Rollback(false);
    }
  }

  const newWorkflows = (commit.workflowInserts ?? []).map((w) => ({
    id: w.id,
    rev: w.rev,
    doc: w,
  }));
  if (newWorkflows.length > 0) {
    await client.query(sql.insertWorkflows, [JSON.stringify(newWorkflows)]);
  }

  const { batch, skipped } = await commitInsertsTx(tx, commit.inserts ?? [], now);
  await appendEvents(tx, [
    ...batch.events,
    ...(commit.events ?? []).filter((e) => e.subject === undefined || !skipped.has(e.subject)),
  ]);
  if (updates.some((u) => u.job.state === 'available') || batch.hasAvailable) {
    await notifyAvailable(tx);
  }
  return true;
}

/**
 * Due scheduled/retryable jobs -> available (core promote); unstarted jobs
 * past expires_at -> discarded (core expire, job.expired events). Rows are
 * locked with SKIP LOCKED, so promoters of several processes share the work.
 */
export async function promoteDueJobsTx(tx: Tx, now: number): Promise<number> {
  const { client, sql } = tx;
  const expiring = (await client.query<{ doc: JobRecord }>(sql.lockExpiring, [now, PROMOTE_BATCH]))
    .rows;
  const expired = expiring.map((row) => ({ job: expire(row.doc, now), expectRev: row.doc.rev }));
  if (!(await updateRows(tx, expired))) {
    throw new Error('An expiring job changed while it was locked.');
  }
  const due = (await client.query<{ doc: JobRecord }>(sql.lockDue, [now, PROMOTE_BATCH])).rows;
  const promoted = due.map((row) => ({ job: promote(row.doc), expectRev: row.doc.rev }));
  if (!(await updateRows(tx, promoted))) {
    throw new Error('A due job changed while it was locked.');
  }
  await appendEvents(
    tx,
    expired.map(({ job }, index) =>
      jobEvent(
        'job.expired',
        job,
        { created_at: expiring[index]!.doc.created_at, expired_at: toIso(now) },
        now,
      ),
    ),
  );
  if (promoted.length > 0) await notifyAvailable(tx);
  return promoted.length;
}
