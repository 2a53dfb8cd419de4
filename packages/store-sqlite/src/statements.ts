/**
 * The SQL of the SQLite store. Each statement says what it reads
 * (parameters: `?` in order, or `:name` bound from an object) and what it
 * guards. The store prepares each text once and caches it by its text
 * (SqliteStore#stmt), so these constants are also the cache keys.
 *
 * Locking: every write runs inside the group's BEGIN IMMEDIATE transaction
 * (group-commit.ts), which holds the file's write lock until COMMIT, so
 * there are no row locks here: one writer at a time, even across processes
 * sharing the file. Correctness under that lock comes from the guards in
 * the statements themselves (`rev = :expect_rev`, the lease as read),
 * compared with the row count a write reports.
 */
import { DEFAULT_TENANT, type EventFilter } from '@ojs/core';

// ------------------------------------------------------------ connection

/**
 * How long to wait for another process's write lock. This and the PRAGMAs
 * below run once per connection, before the migrations.
 */
export const busyTimeout = (ms: number) => `PRAGMA busy_timeout = ${ms}`;
/** Files only (not :memory:): readers never block the writer, and a COMMIT only appends. */
export const JOURNAL_WAL = 'PRAGMA journal_mode = WAL';
/** 'FULL' (durable on power loss) or 'NORMAL' (faster, WAL-safe on crash). */
export const synchronous = (mode: 'FULL' | 'NORMAL') => `PRAGMA synchronous = ${mode}`;
export const FOREIGN_KEYS_ON = 'PRAGMA foreign_keys = ON';
/**
 * Statement journals (a statement that fires triggers, e.g. the job
 * counters', keeps one to undo itself alone) in memory, not in temp files:
 * with files, the counter triggers doubled the store's cost per job.
 */
export const TEMP_STORE_MEMORY = 'PRAGMA temp_store = MEMORY';
/**
 * The auto-checkpoint threshold (pages) of the store's own connection when
 * a checkpointer thread runs (checkpointer.ts): a safety net only.
 */
export const walAutocheckpoint = (pages: number) => `PRAGMA wal_autocheckpoint = ${pages}`;
export const PING = 'SELECT 1';

// ------------------------------------------------------------ job sequence

/**
 * The last FIFO sequence number handed out. Read once per group: the store
 * counts on from it in memory while the group is open (it holds the write
 * lock, so no other connection can take numbers in between).
 */
export const READ_JOB_SEQ = "SELECT value FROM ojs_counters WHERE name = 'job_seq'";
/** ? = the last number handed out; written back once per group, just before its COMMIT. */
export const WRITE_JOB_SEQ = "UPDATE ojs_counters SET value = ? WHERE name = 'job_seq'";

// ------------------------------------------------------------ jobs

/** ? = id. */
export const GET_JOB = 'SELECT doc FROM ojs_jobs WHERE id = ?';

/*
 * The job writes bind their values by position (rows.ts insertValues,
 * setValues, lifecycleValues): node:sqlite looks up every named parameter
 * by its name on each run, ~0.5 µs a parameter, which made binding the
 * largest part of a claim's or a settlement's UPDATE (12 named values:
 * 7.4 µs against 1.5 µs by position, measured).
 */

/**
 * ? = the values of rows.ts insertValues (its column order). Fails on a
 * duplicate id (the primary key); insertJobs looks for one first.
 */
