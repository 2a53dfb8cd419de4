/**
 * Records as the Redis functions store and answer them.
 *
 * A job is one string (`j:<id>`): `rev \x1f state \x1f seq \x1f base
 * \x1f life`. Its JSON document (what core wrote) is kept in two parts:
 * base, the fields an enqueue sets and no transition changes (BASE_FIELDS:
 * type, queue, args, meta, retry, ...), and life, the rest (state, attempt,
 * timestamps, lease, errors, result, ...). A transition whose base fields
 * are the very values of the record it was decided on (core's transitions
 * copy the record and change lifecycle fields) sends only life and the
 * apply function keeps the stored base: a claim or an ACK sends about a
 * third of the document. Reading merges the two. The FIFO seq is given
 * inside the insert's function. JSON never holds a raw \x1f.
 *
 * Events are stored without what every event of this server has in common
 * (specversion, source, datacontenttype) and rebuilt in makeEvent's key
 * order when read; any other event is stored as it is.
 */
import { EVENT_SOURCE, type JobRecord, type OjsEvent, type QueueInfo } from '@ojs/core';

export type Reply = unknown;

/** Fields an enqueue sets that transitions carry over unchanged. */
const BASE_FIELDS = new Set([
  'id',
  'type',
  'queue',
  'args',
  'meta',
  'priority',
  'retry',
  'timeout_ms',
  'visibility_timeout_ms',
  'tags',
  'schema',
  'created_at',
  'enqueued_at',
  'scheduled_at',
  'expires_at',
  'expires_at_ms',
  'workflow_id',
  'workflow_step',
  'workflow_step_id',
  'workflow_callback',
  'unique',
  'unique_key',
  'rate_limit',
  'extensions',
  'routed_version',
  'version',
  'version_num',
]);

/**
 * The stored parts of `job`: its base fields (or '' when they are those of
 * `before`, which is then not rewritten) and its lifecycle fields.
 */
export function splitJob(job: JobRecord, before: JobRecord | null): { base: string; life: string } {
  const base: Record<string, unknown> = {};
  const life: Record<string, unknown> = {};
  const fields = job as unknown as Record<string, unknown>;
  const old = before as unknown as Record<string, unknown> | null;
  let same = old !== null;
  for (const key in fields) {
    const value = fields[key];
    if (value === undefined) continue;
    if (BASE_FIELDS.has(key)) {
      base[key] = value;
      if (same && old![key] !== value) same = false;
    } else {
      life[key] = value;
    }
  }
  if (same) {
    // A base field the new record dropped must be dropped from `d` too.
    for (const key in old!) {
      if (BASE_FIELDS.has(key) && old![key] !== undefined && !(key in base)) same = false;
    }
  }
  return { base: same ? '' : JSON.stringify(base), life: JSON.stringify(life) };
}

/** A stored job's seq and document parts. */
export function splitStored(raw: string): { seq: number; base: string; life: string } {
  const a = raw.indexOf('\x1f');
  const b = raw.indexOf('\x1f', a + 1);
  const c = raw.indexOf('\x1f', b + 1);
  const d = raw.indexOf('\x1f', c + 1);
  return { seq: Number(raw.slice(b + 1, c)), base: raw.slice(c + 1, d), life: raw.slice(d + 1) };
}

/** A job from its seq and document parts. */
export function mergeJob(seq: number, base: string, life: string): JobRecord {
  const job = JSON.parse(base) as JobRecord;
  Object.assign(job, JSON.parse(life));
  job.seq = seq;
  return job;
}

/** A job as stored; null when it does not exist. */
export function parseJob(raw: Reply): JobRecord | null {
  if (raw === null || raw === undefined || raw === false) return null;
  const { seq, base, life } = splitStored(String(raw));
  return mergeJob(seq, base, life);
}

/** Jobs from a reply of stored jobs, null for missing ones. */
export function parseJobs(flat: Reply[]): (JobRecord | null)[] {
  return flat.map(parseJob);
}

/** Jobs from a flat reply of (id, stored job) pairs (read.lua `range`). */
export function parseJobPairs(flat: Reply[]): JobRecord[] {
  const jobs: JobRecord[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const job = parseJob(flat[i + 1]);
    // A member whose job is gone (never: indexes change with the job) is skipped.
    if (job !== null) jobs.push(job);
  }
  return jobs;
}

/** An event as stored: the envelope without this server's constant fields, or all of it. */
export function encodeEvent(event: OjsEvent): string {
  const keys = Object.keys(event);
  const standard =
    event.specversion === '1.0' &&
    event.source === EVENT_SOURCE &&
    event.datacontenttype === 'application/json' &&
    keys.every((k) => STANDARD_EVENT_KEYS.has(k));
  if (!standard) return JSON.stringify(event);
  return JSON.stringify(
    event.subject === undefined
      ? [event.type, event.time, event.data]
      : [event.type, event.time, event.data, event.subject],
  );
}

const STANDARD_EVENT_KEYS = new Set([
  'specversion',
  'id',
  'type',
  'source',
  'time',
  'datacontenttype',
  'data',
  'subject',
]);

export function decodeEvent(id: string, stored: string): OjsEvent {
  const parsed = JSON.parse(stored) as
    | OjsEvent
    | [string, string, Record<string, unknown>, string?];
  if (!Array.isArray(parsed)) return parsed;
  const [type, time, data, subject] = parsed;
  const event: OjsEvent = {
    specversion: '1.0',
    id,
    type,
    source: EVENT_SOURCE,
    time,
    datacontenttype: 'application/json',
    data,
  };
  if (subject !== undefined) event.subject = subject;
  return event;
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
