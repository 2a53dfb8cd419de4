/**
 * The SQL of the PostgreSQL store, schema-qualified once per store. Each
 * statement says what it reads ($n) and what it locks. Batches travel as
 * one jsonb parameter (an array of row objects) unpacked with
 * jsonb_to_recordset, so a batch of any size is one statement.
 *
 * Isolation is READ COMMITTED throughout: guards (`rev = $n`) and row locks
 * (FOR UPDATE [SKIP LOCKED], unique-lock rows, advisory locks) carry the
 * correctness, never snapshot timing.
 */

import { DEFAULT_TENANT } from '@ojs/core';
import pg from 'pg';
import { quoteSchema } from './names.ts';

const JOB_COLUMNS = `id text, seq bigint, queue text, type text, state text, priority integer,
  attempt integer, rev integer, run_at double precision, deadline double precision,
  expires_at double precision, finished_at double precision, dead_letter boolean,
  unique_key text, workflow_id text, rate_key text, version_num double precision, worker_id text,
  tenant_id text, doc jsonb`;

/**
 * Version routing (ClaimRequest.handlers) over the jobs row `j`: $n is null
 * (no routing) or a jsonb array of {type, any, lo, hi}; a job is admitted
 * when a handler of its type admits its version (unversioned jobs: any).
 */
const admitted = (n: number, j: string) => `($${n}::jsonb IS NULL OR EXISTS (
          SELECT 1 FROM jsonb_to_recordset($${n}::jsonb)
                   AS h(type text, "any" boolean, lo double precision, hi double precision)
           WHERE h.type = ${j}.type
             AND (${j}.version_num IS NULL OR h."any"
                  OR ((h.lo IS NULL OR ${j}.version_num >= h.lo)
                      AND (h.hi IS NULL OR ${j}.version_num < h.hi)))))`;

/**
 * The claim as core `claim()` computes it, in SQL over the row `j` being
 * updated (its values before the update). Parameters: $1 now (ms), $2
 * started_at (ISO of $1), $3 visibility timeout override (ms or NULL), $4
 * worker id (or NULL). state active, attempt + 1, rev + 1, started_at,
 * worker_id set or removed, lease_until = now + (override ??
 * visibility_timeout_ms), timeout_at = now + timeout_ms when the job has
 * one; run_at, next_attempt_at and cancel_requested removed. The
 * store-testkit compares the result with core `claim()` field by field. The
 * new fields are joined first (small objects), so the document is rebuilt
 * once by `||`, not twice; the removal (another rebuild of the whole
 * document, about 1.2 µs) runs only when the document has one of the keys
 * removed (`?|`, a lookup), which a job claimed for the first time seldom
 * has (decision 0117).
 */
const LEASE_UNTIL = `$1::numeric + coalesce($3::numeric, (j.doc->>'visibility_timeout_ms')::numeric)`;
const TIMEOUT_AT = `CASE WHEN jsonb_typeof(j.doc->'timeout_ms') = 'number'
                         THEN $1::numeric + (j.doc->>'timeout_ms')::numeric END`;
const CLAIM_REMOVES = `'{run_at,next_attempt_at,cancel_requested,worker_id}'::text[]`;
const CLAIMED_DOC = `(CASE WHEN j.doc ?| ${CLAIM_REMOVES} THEN j.doc - ${CLAIM_REMOVES} ELSE j.doc END)
    || (jsonb_build_object(
          'state', 'active',
          'attempt', j.attempt + 1,
          'rev', j.rev + 1,
          'started_at', $2::text,
          'lease_until', ${LEASE_UNTIL})
        || jsonb_strip_nulls(jsonb_build_object('worker_id', $4::text, 'timeout_at', ${TIMEOUT_AT})))`;

/**
 * The claim's CTE `picked` (the ids it locked) and `claimSet`, the UPDATE
 * that turns exactly those jobs active, computing each one's claimed
 * document from its own row, and returns it with the transaction's xid (so
 * the lost-COMMIT check needs no round trip of its own).
 *
 * Its shape is chosen so that one generic plan serves every call (the claim
 * connections force generic plans, decision 0106): the picked ids reach the
 * UPDATE as an array (`id = ANY(ARRAY(...))`), which the planner always
 * looks up in the primary key, whatever it guesses of `LIMIT $6`. (Joined
 * to the picked rows instead, the generic plan guessed a tenth of the queue
 * and hashed the whole table.) The rows are locked by `picked` until
 * COMMIT; a job another transaction changed after this statement's
 * snapshot but before `picked` locked it is updated in its locked version
 * (PostgreSQL re-reads it and re-checks the id), as `picked` accepted it.
 */
const claimCtes = (picked: string) => `picked AS MATERIALIZED (${picked})`;

const claimSet = (s: string) => `UPDATE ${s}.jobs j
   SET state = 'active',
       attempt = j.attempt + 1,
       rev = j.rev + 1,
       run_at = NULL,
       worker_id = $4::text,
       deadline = least((${LEASE_UNTIL})::double precision, (${TIMEOUT_AT})::double precision),
       doc = ${CLAIMED_DOC}
 WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
RETURNING j.doc, txid_current()::text AS xid`;

const claimUpdate = (s: string, picked: string) => `WITH ${claimCtes(picked)}
${claimSet(s)}`;

/**
 * The job.started event of a claimed job, as core `jobEvent('job.started',
 * job, {worker_id, attempt}, now)` builds it, over the claimed row `o`:
 * $2 the time (ISO of now), $9 the event source, `id` the event id.
 * trace_id: meta.trace_id unless absent or null, else meta.traceparent when
 * present (JS `??`); tenant_id: meta.tenant_id when a non-empty string. The
 * store-testkit compares it with core's.
 */
const startedEvent = (id: string) => `jsonb_build_object(
         'specversion', '1.0', 'id', ${id}, 'type', 'job.started', 'source', $9::text,
         'time', $2::text, 'datacontenttype', 'application/json', 'subject', o.doc->'id',
         'data', jsonb_build_object(
           'job_id', o.doc->'id', 'job_type', o.doc->'type', 'queue', o.doc->'queue',
           'state', o.doc->'state', 'worker_id', coalesce(o.doc->'worker_id', 'null'::jsonb),
           'attempt', o.doc->'attempt')
           || CASE
                WHEN o.doc->'meta' ? 'trace_id' AND o.doc->'meta'->'trace_id' <> 'null'::jsonb
                  THEN jsonb_build_object('trace_id', o.doc->'meta'->'trace_id')
                WHEN o.doc->'meta' ? 'traceparent'
                  THEN jsonb_build_object('trace_id', o.doc->'meta'->'traceparent')
                ELSE '{}'::jsonb
              END
           || CASE
                WHEN jsonb_typeof(o.doc->'meta'->'tenant_id') = 'string'
                     AND o.doc->'meta'->>'tenant_id' <> ''
                  THEN jsonb_build_object('tenant_id', o.doc->'meta'->'tenant_id')
                ELSE '{}'::jsonb
              END)`;