export const INSERT_JOB = `INSERT INTO ojs_jobs
  (id, seq, queue, type, state, priority, attempt, rev, run_at, deadline, expires_at, finished_at,
   dead_letter, unique_key, workflow_id, rate_key, version_num, worker_id, doc, tenant_id)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** Every column but id and seq, in the order of rows.ts setValues: any change of a job. */
const SET_JOB = `SET queue = ?, type = ?, state = ?, priority = ?, attempt = ?, rev = ?,
  run_at = ?, deadline = ?, expires_at = ?, finished_at = ?, dead_letter = ?, unique_key = ?,
  workflow_id = ?, rate_key = ?, version_num = ?, worker_id = ?, doc = ?`;

/**
 * Any change of a job. ? = rows.ts setValues, then id, then the expected
 * rev. Guards: `WHERE id = ? AND rev = ?` (the caller compares the row
 * count: 0 means the job changed since it was read).
 */
export const UPDATE_JOB = `UPDATE ojs_jobs ${SET_JOB} WHERE id = ? AND rev = ?`;

/**
 * The lifecycle columns only, in the order of rows.ts lifecycleValues.
 * SQLite rewrites the entry of every index whose column is named in SET,
 * changed or not, so the hot transitions (claim, settle), which never
 * change queue, type, priority, expiry, unique key, workflow, rate key or
 * version, name only what they change.
 */
const SET_LIFECYCLE = `SET state = ?, attempt = ?, rev = ?, run_at = ?, deadline = ?,
  finished_at = ?, dead_letter = ?, worker_id = ?, doc = ?`;

/**
 * A claim: guarded on the job still being available at the rev read.
 * ? = rows.ts lifecycleValues, then id, then the expected rev.
 * Guards: `WHERE id = ? AND state = 'available' AND rev = ?`.
 */
export const CLAIM_JOB = `UPDATE ojs_jobs ${SET_LIFECYCLE}
  WHERE id = ? AND state = 'available' AND rev = ?`;

/**
 * A settlement (ACK, FAIL, expiry): guarded on the lease as read, in the
 * statement. ? = rows.ts lifecycleValues, then id, the expected attempt,
 * the expected rev and the expected worker id (null when the job had none).
 * Guards: `WHERE id = ? AND state = 'active' AND attempt = ? AND rev = ?
 * AND worker_id IS ?` (IS: null-safe).
 */
export const SETTLE_JOB = `UPDATE ojs_jobs ${SET_LIFECYCLE}
  WHERE id = ? AND state = 'active' AND attempt = ? AND rev = ? AND worker_id IS ?`;

/**
 * A heartbeat: the lease only; rev stays (a lease is not a revision).
 * ? = deadline, doc, then id and the guard as for SETTLE_JOB (expected
 * attempt, rev, worker id).
 */
export const EXTEND_LEASE = `UPDATE ojs_jobs SET deadline = ?, doc = ?
  WHERE id = ? AND state = 'active' AND attempt = ? AND rev = ? AND worker_id IS ?`;

/**
 * ? = id, ? = expected rev. Guards: `rev = ?` (no row returned: the job
 * changed or is gone). Returns the deleted job's queue and state (its count).
 */
export const DELETE_JOB = 'DELETE FROM ojs_jobs WHERE id = ? AND rev = ? RETURNING queue, state';

/** ? = id, ? = rev. The queue and state of a job at that rev (for the counts of UPDATE_JOB). */
export const JOB_QUEUE_STATE = 'SELECT queue, state FROM ojs_jobs WHERE id = ? AND rev = ?';

/**
 * ? = now (ms). Unstarted jobs past expires_at, for expire(); at most 1000
 * per pass. Workflow jobs are left to EXPIRING_WORKFLOW_JOBS.
 */
export const EXPIRING_JOBS = `SELECT doc FROM ojs_jobs INDEXED BY ojs_jobs_expiry
  WHERE expires_at IS NOT NULL AND expires_at <= ?
  AND state IN ('scheduled', 'available', 'pending', 'retryable') AND workflow_id IS NULL
  LIMIT 1000`;

/**
 * ? = now (ms); the limit is written in (withLimit). Unstarted workflow
 * jobs past expires_at: the engine expires them with their workflow's
 * advancement.
 */
export const EXPIRING_WORKFLOW_JOBS = `SELECT doc FROM ojs_jobs INDEXED BY ojs_jobs_expiry
  WHERE expires_at IS NOT NULL AND expires_at <= ?
  AND state IN ('scheduled', 'available', 'pending', 'retryable') AND workflow_id IS NOT NULL
  ORDER BY expires_at`;

/*
 * The background scans (expiry, promotion, lease reaping) run every 100 ms
 * and name their partial index: without statistics the planner preferred
 * (state, seq) from migration 006 and walked every available job on each
 * pass (15 ms per pass with 40,000 queued, stalling the store's thread).
 */

/** ? = now (ms). Due scheduled/retryable jobs, for promote(); at most 1000 per pass. */
export const DUE_JOBS = `SELECT doc FROM ojs_jobs INDEXED BY ojs_jobs_due
  WHERE state IN ('scheduled', 'retryable') AND run_at <= ?
  ORDER BY run_at LIMIT 1000`;

/**
 * ? = now (ms); the limit is written in (withLimit). Active jobs whose
 * deadline (lease or execution timeout) has passed.
 */
export const EXPIRED_LEASES =
  "SELECT doc FROM ojs_jobs INDEXED BY ojs_jobs_lease WHERE state = 'active' AND deadline <= ? ORDER BY deadline";

/** The dead-letter filter: all queues, or (? = queue) one. */
const deadLetter = (byQueue: boolean) =>
  byQueue ? 'dead_letter = 1 AND queue = ?' : 'dead_letter = 1';
/** [? = queue when byQueue]. */
export const deadLetterCount = (byQueue: boolean) =>
  `SELECT count(*) AS n FROM ojs_jobs WHERE ${deadLetter(byQueue)}`;
/** [? = queue when byQueue], ? = limit, ? = offset. Newest first. */
export const deadLetterPage = (byQueue: boolean) =>
  `SELECT doc FROM ojs_jobs WHERE ${deadLetter(byQueue)} ORDER BY seq DESC LIMIT ? OFFSET ?`;

/** ? = workflow id. The workflow's jobs in insertion order. */
export const WORKFLOW_JOBS = 'SELECT doc FROM ojs_jobs WHERE workflow_id = ? ORDER BY seq';

/** ? = queue. Jobs per state, from the counters (migration 007; empty states: n = 0 or no row). */
export const QUEUE_STATE_COUNTS = 'SELECT state, n FROM ojs_job_counts WHERE queue = ?';
/** ? = queue, ? = state (completed / discarded), ? = since (ms). Counted in the finished index (migration 011). */
export const FINISHED_SINCE =
  'SELECT count(*) AS n FROM ojs_jobs WHERE queue = ? AND state = ? AND finished_at >= ?';

// ------------------------------------------------------------ claim

/** ? = queue. Its pause flag and limits (no row: a queue never configured). */
export const QUEUE_LIMITS =
  'SELECT paused, concurrency, rate_limit, rate_period_ms FROM ojs_queues WHERE name = ?';
/**
 * ? = queue. Its active jobs as counted in ojs_job_counts (no row: none),
 * against the queue's concurrency limit; the claim adds the store's
 * pending deltas (job-counts.ts). Active jobs are in no index by queue
 * (migration 009).
 */
export const ACTIVE_IN_QUEUE = "SELECT n FROM ojs_job_counts WHERE queue = ? AND state = 'active'";
/** ? = rate key. Its active jobs, against the key's concurrency limit. */
export const ACTIVE_WITH_KEY =
  "SELECT count(*) AS n FROM ojs_jobs WHERE rate_key = ? AND state = 'active'";

/**
 * The next page of claim candidates of one queue, in claim order (priority
 * desc, then FIFO; the ojs_jobs_claim index), after the cursor.
 * Numbered parameters (bound by position, see INSERT_JOB): ?1 the queue;
 * ?2 now (ms; expired jobs are left to the promoter); ?3 priority and ?4
 * seq, the cursor (the last row of the previous page); ?5 blocked, a JSON
 * array of rate keys found at their limit, left out so one key's backlog
 * cannot hide eligible jobs behind it; ?6 handlers, null (no version
 * routing) or a JSON array of {type, any, lo, hi} (rows.ts handlerFilter):
 * a job is admitted when a handler of its type admits its version
 * (unversioned jobs: any); ?7 the tenant (ClaimRequest.tenant) or null
 * for every tenant. The limit is written in (claimPage, withLimit).
 * Reads only: each candidate is then claimed with CLAIM_JOB, guarded.
 */
const CLAIM_PAGE = `SELECT doc FROM ojs_jobs WHERE queue = ?1 AND state = 'available'
    AND (expires_at IS NULL OR expires_at > ?2)
    AND (priority < ?3 OR (priority = ?3 AND seq > ?4))
    AND (rate_key IS NULL OR rate_key NOT IN (SELECT value FROM json_each(?5)))
    AND (?6 IS NULL OR EXISTS (
      SELECT 1 FROM json_each(?6) AS h
       WHERE h.value ->> 'type' = ojs_jobs.type
         AND (ojs_jobs.version_num IS NULL OR h.value ->> 'any' = 1
              OR ((h.value ->> 'lo' IS NULL OR ojs_jobs.version_num >= h.value ->> 'lo')
                  AND (h.value ->> 'hi' IS NULL OR ojs_jobs.version_num < h.value ->> 'hi')))))
    AND (?7 IS NULL OR tenant_id IS nullif(?7, '${DEFAULT_TENANT}'))
  ORDER BY priority DESC, seq ASC`;

/**
 * CLAIM_PAGE of a named tenant (?7): `tenant_id = ?7` lets the planner walk
 * the partial index ojs_jobs_tenant (tenant, queue, state, priority, seq)
 * instead of the queue's every available job.
 */
const CLAIM_PAGE_TENANT = CLAIM_PAGE.replace(
  `(?7 IS NULL OR tenant_id IS nullif(?7, '${DEFAULT_TENANT}'))`,
  'tenant_id = ?7',
);

/** CLAIM_PAGE (or CLAIM_PAGE_TENANT, `tenant`) with its limit. */
export function claimPage(tenant: boolean, limit: number): string {
  return withLimit(tenant ? CLAIM_PAGE_TENANT : CLAIM_PAGE, limit);
}

/**
 * CLAIM_PAGE without the blocked keys and the handler filter, for the
 * common claim that has neither: ?1 queue, ?2 now, ?3 priority and ?4 seq
 * (the cursor); the limit is written in (claimPagePlain). The full
 * statement builds its json_each lists on every run even when they are
 * empty: 25 against 10 us for a page of an empty queue.
 */
const CLAIM_PAGE_PLAIN = `SELECT doc FROM ojs_jobs WHERE queue = ?1 AND state = 'available'
    AND (expires_at IS NULL OR expires_at > ?2)
    AND (priority < ?3 OR (priority = ?3 AND seq > ?4))
  ORDER BY priority DESC, seq ASC`;

/** CLAIM_PAGE_PLAIN with its limit. */
export function claimPagePlain(limit: number): string {
  return withLimit(CLAIM_PAGE_PLAIN, limit);
}

/** The largest LIMIT withLimit writes in (the claim's page is at most a fetch's 1000). */
export const MAX_LITERAL_LIMIT = 10_000;

const limitedTexts = new Map<string, Map<number, string>>();

/**
 * `text` with `LIMIT n` written in as a literal, never bound. SQLite's
 * planner reads a bound LIMIT's value, so binding one marks the statement
 * expired and every run re-prepares it (parse and plan again): an empty
 * queue's claim page took 10.4 µs bound against 1.6 µs literal, and the
 * lease reaper's and the expiry's scans (LIMIT ?, ten times a second)
 * were 8 % of an idle server's CPU (perf, re-prepares under their step).
 * Each (text, limit) is built once, so the store, which caches its
 * statements by text, prepares it once; the limits used are few (a
 * fetch's count, the scans' constant batch).
 */
export function withLimit(text: string, limit: number): string {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LITERAL_LIMIT) {
    throw new Error(`bad LIMIT ${limit}: an integer from 1 to ${MAX_LITERAL_LIMIT}`);
  }
  let texts = limitedTexts.get(text);
  if (texts === undefined) {
    texts = new Map();
    limitedTexts.set(text, texts);
  }
  let limited = texts.get(limit);
  if (limited === undefined) {
    limited = `${text} LIMIT ${limit}`;
    texts.set(limit, limited);
  }
  return limited;
}

/** ? = tenant. Its active jobs (tenant concurrency, served by ojs_jobs_tenant). */
export const ACTIVE_IN_TENANT = `SELECT count(*) AS n FROM ojs_jobs
  WHERE tenant_id = ? AND state = 'active'`;

/** ? = rate key. Its current fixed window (no row: never started). */
export const RATE_WINDOW = 'SELECT window_start, count FROM ojs_rate_windows WHERE key = ?';

/**
 * Counts one start against a rate key's fixed window. Named parameters:
 * :key, :now (ms), :period (ms). A window starts at the first start after
 * the previous one ended: at or past window_start + :period the window
 * restarts at :now with count 1, otherwise count + 1. Run in the claim's
 * transaction right after RATE_WINDOW allowed it, so check and take are
 * one atomic step.
 */
export const TAKE_RATE = `INSERT INTO ojs_rate_windows (key, window_start, count)
  VALUES (:key, :now, 1)
  ON CONFLICT (key) DO UPDATE SET
    window_start = CASE WHEN :now >= window_start + :period THEN :now ELSE window_start END,
    count = CASE WHEN :now >= window_start + :period THEN 1 ELSE count + 1 END`;

// ------------------------------------------------------------ unique keys

/** ? = key. Which job holds the key and since when (ms). */
export const UNIQUE_KEY_HOLDER = 'SELECT job_id, locked_at FROM ojs_unique_locks WHERE key = ?';
/**
 * ? = key, ? = job id, ? = now (ms). Points the key at the new job, whether
 * or not it was held (the caller has judged the holder in core first).
 */
export const TAKE_UNIQUE_KEY =
  'INSERT INTO ojs_unique_locks (key, job_id, locked_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, locked_at = excluded.locked_at';
/** ? = job id. Releases the keys of a deleted job. */
export const RELEASE_UNIQUE_KEYS = 'DELETE FROM ojs_unique_locks WHERE job_id = ?';

// ------------------------------------------------------------ queues

/** ? = name, ? = created_at (ISO). Creates the queue unpaused unless it exists. */
export const ENSURE_QUEUE =
  'INSERT OR IGNORE INTO ojs_queues (name, paused, created_at) VALUES (?, 0, ?)';
export const LIST_QUEUES = 'SELECT * FROM ojs_queues ORDER BY name';
/** ? = name. */
export const GET_QUEUE = 'SELECT * FROM ojs_queues WHERE name = ?';
/** ? = name. */
export const QUEUE_PAUSED = 'SELECT paused FROM ojs_queues WHERE name = ?';
/** ? = name. */
export const QUEUE_CREATED_AT = 'SELECT created_at FROM ojs_queues WHERE name = ?';
/** ? = concurrency (or null: none), ? = name. */
export const SET_QUEUE_CONCURRENCY = 'UPDATE ojs_queues SET concurrency = ? WHERE name = ?';
/** ? = limit, ? = period (ms) (both null: none), ? = name. */
export const SET_QUEUE_RATE_LIMIT =
  'UPDATE ojs_queues SET rate_limit = ?, rate_period_ms = ? WHERE name = ?';
/** ? = paused (0 / 1), ? = paused_at (ISO or null), ? = name. */
export const SET_QUEUE_PAUSED = 'UPDATE ojs_queues SET paused = ?, paused_at = ? WHERE name = ?';

// ------------------------------------------------------------ workflows

/** ? = id. */
export const GET_WORKFLOW = 'SELECT doc FROM ojs_workflows WHERE id = ?';
/** ? = id, ? = rev, ? = doc. Fails on a duplicate id. */
export const INSERT_WORKFLOW = 'INSERT INTO ojs_workflows (id, rev, doc) VALUES (?, ?, ?)';
/**
 * ? = rev, ? = doc, ? = id, ? = expected rev.
 * Guards: `rev = ?` (the caller compares the row count).
 */
export const UPDATE_WORKFLOW = 'UPDATE ojs_workflows SET rev = ?, doc = ? WHERE id = ? AND rev = ?';

// ------------------------------------------------------------ crons

/** ? = name. The stored rev, which a replace bumps. */
export const CRON_REV = 'SELECT rev FROM ojs_crons WHERE name = ?';
/** ? = name. */
export const GET_CRON = 'SELECT doc FROM ojs_crons WHERE name = ?';
export const LIST_CRONS = 'SELECT doc FROM ojs_crons ORDER BY name';
/** ? = name. The deleted cron's document, if there was one. */
export const DELETE_CRON = 'DELETE FROM ojs_crons WHERE name = ? RETURNING doc';
/** ? = now (ms). Enabled crons due to fire, soonest first (the ojs_crons_due index). */
export const DUE_CRONS =
  'SELECT doc FROM ojs_crons WHERE enabled = 1 AND next_run_ms <= ? ORDER BY next_run_ms';
/**
 * ? = rev, ? = enabled, ? = next_run_ms, ? = doc (rows.ts cronColumns), ? = name.
 * Insert or replace by name; the caller has read the rev (CRON_REV) in the
 * same transaction and passes it bumped on a replace.
 */
export const UPSERT_CRON = `INSERT INTO ojs_crons (rev, enabled, next_run_ms, doc, name)
  VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET rev = excluded.rev, enabled = excluded.enabled,
    next_run_ms = excluded.next_run_ms, doc = excluded.doc`;
/**
 * ? = rev, ? = enabled, ? = next_run_ms, ? = doc (rows.ts cronColumns),
 * ? = name, ? = expected rev. Guards: `rev = ?` (the caller compares the row count).
 */
export const UPDATE_CRON =
  'UPDATE ojs_crons SET rev = ?, enabled = ?, next_run_ms = ?, doc = ? WHERE name = ? AND rev = ?';

// ------------------------------------------------------------ settings

/** ? = namespace, ? = key. */
export const GET_SETTING = 'SELECT * FROM ojs_settings WHERE namespace = ? AND key = ?';
/** ? = namespace, ? = prefix length, ? = prefix. In key order. */
export const LIST_SETTINGS =
  'SELECT * FROM ojs_settings WHERE namespace = ? AND substr(key, 1, ?) = ? ORDER BY key';
/** ? = namespace, ? = key, ? = rev, ? = updated_at, ? = doc. Creates only when the key is free. */
export const CREATE_SETTING =
  'INSERT INTO ojs_settings (namespace, key, rev, updated_at, doc) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING';
/**
 * ? = rev, ? = updated_at, ? = doc, ? = namespace, ? = key, ? = expected rev.
 * Guards: `rev = ?` (the caller compares the row count).
 */
export const UPDATE_SETTING =
  'UPDATE ojs_settings SET rev = ?, updated_at = ?, doc = ? WHERE namespace = ? AND key = ? AND rev = ?';
/** ? = namespace, ? = key. */
export const DELETE_SETTING = 'DELETE FROM ojs_settings WHERE namespace = ? AND key = ?';

// ------------------------------------------------------------ events

/*
 * A row of the log holds one event or a run of per-job events (migration
 * 014): seq is the position of its first event, n how many it holds
 * (positions seq .. seq + n - 1). A row of one event has its id and type;
 * a row of several has doc = their JSON array, id NULL, and type, queue and
 * job_type set only where all its events share them.
 */

/** The position the next appended event takes (no row: 1). */
export const NEXT_EVENT_SEQ = 'SELECT seq + n AS next FROM ojs_events ORDER BY seq DESC LIMIT 1';

/** ? = seq, ? = id, ? = type, ? = queue, ? = job type (filter columns), ? = doc: one event. */
export const INSERT_EVENT =
  'INSERT INTO ojs_events (seq, n, id, type, queue, job_type, doc) VALUES (?, 1, ?, ?, ?, ?, ?)';

/**
 * ? = seq, ? = n, ? = the type, queue and job type all the events share
 * (each null where they differ), ? = doc (their JSON array): a run of per-job events.
 */
export const INSERT_EVENT_RUN =
  'INSERT INTO ojs_events (seq, n, type, queue, job_type, doc) VALUES (?, ?, ?, ?, ?, ?)';

/**
 * The job events every job writes, left out of the type index (migration
 * 010) and the only ones a row of several events holds (migration 014): a
 * filter on them finds a match every few rows in seq order.
 */
export const PER_JOB_EVENT_TYPES = ['job.enqueued', 'job.started', 'job.completed'] as const;
/** The condition of the partial type index, repeated verbatim so a query may use it. */
const RARE_EVENT_TYPE = `type NOT IN (${PER_JOB_EVENT_TYPES.map((t) => `'${t}'`).join(', ')})`;

/** ? = a position. The row holding it, if any (the last row starting at or before it). */
export const EVENT_ROW_AT =
  'SELECT seq, n, id, doc FROM ojs_events WHERE seq <= ? ORDER BY seq DESC LIMIT 1';

/**
 * ?1 = id, ?2 = `"id":` and the id as JSON (a row of several events
 * holds it in its doc), ?3 = below this seq. The newest row that may hold
 * the event with that id, searched from the newest event back (no index on
 * id, migration 010: a cursor is usually recent); the caller checks the
 * row's events, since the text may also appear inside an event's data.
 */
export const EVENT_ROW_WITH_ID = `SELECT seq, n, id, doc FROM ojs_events
  WHERE seq < ?3 AND (id = ?1 OR (n > 1 AND instr(doc, ?2) > 0))
  ORDER BY seq DESC LIMIT 1`;

/**
 * The rows that may hold events matching `filter` (each present field adds
 * its clause, ANDed), in seq order (newest first with `newestFirst`), from
 * the row at seq `fromSeq` on, a page of `?` rows after a moving bound; and
 * the parameters of the statement but the last two: the bound (for seq
 * order: rows after it; newest first: rows before it) and the page size.
 * A row of one event matches exactly; a row of several matches where a
 * shared column says it may, and its events are then checked one by one
 * (SqliteStore listEvents). The text varies with the filter (one `?` per
 * listed value), so the store prepares it per call.
 */
export function listEventRows(
  filter: EventFilter,
  fromSeq: number,
): { sql: string; params: (string | number)[] } {
  const clauses: string[] = [];
  const params: (string | number)[] = [];
  const within = (column: string, values: string[] | undefined, exact: boolean) => {
    if (values === undefined || values.length === 0) return;
    const list = `${column} IN (${values.map(() => '?').join(', ')})`;
    clauses.push(exact ? list : `(${list} OR (n > 1 AND ${column} IS NULL))`);
    params.push(...values);
  };
  const rareOnly =
    filter.types !== undefined &&
    filter.types.length > 0 &&
    filter.types.every((type) => !(PER_JOB_EVENT_TYPES as readonly string[]).includes(type));
  // Only rare types asked for: rows of one event only, all in the partial type index.
  within('type', filter.types, rareOnly);
  if (rareOnly) clauses.push(RARE_EVENT_TYPE);
  within('queue', filter.queues, false);
  within('job_type', filter.jobTypes, false);
  if (fromSeq > 0) {
    clauses.push('seq >= ?');
    params.push(fromSeq);
  }
  if (filter.subject !== undefined) {
    clauses.push(
      "(CASE WHEN n = 1 THEN json_extract(doc, '$.subject') = ? ELSE instr(doc, ?) > 0 END)",
    );
    params.push(filter.subject, `"subject":${JSON.stringify(filter.subject)}`);
  }
  clauses.push(filter.newestFirst ? 'seq < ?' : 'seq > ?');
  return {
    sql: `SELECT seq, n, doc FROM ojs_events WHERE ${clauses.join(' AND ')} ORDER BY seq${filter.newestFirst ? ' DESC' : ''} LIMIT ?`,
    params,
  };
}

/** The oldest row (its first position). */
export const FIRST_EVENT_ROW = 'SELECT seq FROM ojs_events ORDER BY seq LIMIT 1';
/** ? = the last position pruned. Deletes the rows wholly at or before it; returns their event counts. */
export const DELETE_EVENT_ROWS =
  'DELETE FROM ojs_events WHERE seq <= ?1 AND seq + n - 1 <= ?1 RETURNING n';
/**
 * ? = seq, n, id, type, queue, job type, doc, then the row's old seq: what
 * is left of a row whose oldest events were pruned (its first position
 * moves up; the other events keep theirs).
 */
export const REWRITE_EVENT_ROW =
  'UPDATE ojs_events SET seq = ?, n = ?, id = ?, type = ?, queue = ?, job_type = ?, doc = ? WHERE seq = ?';

// ------------------------------------------------------------ admin

/** The tables reset() empties (ojs_counters stays: sequence numbers are never reused). */
export const RESET_TABLES = [
  'ojs_jobs',
  // After the jobs: their delete triggers have brought every count to 0.
  'ojs_job_counts',
  'ojs_queues',
  'ojs_events',
  'ojs_unique_locks',
  'ojs_rate_windows',
  'ojs_workflows',
  'ojs_crons',
  'ojs_settings',
  'ojs_webhook_deliveries',
] as const;
/** Empties one table of RESET_TABLES. */
export const deleteAll = (table: (typeof RESET_TABLES)[number]) => `DELETE FROM ${table}`;

/** Changes whenever another connection commits to the file (wake-watch.ts). */
export const DATA_VERSION = 'PRAGMA data_version';
/** Rows this connection has changed since it opened. */
export const TOTAL_CHANGES = 'SELECT total_changes() AS n';

// ------------------------------------------------------------ webhooks

/** ? = id, subscription_id, tenant_id, state, due_at, settled_at, rev, doc. An id already stored is left as it is. */
export const INSERT_WEBHOOK_DELIVERY =
  'INSERT INTO ojs_webhook_deliveries (id, subscription_id, tenant_id, state, due_at, settled_at, rev, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING';
/** ? = now; the limit is written in (withLimit). Soonest first. */
export const DUE_WEBHOOK_DELIVERIES =
  'SELECT doc FROM ojs_webhook_deliveries WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at';
/** ? = state, due_at, settled_at, rev, doc, id, expected rev. */
export const UPDATE_WEBHOOK_DELIVERY =
  'UPDATE ojs_webhook_deliveries SET state = ?, due_at = ?, settled_at = ?, rev = ?, doc = ? WHERE id = ? AND rev = ?';
/** ? = delivered before, ? = dead before, ? = limit. */
export const PRUNE_WEBHOOK_DELIVERIES = `DELETE FROM ojs_webhook_deliveries WHERE seq IN (
  SELECT seq FROM ojs_webhook_deliveries WHERE state = 'delivered' AND settled_at < ?1
  UNION ALL
  SELECT seq FROM ojs_webhook_deliveries WHERE state = 'dead' AND settled_at < ?2
  LIMIT ?3)`;
export const GET_WEBHOOK_DELIVERY = 'SELECT doc FROM ojs_webhook_deliveries WHERE id = ?';
export const WEBHOOK_DELIVERY_SEQ = 'SELECT seq FROM ojs_webhook_deliveries WHERE id = ?';

/** The delivery log, newest first, with the filter's conditions. */
export function listWebhookDeliveries(filter: {
  subscriptionId?: string;
  state?: string;
  tenantId?: string;
  beforeSeq?: number;
  limit: number;
}): { sql: string; params: (string | number)[] } {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (filter.subscriptionId !== undefined) {
    where.push('subscription_id = ?');
    params.push(filter.subscriptionId);
  }
  if (filter.state !== undefined) {
    where.push('state = ?');
    params.push(filter.state);
  }
  if (filter.tenantId !== undefined) {
    where.push('tenant_id = ?');
    params.push(filter.tenantId);
  }
  if (filter.beforeSeq !== undefined) {
    where.push('seq < ?');
    params.push(filter.beforeSeq);
  }
  params.push(filter.limit);
  const clause = where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`;
  return {
    sql: `SELECT doc FROM ojs_webhook_deliveries${clause} ORDER BY seq DESC LIMIT ?`,
    params,
  };
}
