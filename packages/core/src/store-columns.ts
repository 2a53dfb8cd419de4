/**
 * The index columns every store derives from a job document. Stores keep
 * the document as the source of truth and these values beside it for
 * filtering and ordering; deriving them in one place keeps SQLite,
 * PostgreSQL and any other store in agreement on what, say, a lease
 * deadline or a dead-lettered job is.
 */
import type { JobRecord } from './job-types.ts';
import type { JobState } from './states.ts';
import { tenantColumn } from './tenancy.ts';

export interface JobColumns {
  id: string;
  queue: string;
  type: string;
  state: JobState;
  priority: number;
  attempt: number;
  rev: number;
  /** Due time (ms) of a scheduled or retryable job. */
  run_at: number | null;
  /** The earliest of the visibility and execution deadlines (ms), while active. */
  deadline: number | null;
  expires_at: number | null;
  /** When the job reached its final state (ms): throughput statistics and retention. */
  finished_at: number | null;
  /** Listed in the dead letter queue. */
  dead_letter: boolean;
  unique_key: string | null;
  workflow_id: string | null;
  rate_key: string | null;
  version_num: number | null;
  /** The lease holder while active: part of the guard of a settlement. */
  worker_id: string | null;
  /** The job's named tenant (meta.tenant_id); null for the default tenant. Never changes. */
  tenant_id: string | null;
}

function finishedAt(job: JobRecord): number | null {
  const stamp =
    job.state === 'completed'
      ? job.completed_at
      : job.state === 'discarded'
        ? job.discarded_at
        : job.state === 'cancelled'
          ? job.cancelled_at
          : undefined;
  if (stamp === undefined) return null;
  const ms = Date.parse(stamp);
  return Number.isNaN(ms) ? null : ms;
}

export function jobColumns(job: JobRecord): JobColumns {
  const deadlines = [job.lease_until, job.timeout_at].filter((v): v is number => v !== undefined);
  return {
    id: job.id,
    queue: job.queue,
    type: job.type,
    state: job.state,
    priority: job.priority,
    attempt: job.attempt,
    rev: job.rev,
    run_at: job.run_at ?? null,
    deadline: job.state === 'active' && deadlines.length > 0 ? Math.min(...deadlines) : null,
    expires_at: job.expires_at_ms ?? null,
    finished_at: finishedAt(job),
    dead_letter: job.state === 'discarded' && job.dead_letter === true,
    unique_key: job.unique_key ?? null,
    workflow_id: job.workflow_id ?? null,
    rate_key: job.rate_limit?.key ?? null,
    version_num: job.version_num ?? null,
    worker_id: job.state === 'active' ? (job.worker_id ?? null) : null,
    tenant_id: tenantColumn(job),
  };
}
