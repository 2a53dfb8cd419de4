/**
 * Records as the scripts answer them: a job is its document (the JSON core
 * wrote) plus the FIFO seq the store gave it, kept beside the document in
 * the job's hash because it is assigned inside the insert's script.
 */
import type { JobRecord, QueueInfo } from '@ojs/core';

export type Reply = unknown;

/** A job from its seq and document; null when the job does not exist. */
export function parseJob(seq: Reply, doc: Reply): JobRecord | null {
  if (doc === null || doc === undefined) return null;
  const job = JSON.parse(String(doc)) as JobRecord;
  job.seq = Number(seq);
  return job;
}

/** Jobs from a flat reply of (seq, doc) pairs, missing ones left out. */
export function parseJobPairs(flat: Reply[]): (JobRecord | null)[] {
  const jobs: (JobRecord | null)[] = [];
  for (let i = 0; i < flat.length; i += 2) jobs.push(parseJob(flat[i], flat[i + 1]));
  return jobs;
}

/** Jobs from a flat reply of (id, seq, doc) triples (read.lua `range`). */
export function parseJobTriples(flat: Reply[]): JobRecord[] {
  const jobs: JobRecord[] = [];
  for (let i = 0; i < flat.length; i += 3) {
    const job = parseJob(flat[i + 1], flat[i + 2]);
    // A member whose job is gone (never: indexes change with the job) is skipped.
    if (job !== null) jobs.push(job);
  }
  return jobs;
}

/** A queue from its hash fields (read.lua `queue`, `queues`): created_at, paused, conc, rate, period. */
export function queueInfo(name: string, fields: Reply[]): QueueInfo {
  const [createdAt, paused, conc, rate, period] = fields.map((v) => String(v ?? ''));
  const info: QueueInfo = { name, paused: paused === '1' };
  if (createdAt !== '') info.created_at = createdAt;
  if (conc !== '') info.concurrency = Number(conc);
  if (rate !== '') info.rate_limit = { limit: Number(rate), period_ms: Number(period) };
  return info;
}