/**
 * Two CTEs: `events_in` (the events `source` yields: columns ord, g, id,
 * type, queue, job_type, gtype, gqueue, gjob_type, doc) and `logged`,
 * which inserts them as rows of the log in ord order (decision 0113):
 * the events sharing a `g` (a run of per-job events, rows.ts
 * eventRowsJson) are one row whose `docs` array holds them, an event alone
 * in its `g` a row of one with its own columns. Seqs are assigned in the
 * ORDER BY's order. The columns come from the group's aggregates: the
 * shared ones (g...) are equal across a run, and the min of a group of one
 * is its only event's value (joining each run back to its first event
 * copied every document once more; decision 0125). The array is built by array_agg, which copies each
 * jsonb value: jsonb_agg re-encoded every document and, with the grouping
 * done in SQL, made a row of 50 events cost more than 50 rows did.
 */
const eventRunCtes = (s: string, source: string) => `events_in AS MATERIALIZED (${source}),
      logged AS (
        INSERT INTO ${s}.events (id, type, queue, job_type, n, doc, docs)
        SELECT CASE WHEN r.n = 1 THEN r.id END,
               CASE WHEN r.n = 1 THEN r.type ELSE r.gtype END,
               CASE WHEN r.n = 1 THEN r.queue ELSE r.gqueue END,
               CASE WHEN r.n = 1 THEN r.job_type ELSE r.gjob_type END,
               r.n,
               CASE WHEN r.n = 1 THEN r.docs[1] END,
               CASE WHEN r.n > 1 THEN r.docs END
          FROM (SELECT g, count(*)::integer AS n, min(id) AS id, min(type) AS type,
                       min(queue) AS queue, min(job_type) AS job_type, min(gtype) AS gtype,
                       min(gqueue) AS gqueue, min(gjob_type) AS gjob_type,
                       array_agg(doc ORDER BY ord) AS docs
                  FROM events_in GROUP BY g) r
         ORDER BY r.g)`;

/** Unstarted jobs (not of a workflow) past expires_at at $1: promotion expires them. */
const EXPIRING = `expires_at IS NOT NULL AND expires_at <= $1
  AND state IN ('scheduled', 'available', 'pending', 'retryable') AND workflow_id IS NULL`;
/** Scheduled and retryable jobs due at $1: promotion makes them available. */
const DUE = `state IN ('scheduled', 'retryable') AND run_at <= $1`;

/**
 * The columns of a write's event rows (rows.ts eventValues) after their
 * documents: one array parameter each, as the job columns (decision 0117).
 */
export const EVENT_COLUMNS = [
  ['g', 'integer'],
  ['id', 'text'],
  ['type', 'text'],
  ['queue', 'text'],
  ['job_type', 'text'],
  ['gtype', 'text'],
  ['gqueue', 'text'],
  ['gjob_type', 'text'],
  ['job_id', 'text'],
] as const;

/**
 * eventRunCtes of the event rows of a write (rows.ts eventValues): $`docs`
 * the jsonb array of their documents, then EVENT_COLUMNS from
 * $`columns` on; filtered by `where` (over `e`).
 */
const eventRowCtes = (s: string, docs: number, columns: number, where = '') =>
  eventRunCtes(
    s,
    `SELECT e.ord, e.g, e.id, e.type, e.queue, e.job_type, e.gtype, e.gqueue, e.gjob_type, e.doc
       FROM ROWS FROM (jsonb_array_elements($${docs}::jsonb),
              ${EVENT_COLUMNS.map(([, type], i) => `unnest($${columns + i}::${type}[])`).join(', ')})
            WITH ORDINALITY AS e(doc, ${EVENT_COLUMNS.map(([name]) => name).join(', ')}, ord) ${where}`,
  );

/**
 * The CTEs of a claim with its job.started events in the same statement
 * (one round trip fewer): $8 holds at least as many fresh event ids as jobs
 * can be claimed, handed out in claim order, which is also the events'
 * order. `ordered` holds the claimed documents.
 *
 * A claim's events are always one run (all job.started, all of queue $5:
 * the pick is of that queue), so `logged` writes them as eventRunCtes
 * would, without its grouping: one aggregate over the claimed rows gives
 * the row of the log (decision 0113), a row of one event with its own
 * columns when one job was claimed, none when none was. (eventRunCtes
 * materialized the events, sorted them by run, aggregated and joined them
 * back to the run's first event, each step copying the documents.)
 */
const claimLoggedCtes = (s: string, picked: string) => `${claimCtes(picked)},
  updated AS (${claimSet(s).replace('RETURNING j.doc,', 'RETURNING j.doc, j.priority, j.seq,')}),
  ordered AS (SELECT doc, xid, row_number() OVER (ORDER BY priority DESC, seq) AS rn FROM updated),
  logged AS (
    INSERT INTO ${s}.events (id, type, queue, job_type, n, doc, docs)
    SELECT CASE WHEN r.n = 1 THEN ($8::text[])[1] END, 'job.started', $5::text,
           CASE WHEN r.n = 1 THEN r.job_type END, r.n,
           CASE WHEN r.n = 1 THEN r.docs[1] END,
           CASE WHEN r.n > 1 THEN r.docs END
      FROM (SELECT count(*)::integer AS n, min(o.doc->>'type') AS job_type,
                   array_agg(${startedEvent('($8::text[])[o.rn]')} ORDER BY o.rn) AS docs
              FROM ordered o HAVING count(*) > 0) r)`;

const claimUpdateLogged = (s: string, picked: string) => `WITH ${claimLoggedCtes(s, picked)}
SELECT doc, xid FROM ordered ORDER BY rn`;

/**
 * claimUpdateLogged for one queue ($5) that is first checked to need no
 * transaction: not paused, no concurrency or rate limit, no rate-limited
 * job waiting (what `claimPlan` tells). Otherwise it claims nothing and
 * returns one row with a NULL doc, and the caller takes the transaction.
 */
