/**
 * The SQL of listEvents, built from a core EventFilter: values are bound
 * parameters ($n); only the shape of the WHERE clause varies.
 *
 * The log's indexes (migration 010): seq (the order, and the walk of every
 * filter without an index of its own: queue, job type, subject, the
 * frequent types), id (where a cursor resumes) and `events_type_rare`,
 * (type, seq) for every type but the three each job writes. The statement
 * is not prepared: it is planned with its values, so for `type = ANY($1)`
 * listing only other types the planner proves the partial index's
 * predicate from the bound array and walks that index.
 */
import type { EventFilter } from '@ojs/core';
import type { Query } from './job-queries.ts';

/** `events`: the schema-qualified events table. */
export function listEventsQuery(events: string, filter: EventFilter): Query {
  const clauses: string[] = [];
  const values: unknown[] = [];
  const within = (column: string, list: string[] | undefined) => {
    if (list === undefined || list.length === 0) return;
    values.push(list);
    clauses.push(`${column} = ANY($${values.length}::text[])`);
  };
  within('type', filter.types);
  within('queue', filter.queues);
  within('job_type', filter.jobTypes);
  if (filter.after !== undefined) {
    values.push(filter.after);
    clauses.push(`seq > coalesce((SELECT seq FROM ${events} WHERE id = $${values.length}), 0)`);
  }
  if (filter.subject !== undefined) {
    values.push(filter.subject);
    clauses.push(`doc->>'subject' = $${values.length}`);
  }
  values.push(filter.limit);
  const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
  return {
    text: `SELECT doc FROM ${events} ${where} ORDER BY seq${filter.newestFirst ? ' DESC' : ''} LIMIT $${values.length}`,
    values,
  };
}
