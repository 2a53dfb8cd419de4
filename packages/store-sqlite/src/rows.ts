/**
 * Rows of the SQLite store: the job columns derived from the JobRecord (the
 * `doc` column stays the source of truth; the others exist for indexes and
 * guards) in SQLite's types, and the conversions of the rows node:sqlite
 * returns.
 */
import {
  type ClaimRequest,
  type CronRecord,
  conflict,
  type JobRecord,
  jobColumns,
  type OjsError,
  type QueueInfo,
  type SettingRecord,
  tenantColumn,
} from '@ojs/core';

/** A row as node:sqlite returns it. */
export type Row = Record<string, unknown>;

/** A value bound to a statement parameter. */
export type Value = string | number | null;

/** The values of statements.ts SET_LIFECYCLE, in its order (state .. doc). */
export function lifecycleValues(job: JobRecord): Value[] {
  const derived = jobColumns(job);
  return [
    derived.state,
    derived.attempt,
    derived.rev,
    derived.run_at,
    derived.deadline,
    derived.finished_at,
    derived.dead_letter ? 1 : 0,
    derived.worker_id,
    JSON.stringify(job),
  ];
}

/** The values of statements.ts SET_JOB, in its order: every column but id and seq. */
export function setValues(job: JobRecord): Value[] {
  const derived = jobColumns(job);
  return [
    derived.queue,
    derived.type,
    derived.state,
    derived.priority,
    derived.attempt,
    derived.rev,
    derived.run_at,
    derived.deadline,
    derived.expires_at,
    derived.finished_at,
    derived.dead_letter ? 1 : 0,
    derived.unique_key,
    derived.workflow_id,
    derived.rate_key,
    derived.version_num,
    derived.worker_id,
    JSON.stringify(job),
  ];
}

/** The values of statements.ts INSERT_JOB, in its column order. */
export function insertValues(job: JobRecord, seq: number): Value[] {
  // The tenant is written once: a job never changes tenant (SET_JOB leaves it).
  return [job.id, seq, ...setValues(job), tenantColumn(job)];
}

/** Version routing as JSON rows for the claim query: one row per (type, interval). */
export function handlerFilter(request: ClaimRequest): string | null {
  if (request.handlers === undefined) return null;
  return JSON.stringify(
    request.handlers.flatMap((h) =>
      h.range.any
        ? [{ type: h.type, any: 1 }]
        : h.range.intervals.map(([lo, hi]) => ({ type: h.type, any: 0, lo, hi })),
    ),
  );
}

export function settingRecord(row: Row): SettingRecord {
  return {
    namespace: row.namespace as string,
    key: row.key as string,
    value: JSON.parse(row.doc as string) as Record<string, unknown>,
    rev: row.rev as number,
    updated_at: row.updated_at as string,
  };
}

export function cronColumns(cron: CronRecord): [number, number, number | null, string] {
  return [
    cron.rev,
    cron.enabled ? 1 : 0,
    cron.enabled ? (cron.next_run_ms ?? null) : null,
    JSON.stringify(cron),
  ];
}

export function queueInfo(row: Row): QueueInfo {
  const info: QueueInfo = {
    name: row.name as string,
    paused: row.paused === 1,
    created_at: row.created_at as string,
  };
  if (typeof row.concurrency === 'number') info.concurrency = row.concurrency;
  if (typeof row.rate_limit === 'number') {
    info.rate_limit = { limit: row.rate_limit, period_ms: row.rate_period_ms as number };
  }
  return info;
}

/** A guard that failed in the statement itself (the lease changed under the decision). */
export function staleLease(job: JobRecord): OjsError {
  return conflict(`Job '${job.id}' changed while it was being settled.`, { job_id: job.id });
}

export const parseJob = (row: Row | undefined): JobRecord | null =>
  row === undefined ? null : (JSON.parse(row.doc as string) as JobRecord);