const claimUpdateGated = (s: string) => `WITH gate AS MATERIALIZED (
    SELECT NOT EXISTS (SELECT 1 FROM ${s}.queues q WHERE q.name = $5
                         AND (q.paused OR q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL))
       AND NOT EXISTS (SELECT 1 FROM ${s}.jobs k WHERE k.queue = $5 AND k.state = 'available'
                         AND k.rate_key IS NOT NULL) AS open),
  ${claimLoggedCtes(s, pickQueue(s, '$5', '(SELECT open FROM gate) AND '))}
SELECT doc, xid FROM ordered UNION ALL SELECT NULL, NULL FROM gate WHERE NOT gate.open`;

/** The pick of an unlimited queue ($5 = its name): see `claimQueue`. `gate`: a condition first. */
const pickQueue = (s: string, queue: string, gate = '') => `SELECT id FROM ${s}.jobs j
        WHERE ${gate}queue = ${queue} AND state = 'available' AND rate_key IS NULL
          AND (expires_at IS NULL OR expires_at > ($1::numeric)::double precision)
          AND ${admitted(7, 'j')}
        ORDER BY priority DESC, seq
        LIMIT $6
        FOR UPDATE SKIP LOCKED`;

/** The claim plan of the requested queues (parameter `queues`, text[]): see `claimPlan`. */
const planOf = (s: string, queues: string) => `SELECT n.name, coalesce(q.paused, false) AS paused,
        q.concurrency, q.rate_limit, q.rate_period_ms,
        EXISTS (SELECT 1 FROM ${s}.jobs j
                 WHERE j.queue = n.name AND j.state = 'available' AND j.rate_key IS NOT NULL)
          AS keyed
      FROM unnest(${queues}::text[]) WITH ORDINALITY AS n(name, ord)
      LEFT JOIN ${s}.queues q ON q.name = n.name`;

/**
 * The columns core jobColumns derives that a write sets (a settlement
 * never changes the tenant: tenant_id only in ENQUEUE_COLUMNS).
 */
const WRITTEN_COLUMNS = [
  ['id', 'text'],
  ['queue', 'text'],
  ['type', 'text'],
  ['state', 'text'],
  ['priority', 'integer'],
  ['attempt', 'integer'],
  ['rev', 'integer'],
  ['run_at', 'double precision'],
  ['deadline', 'double precision'],
  ['expires_at', 'double precision'],
  ['finished_at', 'double precision'],
  ['dead_letter', 'boolean'],
  ['unique_key', 'text'],
  ['workflow_id', 'text'],
  ['rate_key', 'text'],
  ['version_num', 'double precision'],
  ['worker_id', 'text'],
] as const;

/**
 * The columns of an `enqueue` batch, in parameter order ($6 on), each one
 * array (rows.ts columnLiterals); the documents come as one jsonb array
 * ($1).
 */
export const ENQUEUE_COLUMNS = [...WRITTEN_COLUMNS, ['tenant_id', 'text']] as const;

/**
 * The columns of a settleJobs batch, in parameter order ($3 on): each one
 * array, read back as rows by `ROWS FROM (unnest(...), ...)`. doc_unset's
 * elements are text array literals (one per row: the keys removed);
 * doc_set is one jsonb array (its objects are JSON already: as elements of
 * a text literal every quote in them would be escaped).
 */
export const SETTLE_COLUMNS = [
  ...WRITTEN_COLUMNS,
  ['doc_set', 'jsonb'],
  ['doc_unset', 'text'],
  ['expect_state', 'text'],
  ['expect_attempt', 'integer'],
  ['expect_rev', 'integer'],
  ['expect_worker_id', 'text'],
] as const;

/** Every job count per (queue, state): the counters plus the deltas not yet folded into them. */
export const jobCounts = (s: string) => `(SELECT queue, state, n FROM ${s}.job_counts
      UNION ALL SELECT queue, state, delta FROM ${s}.job_count_deltas)`;

