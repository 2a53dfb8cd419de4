/**
 * The SQL of listEvents, built from a core EventFilter: values are bound
 * parameters ($n); only the shape of the WHERE clause varies.
 *
 * A row holds one event or a run of per-job events (migration 015,
 * decision 0113): the statement expands each row into its events with
 * their positions (seq, k), k counted from the row's end (0: the last).
 * The row's columns narrow the walk ("may match" for a row of several,
 * whose NULL column means its events differ) and each event is checked.
 *
 * The log's indexes (migrations 010, 014): seq (the order, and the walk of
 * every filter without an index of its own: queue, job type, subject, the
 * frequent types), the id hash (a cursor held by a row of one) and
 * `events_type_rare`, (type, seq) for every type but the three each job
 * writes. The statement is not prepared: it is planned with its values,
 * so for `type = ANY($1)` listing only other types the planner proves the
 * partial index's predicate from the bound array and walks that index
 * (such types are only ever rows of one, so the clause is exact).
 */
import type { EventFilter } from '@ojs/core';
import type { Query } from './job-queries.ts';
import { RUN_EVENT_TYPES } from './rows.ts';

/** Where an `after` cursor's event was last listed (postgres-store.ts): checked, not trusted. */
export interface EventPosition {
  seq: string;
  k: number;
}

/**
 * `events`: the schema-qualified events table. `remembered`: the cursor's
 * position as this process listed it, confirmed by the statement (the
 * row at seq must hold the id at k); else the cursor is found by the id
 * hash (rows of one) or a search of the rows of several, newest first.
 * Rows: doc (the event), seq, k.
 */
export function listEventsQuery(
  events: string,
  filter: EventFilter,
  remembered?: EventPosition,
): Query {
  const clauses: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const within = (column: string, field: string, list: string[] | undefined, exact = false) => {
    if (list === undefined || list.length === 0) return;
    const p = param(list);
    clauses.push(
      exact
        ? `e.${column} = ANY(${p}::text[])`
        : `(e.${column} = ANY(${p}::text[]) OR (e.n > 1 AND e.${column} IS NULL))`,
      `(e.n = 1 OR x.ev${field} = ANY(${p}::text[]))`,
    );
  };
  within(
    'type',
    "->>'type'",
    filter.types,
    !filter.types?.some((type) => RUN_EVENT_TYPES.has(type)),
  );
  within('queue', "->'data'->>'queue'", filter.queues);
  within('job_type', "->'data'->>'job_type'", filter.jobTypes);
  let cursor = '';
  if (filter.after !== undefined) {
    const id = param(filter.after);
    const found = [
      `SELECT seq, 0 AS k FROM ${events} WHERE id = ${id}`,
      `(SELECT e.seq, (a.i - e.n)::integer FROM ${events} e
          CROSS JOIN LATERAL unnest(e.docs) WITH ORDINALITY AS a(v, i)
         WHERE e.n > 1 AND a.v->>'id' = ${id}
         ORDER BY e.seq DESC LIMIT 1)`,
    ];
    if (remembered !== undefined) {
      const seq = param(remembered.seq);
      const k = param(remembered.k);
      found.unshift(`SELECT seq, ${k}::integer AS k FROM ${events}
         WHERE seq = ${seq}::bigint
           AND CASE WHEN n = 1 THEN id = ${id} ELSE docs[n + ${k}::integer]->>'id' = ${id} END`);
    }
    // The branches run in order and stop at the first row (the cheapest
    // first); a cursor not in the log is position (0, 0): the whole log.
    cursor = `WITH found AS MATERIALIZED (${found.join('\n      UNION ALL ')} LIMIT 1),
      pos AS MATERIALIZED (SELECT coalesce(max(seq), 0) AS seq, coalesce(max(k), 0) AS k FROM found)
    `;
    clauses.push(
      'e.seq >= (SELECT seq FROM pos)',
      '(e.seq > (SELECT seq FROM pos) OR x.k > (SELECT k FROM pos))',
    );
  }
  if (filter.subject !== undefined) clauses.push(`x.ev->>'subject' = ${param(filter.subject)}`);
  const limit = param(filter.limit);
  const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
  const order = filter.newestFirst ? 'e.seq DESC, x.k DESC' : 'e.seq, x.k';
  return {
    text: `${cursor}SELECT x.ev AS doc, e.seq, x.k FROM ${events} e
      CROSS JOIN LATERAL (
        SELECT a.ev, (a.i - e.n)::integer AS k
          FROM unnest(CASE WHEN e.n = 1 THEN ARRAY[e.doc] ELSE e.docs END) WITH ORDINALITY AS a(ev, i)) x
      ${where} ORDER BY ${order} LIMIT ${limit}`,
    values,
  };
}