export function statements(schema: string) {
  const s = quoteSchema(schema);
  return {
    // ------------------------------------------------------------ maintenance
    /**
     * Planner statistics of the jobs table (postgres-store.ts #noteInserted
     * says when), of the columns conditions compare. Not `doc`: no plan
     * compares the document whole, and its statistics (every sampled
     * document read and sorted) were about half the ANALYZE's time; the
     * statistics on the error type (migration 009) and the rest come from
     * autovacuum's ANALYZE. Not `id`: its unique index tells the planner.
     */
    analyzeJobs: `ANALYZE ${s}.jobs (seq, queue, type, state, priority, attempt, rev, run_at,
      deadline, expires_at, finished_at, dead_letter, unique_key, workflow_id, rate_key,
      version_num, worker_id)`,

    // ------------------------------------------------------------ reads
    getJob: `SELECT doc FROM ${s}.jobs WHERE id = $1`,
    jobsByIds: `SELECT doc FROM ${s}.jobs WHERE id = ANY($1::text[])`,
    /** Locks the job row: the holder of a unique key about to be judged (and maybe replaced). */
    lockJob: `SELECT doc FROM ${s}.jobs WHERE id = $1 FOR UPDATE`,
    workflowJobs: `SELECT doc FROM ${s}.jobs WHERE workflow_id = $1 ORDER BY seq`,
    expiredLeases: `SELECT doc FROM ${s}.jobs WHERE state = 'active' AND deadline <= $1
      ORDER BY deadline LIMIT $2`,

    // ------------------------------------------------------------ inserts
    /** $1 = n: n fresh values of the job sequence, ascending. */
    nextSeqs: `SELECT nextval('${s}.job_seq')::text AS seq FROM generate_series(1, $1::integer)`,
    /** $1 = jsonb array of job rows (rows.ts jobRow). Fails on a duplicate id (jobs_pkey). */
    insertJobs: `INSERT INTO ${s}.jobs
      (id, seq, queue, type, state, priority, attempt, rev, run_at, deadline, expires_at,
       finished_at, dead_letter, unique_key, workflow_id, rate_key, version_num, worker_id,
       tenant_id, doc)
      SELECT id, seq, queue, type, state, priority, attempt, rev, run_at, deadline, expires_at,
             finished_at, dead_letter, unique_key, workflow_id, rate_key, version_num, worker_id,
             tenant_id, doc
        FROM jsonb_to_recordset($1::jsonb) AS r(${JOB_COLUMNS})`,
    /**
     * An enqueue in ONE statement, run on its own (autocommit): the fast
     * path of insertJobs when no job's unique key is held yet.
     * $1 = json array of the job documents (no seq) in order, $6... their
     * columns (core jobColumns), one array each (ENQUEUE_COLUMNS; decision
     * 0117: a jsonb array of row objects cost a third more to take apart);
     * $2 = the event rows' documents, their columns after the jobs' (rows.ts
     * eventValues); $3 = now (ms, the keys' locked_at);
     * $4 = created_at of new queues; $5 = the jobs-available channel.
     * Seqs: one nextval per job, handed out ascending in array order, and
     * written into doc.seq by appending `,"seq":N` to the document's JSON
     * text before its one jsonb parse ($1 is json, whose elements keep
     * their text): `doc || {seq}` rebuilt every document a second time.
     * Unique keys: a key row is created for every
     * job that has one (ON CONFLICT DO NOTHING waits for a concurrent
     * inserter of the key to finish); if any key was already there, or two
     * jobs of the batch share one, ojs_require aborts the whole statement
     * (SQLSTATE OJ001) and the caller takes the transaction path, which
     * judges the holder in core. A duplicate id aborts it too (jobs_pkey).
     * NOTIFY when an available job was inserted (sent at commit).
     * Committed without waiting for the WAL flush (`set_config` of
     * synchronous_commit for this transaction only, in `checked`, which the
     * result reads): the jobs are visible and announced at COMMIT, and the
     * caller runs `flushWal` before it tells anyone they are stored
     * (decision 0115).
     * Rows: (id, seq) per job, plus one with id NULL when notified.
     */
    enqueue: `WITH input AS MATERIALIZED (
        SELECT * FROM ROWS FROM (json_array_elements($1::json),
               ${ENQUEUE_COLUMNS.map(([, type], i) => `unnest($${i + 6}::${type}[])`).join(', ')})
          WITH ORDINALITY AS u(doc, ${ENQUEUE_COLUMNS.map(([name]) => name).join(', ')}, ord)),
      seqs AS MATERIALIZED (SELECT nextval('${s}.job_seq') AS seq FROM input),
      numbered AS (SELECT seq, row_number() OVER (ORDER BY seq) AS ord FROM seqs),
      inserted AS (
        INSERT INTO ${s}.jobs
          (id, seq, queue, type, state, priority, attempt, rev, run_at, deadline, expires_at,
           finished_at, dead_letter, unique_key, workflow_id, rate_key, version_num, worker_id,
           tenant_id, doc)
        SELECT i.id, n.seq, i.queue, i.type, i.state, i.priority, i.attempt, i.rev, i.run_at,
               i.deadline, i.expires_at, i.finished_at, i.dead_letter, i.unique_key,
               i.workflow_id, i.rate_key, i.version_num, i.worker_id, i.tenant_id,
               (left(i.doc::text, -1) || ',"seq":' || n.seq || '}')::jsonb
          FROM input i JOIN numbered n ON n.ord = i.ord
        RETURNING id, seq, state),
      keys AS (
        INSERT INTO ${s}.unique_locks (key, job_id, locked_at)
        SELECT unique_key, id, $3 FROM input WHERE unique_key IS NOT NULL
        ON CONFLICT (key) DO NOTHING
        RETURNING key),
      queues AS (
        INSERT INTO ${s}.queues (name, created_at)
        SELECT DISTINCT queue, $4::text FROM input
        ON CONFLICT (name) DO NOTHING),
      ${eventRowCtes(s, 2, 6 + ENQUEUE_COLUMNS.length)},
      checked AS (
        SELECT ${s}.ojs_require(
                 (SELECT count(*) FROM keys)
                   = (SELECT count(*) FROM input WHERE unique_key IS NOT NULL),
                 'unique key held')
               AND set_config('synchronous_commit', 'off', true) = 'off' AS ok)
      SELECT id, seq::text AS seq FROM inserted, checked WHERE checked.ok
      UNION ALL
      SELECT NULL, NULL FROM (SELECT pg_notify($5::text, '') FROM inserted
                               WHERE state = 'available' LIMIT 1) AS notified`,
    /**
     * After a lost connection during `enqueue`: which of the jobs $1 (jsonb
     * array of {id, doc}, doc without seq) are stored exactly as sent.
     */
    enqueued: `SELECT j.id, j.seq::text AS seq FROM ${s}.jobs j
      JOIN jsonb_to_recordset($1::jsonb) AS r(id text, doc jsonb) ON j.id = r.id
      WHERE j.doc - 'seq' = r.doc`,
    /** $1 = queue names, $2 = created_at. Takes no lock on existing rows. */
    ensureQueues: `INSERT INTO ${s}.queues (name, created_at)
      SELECT DISTINCT name, $2 FROM unnest($1::text[]) AS q(name)
      ON CONFLICT (name) DO NOTHING`,

    // ------------------------------------------------------------ unique keys
    /** Locks the key's row if it exists (waits for a concurrent holder's transaction). */
    lockUniqueKey: `SELECT job_id, locked_at FROM ${s}.unique_locks WHERE key = $1 FOR UPDATE`,
    /** Creates the key's row (locked by this transaction); no row returned when it exists. */
    createUniqueKey: `INSERT INTO ${s}.unique_locks (key, job_id, locked_at) VALUES ($1, $2, $3)
      ON CONFLICT (key) DO NOTHING RETURNING key`,
    /** Points the key at the new job (the row is already locked, or created here). */
    takeUniqueKey: `INSERT INTO ${s}.unique_locks (key, job_id, locked_at) VALUES ($1, $2, $3)
      ON CONFLICT (key) DO UPDATE SET job_id = EXCLUDED.job_id, locked_at = EXCLUDED.locked_at`,
    releaseUniqueKeys: `DELETE FROM ${s}.unique_locks WHERE job_id = ANY($1::text[])`,

    // ------------------------------------------------------------ guarded writes
    /**
     * $1 = jsonb array of job rows plus expect_rev. Applies each row only if
     * the stored rev is still expect_rev; the caller compares the row count.
     */
    updateJobs: `UPDATE ${s}.jobs j
       SET queue = u.queue, type = u.type, state = u.state, priority = u.priority,
           attempt = u.attempt, rev = u.rev, run_at = u.run_at, deadline = u.deadline,
           expires_at = u.expires_at, finished_at = u.finished_at, dead_letter = u.dead_letter,
           unique_key = u.unique_key, workflow_id = u.workflow_id, rate_key = u.rate_key,
           version_num = u.version_num, worker_id = u.worker_id, doc = u.doc
      FROM jsonb_to_recordset($1::jsonb) AS u(${JOB_COLUMNS}, expect_rev integer)
     WHERE j.id = u.id AND j.rev = u.expect_rev`,

    // ------------------------------------------------------------ settle, heartbeat
    /**
     * $1 = jsonb array of distinct job ids. Locks the jobs a batch settles
     * or extends, in id order (two batches sharing jobs lock them in the
     * same order, so they queue behind each other instead of deadlocking),
     * and reads the worker_id column for the write's guard. The ids come as
     * jsonb, not text[]: `id = ANY($1)` makes PostgreSQL plan the statement
     * anew on every call (the array's length changes its estimates).
     */
    lockJobs: `SELECT j.doc, j.worker_id
      FROM jsonb_array_elements_text($1::jsonb) AS i(id) JOIN ${s}.jobs j ON j.id = i.id
      ORDER BY j.id FOR UPDATE OF j`,
    /**
     * A batch of settlements (ACK / FAIL / expiry) in one statement.
     * $3... = the job rows (one per id: the last decision) as one array per
     * column of SETTLE_COLUMNS (rows.ts arrayLiteral; decision 0117): the
     * document as a patch of the one read (doc_set: top-level keys set,
     * doc_unset: keys removed, an array literal; rows.ts docPatch) rather
     * than whole, with the
     * guard as read: expect_state ('active': only active jobs are settled),
     * expect_attempt, expect_rev, expect_worker_id. A row is written only if
     * the job is still active on that attempt, revision and lease holder;
     * the caller compares the ids returned. The expected state travels in
     * the rows rather than as a literal: `state = 'active'` would match the
     * jobs_lease index, and the planner may then read every active job and
     * hash-join them instead of looking the batch up by primary key.
     * $1 = the event rows' documents (their columns, job_id among them,
     * after SETTLE_COLUMNS; rows.ts eventValues), in order: only the events
     * of jobs actually written are inserted (seq in array order).
     * $2 = the jobs-available channel: NOTIFY (sent at COMMIT) when a
     * written job is available again (requeue).
     * Rows: one per written job (id, and the transaction's xid for the
     * lost-COMMIT check), plus one with id NULL when notified.
     */
    settleJobs: `WITH written AS (
        UPDATE ${s}.jobs j
           SET queue = u.queue, type = u.type, state = u.state, priority = u.priority,
               attempt = u.attempt, rev = u.rev, run_at = u.run_at, deadline = u.deadline,
               expires_at = u.expires_at, finished_at = u.finished_at,
               dead_letter = u.dead_letter, unique_key = u.unique_key,
               workflow_id = u.workflow_id, rate_key = u.rate_key,
               version_num = u.version_num, worker_id = u.worker_id,
               doc = (j.doc - u.doc_unset::text[]) || u.doc_set
          FROM ROWS FROM (${SETTLE_COLUMNS.map(([, type], i) =>
            type === 'jsonb'
              ? `jsonb_array_elements($${i + 3}::jsonb)`
              : `unnest($${i + 3}::${type}[])`,
          ).join(', ')})
               AS u(${SETTLE_COLUMNS.map(([name]) => name).join(', ')})
         WHERE j.id = u.id AND j.state = u.expect_state AND j.attempt = u.expect_attempt
           AND j.rev = u.expect_rev AND j.worker_id IS NOT DISTINCT FROM u.expect_worker_id
        RETURNING j.id, j.state),
      ${eventRowCtes(s, 1, 3 + SETTLE_COLUMNS.length, 'WHERE e.job_id IN (SELECT id FROM written)')}
      SELECT id, txid_current()::text AS xid FROM written
      UNION ALL
      SELECT NULL, NULL FROM (SELECT pg_notify($2::text, '') FROM written
                               WHERE state = 'available' LIMIT 1) AS notified`,
    /**
     * A batch of lease extensions (heartbeats) in one statement. $1 = jsonb
     * array of {id, lease_until, deadline, expect_state, expect_attempt,
     * expect_worker_id} (one per id; expect_state 'active', as in settleJobs). Writes only the lease: doc.lease_until and the deadline
     * column; rev stays, so a concurrent ACK's guard still holds. Guarded on
     * the job being active on that attempt and lease holder. $2 = event rows
     * (documents, then their columns from $3: rows.ts eventValues)
     * plus job_id, inserted for the jobs written. Rows: the ids written (and
     * the transaction's xid).
     */
    extendLeases: `WITH extended AS (
        UPDATE ${s}.jobs j
           SET deadline = u.deadline,
               doc = jsonb_set(j.doc, '{lease_until}', to_jsonb(u.lease_until))
          FROM jsonb_to_recordset($1::jsonb)
               AS u(id text, lease_until numeric, deadline double precision,
                    expect_state text, expect_attempt integer, expect_worker_id text)
         WHERE j.id = u.id AND j.state = u.expect_state AND j.attempt = u.expect_attempt
           AND j.worker_id IS NOT DISTINCT FROM u.expect_worker_id
        RETURNING j.id),
      ${eventRowCtes(s, 2, 3, 'WHERE e.job_id IN (SELECT id FROM extended)')}
      SELECT id, txid_current()::text AS xid FROM extended`,

    /** $1 = jsonb array of {id, expect_rev}. */
    deleteJobs: `DELETE FROM ${s}.jobs j
      USING jsonb_to_recordset($1::jsonb) AS d(id text, expect_rev integer)
      WHERE j.id = d.id AND j.rev = d.expect_rev
      RETURNING j.id`,
    insertWorkflows: `INSERT INTO ${s}.workflows (id, rev, doc)
      SELECT id, rev, doc FROM jsonb_to_recordset($1::jsonb) AS w(id text, rev integer, doc jsonb)`,
    updateWorkflows: `UPDATE ${s}.workflows w SET rev = u.rev, doc = u.doc
      FROM jsonb_to_recordset($1::jsonb) AS u(id text, rev integer, expect_rev integer, doc jsonb)
      WHERE w.id = u.id AND w.rev = u.expect_rev`,
    updateCrons: `UPDATE ${s}.crons c
       SET rev = u.rev, enabled = u.enabled, next_run_ms = u.next_run_ms, doc = u.doc
      FROM jsonb_to_recordset($1::jsonb)
           AS u(name text, rev integer, enabled boolean, next_run_ms double precision,
                expect_rev integer, doc jsonb)
     WHERE c.name = u.name AND c.rev = u.expect_rev`,

    // ------------------------------------------------------------ claim
    /**
     * Per requested queue ($1, in order): its config and whether
     * rate-limited jobs are waiting in it (which sends the claim down the
     * limited path), for claims of several queues and those the gate of
     * claimQueueGated turned away. (Merged whole into the claim, before
     * statements were prepared, the claim took longer to plan than both
     * together took to run; claimQueueGated checks one queue in a
     * MATERIALIZED CTE instead, decision 0082.)
     */
    claimPlan: `${planOf(s, '$1')} ORDER BY n.ord`,
    /**
     * The claim of an unlimited queue in one statement: the CTE locks at
     * most $6 available, unexpired jobs of queue $5 in claim order
     * (priority desc, seq) that the fetch's handlers admit ($7), skipping
     * rows other transactions hold, and the UPDATE turns exactly those into
     * active jobs. Rows (doc, xid) come back unordered.
     */
    claimQueue: claimUpdate(s, pickQueue(s, '$5')),
    /** claimQueue with the job.started events inserted by the same statement ($8 event ids, $9 source). */
    claimQueueLogged: claimUpdateLogged(s, pickQueue(s, '$5')),
    /** claimQueueLogged that first checks its queue needs no transaction (decision 0082). */
    claimQueueGated: claimUpdateGated(s),
    /** Claims jobs $5 (text[]) the limited path already locked and accepted. */
    claimIds: claimUpdate(
      s,
      `SELECT id FROM ${s}.jobs
        WHERE id = ANY($5::text[]) AND state = 'available'
        FOR UPDATE`,
    ),
    /**
     * Limited path: the next page of candidates after the (priority, seq)
     * cursor, leaving out rate keys already found at their limit ($6) and
     * jobs the handlers do not admit ($7) and, for a tenant's claim ($8, else
     * null), other tenants' jobs, locked (SKIP LOCKED) while the
     * limits are checked. ORDER BY names the table's columns (j.seq): a bare
     * `seq` would mean the text output column, ordering '10' before '9' and
     * ruling out the jobs_claim index.
     */
    claimCandidates: `SELECT id, priority, seq::text AS seq, doc->'rate_limit' AS rate_limit, tenant_id
      FROM ${s}.jobs j
      WHERE queue = $1 AND state = 'available'
        AND (expires_at IS NULL OR expires_at > $2::double precision)
        AND (priority < $3::integer OR (priority = $3::integer AND seq > $4::bigint))
        AND (rate_key IS NULL OR NOT (rate_key = ANY($6::text[])))
        AND ${admitted(7, 'j')}
        AND ($8::text IS NULL OR tenant_id IS NOT DISTINCT FROM nullif($8::text, '${DEFAULT_TENANT}'))
      ORDER BY j.priority DESC, j.seq
      LIMIT $5
      FOR UPDATE SKIP LOCKED`,
    /** claimCandidates of a named tenant ($8): served by the jobs_tenant index. */
    claimCandidatesTenant: `SELECT id, priority, seq::text AS seq, doc->'rate_limit' AS rate_limit, tenant_id
      FROM ${s}.jobs j
      WHERE queue = $1 AND state = 'available'
        AND (expires_at IS NULL OR expires_at > $2::double precision)
        AND (priority < $3::integer OR (priority = $3::integer AND seq > $4::bigint))
        AND (rate_key IS NULL OR NOT (rate_key = ANY($6::text[])))
        AND ${admitted(7, 'j')}
        AND tenant_id = $8::text
      ORDER BY j.priority DESC, j.seq
      LIMIT $5
      FOR UPDATE SKIP LOCKED`,
    /**
     * A queue's active jobs, against its concurrency limit: from the
     * counters (migration 008), as exact as a count and read under the
     * queue's lock like one. Active jobs are in no (queue, state) index
     * (migration 014): a count over the jobs would read every lease held.
     */
    activeInQueue: `SELECT coalesce(sum(n), 0)::bigint AS n FROM ${jobCounts(s)} c
      WHERE queue = $1 AND state = 'active'`,
    activeWithKey: `SELECT count(*) AS n FROM ${s}.jobs WHERE rate_key = $1 AND state = 'active'`,
    /** A named tenant's active jobs (jobs_tenant_active), against its max_concurrency. */
    activeInTenant: `SELECT count(*) AS n FROM ${s}.jobs WHERE tenant_id = $1 AND state = 'active'`,
    /** Serialises limited claims of one queue / one rate key across processes. */
    advisoryLock: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
    tryAdvisoryLock: 'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked',
    rateWindow: `SELECT window_start, count FROM ${s}.rate_windows WHERE key = $1`,
    /** $1 = jsonb array of {key, window_start, count}; the caller holds each key's lock. */
    saveRateWindows: `INSERT INTO ${s}.rate_windows (key, window_start, count)
      SELECT key, window_start, count
        FROM jsonb_to_recordset($1::jsonb) AS w(key text, window_start double precision, count integer)
      ON CONFLICT (key) DO UPDATE SET window_start = EXCLUDED.window_start, count = EXCLUDED.count`,

    // ------------------------------------------------------------ time
    /** Unstarted jobs past expires_at, locked (SKIP LOCKED) for expire(). */
    lockExpiring: `SELECT doc FROM ${s}.jobs WHERE ${EXPIRING}
      ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    /** Unstarted workflow jobs past expires_at: the engine expires them with their workflow. */
    expiringWorkflowJobs: `SELECT doc FROM ${s}.jobs
      WHERE expires_at IS NOT NULL AND expires_at <= $1
        AND state IN ('scheduled', 'available', 'pending', 'retryable') AND workflow_id IS NOT NULL
      ORDER BY expires_at LIMIT $2`,
    /** Due scheduled/retryable jobs, locked (SKIP LOCKED) for promote(). */
    lockDue: `SELECT doc FROM ${s}.jobs WHERE ${DUE}
      ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    /**
     * Whether lockExpiring or lockDue would find anything at $1 (now): two
     * index probes (jobs_expiry, jobs_due), so that the usual promotion,
     * with nothing to do, is one read instead of a transaction.
     */
    anyDue: `SELECT EXISTS (SELECT 1 FROM ${s}.jobs WHERE ${EXPIRING})
      OR EXISTS (SELECT 1 FROM ${s}.jobs WHERE ${DUE}) AS due`,

    // ------------------------------------------------------------ queues
    listQueues: `SELECT name, paused, created_at, concurrency, rate_limit, rate_period_ms
      FROM ${s}.queues ORDER BY name`,
    getQueue: `SELECT name, paused, created_at, concurrency, rate_limit, rate_period_ms
      FROM ${s}.queues WHERE name = $1`,
    ensureQueue: `INSERT INTO ${s}.queues (name, created_at) VALUES ($1, $2)
      ON CONFLICT (name) DO NOTHING`,
    setPaused: `UPDATE ${s}.queues SET paused = $2, paused_at = $3 WHERE name = $1
      RETURNING name, paused, created_at, concurrency, rate_limit, rate_period_ms`,
    setConcurrency: `UPDATE ${s}.queues SET concurrency = $2 WHERE name = $1`,
    setRateLimit: `UPDATE ${s}.queues SET rate_limit = $2, rate_period_ms = $3 WHERE name = $1`,
    queueStats: `SELECT
        (SELECT paused FROM ${s}.queues WHERE name = $1) AS paused,
        (SELECT coalesce(jsonb_object_agg(state, n), '{}'::jsonb)
           FROM (SELECT state, sum(n) AS n FROM ${jobCounts(s)} c WHERE queue = $1
                  GROUP BY state HAVING sum(n) <> 0) c)
          AS counts,
        (SELECT count(*) FROM ${s}.jobs
          WHERE queue = $1 AND state = 'completed' AND finished_at >= $2) AS completed_last_minute,
        (SELECT count(*) FROM ${s}.jobs
          WHERE queue = $1 AND state = 'completed' AND finished_at >= $3) AS completed_last_hour,
        (SELECT count(*) FROM ${s}.jobs
          WHERE queue = $1 AND state = 'discarded' AND finished_at >= $3) AS failed_last_hour`,
    deadLetterCount: `SELECT count(*) AS n FROM ${s}.jobs
      WHERE dead_letter AND ($1::text IS NULL OR queue = $1)`,
    deadLetterPage: `SELECT doc FROM ${s}.jobs
      WHERE dead_letter AND ($1::text IS NULL OR queue = $1)
      ORDER BY seq DESC LIMIT $2 OFFSET $3`,

    // ------------------------------------------------------------ workflows, crons
    getWorkflow: `SELECT doc FROM ${s}.workflows WHERE id = $1`,
    /**
     * Insert or replace by name in one statement; a replace bumps rev (so a
     * concurrent guarded cron update fails) and `created` tells which.
     */
    upsertCron: `INSERT INTO ${s}.crons AS c (name, rev, enabled, next_run_ms, doc)
      VALUES ($1, $2, $3, $4, $5::jsonb)
      ON CONFLICT (name) DO UPDATE SET
        rev = c.rev + 1, enabled = EXCLUDED.enabled, next_run_ms = EXCLUDED.next_run_ms,
        doc = EXCLUDED.doc || jsonb_build_object('rev', c.rev + 1)
      RETURNING (xmax = 0) AS created, doc`,
    getCron: `SELECT doc FROM ${s}.crons WHERE name = $1`,
    listCrons: `SELECT doc FROM ${s}.crons ORDER BY name`,
    deleteCron: `DELETE FROM ${s}.crons WHERE name = $1 RETURNING doc`,
    dueCrons: `SELECT doc FROM ${s}.crons WHERE enabled AND next_run_ms <= $1
      ORDER BY next_run_ms, name`,

    // ------------------------------------------------------------ settings
    getSetting: `SELECT namespace, key, rev, updated_at, value FROM ${s}.settings
      WHERE namespace = $1 AND key = $2`,
    listSettings: `SELECT namespace, key, rev, updated_at, value FROM ${s}.settings
      WHERE namespace = $1 AND starts_with(key, $2) ORDER BY key`,
    /** Create: only when the key is free. */
    createSetting: `INSERT INTO ${s}.settings (namespace, key, rev, updated_at, value)
      VALUES ($1, $2, $3, $4, $5::jsonb) ON CONFLICT DO NOTHING
      RETURNING namespace, key, rev, updated_at, value`,
    /** Update guarded on rev ($6). */
    updateSetting: `UPDATE ${s}.settings SET rev = $3, updated_at = $4, value = $5::jsonb
      WHERE namespace = $1 AND key = $2 AND rev = $6
      RETURNING namespace, key, rev, updated_at, value`,
    deleteSetting: `DELETE FROM ${s}.settings WHERE namespace = $1 AND key = $2`,

    // ------------------------------------------------------------ webhooks
    /** $1 = jsonb array of delivery rows; an id already stored is left as it is. */
    insertWebhookDeliveries: `INSERT INTO ${s}.webhook_deliveries
        (id, subscription_id, tenant_id, state, due_at, settled_at, rev, doc)
      SELECT id, subscription_id, tenant_id, state, due_at, settled_at, rev, doc
        FROM jsonb_to_recordset($1::jsonb) AS d(id text, subscription_id text, tenant_id text,
             state text, due_at double precision, settled_at double precision, rev integer,
             doc jsonb)
      ON CONFLICT (id) DO NOTHING`,
    /** $1 = now, $2 = limit. Soonest first. */
    dueWebhookDeliveries: `SELECT doc FROM ${s}.webhook_deliveries
      WHERE due_at IS NOT NULL AND due_at <= $1 ORDER BY due_at LIMIT $2`,
    /** $1 = id, $2 = state, $3 = due_at, $4 = rev, $5 = doc, $6 = expected rev, $7 = settled_at. */
    updateWebhookDelivery: `UPDATE ${s}.webhook_deliveries
      SET state = $2, due_at = $3, rev = $4, doc = $5::jsonb, settled_at = $7
      WHERE id = $1 AND rev = $6`,
    /** $1 = delivered before, $2 = dead before, $3 = limit. */
    pruneWebhookDeliveries: `DELETE FROM ${s}.webhook_deliveries WHERE seq IN (
      SELECT seq FROM ${s}.webhook_deliveries WHERE state = 'delivered' AND settled_at < $1
      UNION ALL
      SELECT seq FROM ${s}.webhook_deliveries WHERE state = 'dead' AND settled_at < $2
      LIMIT $3)`,
    getWebhookDelivery: `SELECT doc FROM ${s}.webhook_deliveries WHERE id = $1`,
    /** $1 subscription, $2 state, $3 tenant (each NULL: any), $4 the page's cursor id (NULL: newest), $5 limit. */
    listWebhookDeliveries: `SELECT doc FROM ${s}.webhook_deliveries
      WHERE ($1::text IS NULL OR subscription_id = $1)
        AND ($2::text IS NULL OR state = $2)
        AND ($3::text IS NULL OR tenant_id = $3)
        AND ($4::text IS NULL OR seq < (SELECT seq FROM ${s}.webhook_deliveries WHERE id = $4))
      ORDER BY seq DESC LIMIT $5`,

    // ------------------------------------------------------------ events
    /** $1... = event rows (rows.ts eventValues), inserted (seq assigned) in order, runs as one row. */
    insertEvents: `WITH ${eventRowCtes(s, 1, 2)} SELECT 0 AS done`,
    /**
     * Removes the oldest events beyond the newest $1, at most $2 of them
     * (NULL: all), oldest first; returns how many (`removed`). Rows of
     * several events (migration 015): whole rows go, and the row the cut
     * falls in loses its oldest k events (positions count from a row's
     * end, so the rest keep theirs; a remainder of one becomes a row of one
     * event with its own columns). `touched` reads at most as many rows as
     * events go; each write is guarded on the row's n as read, so a
     * concurrent prune of the same row writes it once.
     */
    pruneEvents: `WITH total AS MATERIALIZED (
        SELECT greatest(coalesce(sum(n), 0) - $1::bigint, 0) AS over FROM ${s}.events),
      cut AS MATERIALIZED (SELECT least(over, coalesce($2::bigint, over)) AS d FROM total),
      touched AS MATERIALIZED (
        SELECT w.seq, w.n, least(w.n, c.d - (w.through - w.n)) AS k
          FROM (SELECT seq, n, sum(n) OVER (ORDER BY seq) AS through FROM ${s}.events
                 ORDER BY seq LIMIT (SELECT d FROM cut)) w, cut c
         WHERE w.through - w.n < c.d),
      gone AS (
        DELETE FROM ${s}.events e USING touched t
         WHERE e.seq = t.seq AND e.n = t.n AND t.k = t.n
        RETURNING e.n),
      trimmed AS (
        UPDATE ${s}.events e
           SET n = e.n - t.k,
               doc = CASE WHEN e.n - t.k = 1 THEN e.docs[e.n] END,
               docs = CASE WHEN e.n - t.k > 1 THEN e.docs[t.k + 1:] END,
               id = CASE WHEN e.n - t.k = 1 THEN e.docs[e.n]->>'id' END,
               type = CASE WHEN e.n - t.k = 1 THEN e.docs[e.n]->>'type' ELSE e.type END,
               queue = CASE WHEN e.n - t.k > 1 THEN e.queue
                            WHEN jsonb_typeof(e.docs[e.n]->'data'->'queue') = 'string'
                              THEN e.docs[e.n]->'data'->>'queue' END,
               job_type = CASE WHEN e.n - t.k > 1 THEN e.job_type
                               WHEN jsonb_typeof(e.docs[e.n]->'data'->'job_type') = 'string'
                                 THEN e.docs[e.n]->'data'->>'job_type' END
          FROM touched t
         WHERE e.seq = t.seq AND e.n = t.n AND t.k < t.n
        RETURNING t.k)
      SELECT (coalesce((SELECT sum(n) FROM gone), 0)
              + coalesce((SELECT sum(k) FROM trimmed), 0))::integer AS removed`,
    eventsTable: `${s}.events`,

    // ------------------------------------------------------------ finding jobs (job-queries.ts)
    /** The quoted schema, for the statements of filter-dependent shape. */
    quotedSchema: s,
    /** Counters folded with the deltas not yet compacted (migration 008). */
    countJobsByQueue: `SELECT queue, state, sum(n)::bigint AS n FROM ${jobCounts(s)} c
      GROUP BY queue, state HAVING sum(n) <> 0 ORDER BY queue, state`,
    /**
     * Folds the deltas into the counters in one statement (each delta row is
     * deleted by exactly one compactor, however many processes run it).
     */
    compactJobCounts: `WITH folded AS (DELETE FROM ${s}.job_count_deltas RETURNING queue, state, delta)
      INSERT INTO ${s}.job_counts AS c (queue, state, n)
      SELECT queue, state, sum(delta) FROM folded GROUP BY queue, state
      ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n`,
    /** $1 = rate key. Active and waiting jobs with the key, and the newest one's policy. */
    rateKeyState: `SELECT
        (SELECT count(*) FROM ${s}.jobs WHERE rate_key = $1 AND state = 'active') AS active,
        (SELECT count(*) FROM ${s}.jobs WHERE rate_key = $1 AND state = 'available') AS waiting,
        (SELECT doc->'rate_limit' FROM ${s}.jobs WHERE rate_key = $1
            AND state IN ('available', 'active') ORDER BY seq DESC LIMIT 1) AS policy,
        (SELECT jsonb_build_object('start', window_start, 'count', count)
           FROM ${s}.rate_windows WHERE key = $1) AS win`,

    // ------------------------------------------------------------ admin
    notify: 'SELECT pg_notify($1, $2)',
    // TRUNCATE fires no row or statement triggers: the counters go with the jobs.
    reset: `TRUNCATE ${s}.jobs, ${s}.job_counts, ${s}.job_count_deltas, ${s}.queues, ${s}.events, ${s}.unique_locks, ${s}.rate_windows,
      ${s}.workflows, ${s}.crons, ${s}.settings, ${s}.webhook_deliveries`,
    dbTimeMs: 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::double precision AS ms',
    /**
     * Waits until the WAL is on disk up to now: a transaction that writes a
     * WAL record (a transactional logical message, which touches no table)
     * and commits synchronously flushes every earlier commit record, the
     * asynchronous ones included. A transaction that only takes an xid
     * (txid_current) writes no record of its own and commits without the
     * flush. Any user may call it, at any wal_level (decision 0115).
     */
    flushWal: "SELECT pg_logical_emit_message(true, 'ojs', '') AS lsn",
  };
}

export type Statements = ReturnType<typeof statements>;

/**
 * Names under which the statements are prepared on each connection (node-pg
 * prepares a named statement once per connection and then only binds and
 * executes it), saving PostgreSQL the parse and plan of every call.
 */
export function preparedNames(sql: Statements): Map<string, string> {
  const names = new Map<string, string>();
  for (const [key, text] of Object.entries(sql)) {
    // ANALYZE is a utility statement: sent as is, not prepared.
    if (!['eventsTable', 'reset', 'analyzeJobs', 'quotedSchema'].includes(key))
      names.set(text, `ojs_${key}`);
  }
  names.set(TXID_SQL, 'ojs_txid');
  return names;
}

/** The transaction's id if it wrote anything (asked just before COMMIT). */
export const TXID_SQL = 'SELECT txid_current_if_assigned()::text AS xid';

/** Type parsers that leave json (114) and jsonb (3802) as text. */
const RAW_JSON: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 114 || oid === 3802
      ? (value: string) => value
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * What the store's code queries through: a pooled client (or the pool) that
 * runs the known statements as prepared statements.
 */
export class Session {
  readonly #target: pg.Pool | pg.PoolClient;
  readonly #names: Map<string, string>;

  constructor(target: pg.Pool | pg.PoolClient, names: Map<string, string>) {
    this.#target = target;
    this.#names = names;
  }

  /** `rawJson`: json and jsonb columns come back as the text PostgreSQL sent, unparsed. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    rawJson = false,
  ): Promise<pg.QueryResult<R>> {
    const name = this.#names.get(text);
    const config: pg.QueryConfig = name === undefined ? { text, values } : { name, text, values };
    if (rawJson) config.types = RAW_JSON;
    return this.#target.query<R>(config);
  }
}
