/**
 * The claim of one queue, inside the claim's write transaction (the store
 * holds the write lock, so the limit checks, the guarded claim and the rate
 * take below are one atomic step). Jobs held back by a limit stay
 * available.
 */
import type { StatementSync } from 'node:sqlite';
import {
  type ClaimedJobs,
  type ClaimRequest,
  claim,
  DEFAULT_TENANT,
  type JobRecord,
  tenantColumn,
} from '@ojs/core';
import type { JobCountDeltas } from './job-counts.ts';
import { handlerFilter, lifecycleValues, parseJob, type Row } from './rows.ts';
import {
  ACTIVE_IN_QUEUE,
  ACTIVE_IN_TENANT,
  ACTIVE_WITH_KEY,
  CLAIM_JOB,
  claimPage,
  claimPagePlain,
  RATE_WINDOW,
  TAKE_RATE,
} from './statements.ts';

/** The store's prepared-statement getter (cached by SQL text). */
export type Prepare = (sql: string) => StatementSync;

export interface ClaimContext {
  stmt: Prepare;
  /** The queue's row of QUEUE_LIMITS (undefined: never configured), as of this transaction. */
  queueLimits: (queue: string) => Row | undefined;
  request: ClaimRequest;
  /** The store's job counts: a claim moves a job from available to active. */
  counts: JobCountDeltas;
  /**
   * Where claimed jobs are kept until settled (core ClaimedJobs). Kept as
   * written: a write rolled back later leaves a copy the settlement's guard
   * refuses. Workflow jobs settle through the generic commit.
   */
  kept: ClaimedJobs;
  /**
   * Keep the returned objects themselves (their caller gets copies, or
   * changes no record), not a parse of the JSON written.
   */
  keepReturned: boolean;
  /** Deep-freeze what is kept (records read-only, under test): a caller's change throws. */
  freezeKept: boolean;
}

/**
 * Claims up to `wanted` jobs from one queue, skipping jobs held back by a
 * limit (they stay available).
 */
export function claimFromQueue(context: ClaimContext, queue: string, wanted: number): JobRecord[] {
  const claimed = claimCandidates(context, queue, wanted);
  // The count moves once per queue claimed from, not once per job.
  if (claimed.length > 0) {
    context.counts.add(queue, 'available', -claimed.length);
    context.counts.add(queue, 'active', claimed.length);
  }
  return claimed;
}

/** claimFromQueue but for the counts: the jobs claimed are not counted yet. */
function claimCandidates(
  { stmt, queueLimits, request, counts, kept, keepReturned, freezeKept }: ClaimContext,
  queue: string,
  wanted: number,
): JobRecord[] {
  const config = queueLimits(queue);
  if (config?.paused === 1) return [];
  const activeInQueue = stmt(ACTIVE_IN_QUEUE);
  const activeWithKey = stmt(ACTIVE_WITH_KEY);
  const namedTenant = request.tenant !== undefined && request.tenant !== DEFAULT_TENANT;
  const handlers = handlerFilter(request);
  const claimed: JobRecord[] = [];
  let cursor = { priority: Number.MAX_SAFE_INTEGER, seq: 0 };
  // Keys found at their limit are excluded from later pages, so one key's
  // backlog cannot hide eligible jobs behind it.
  const blocked = new Set<string>();
  for (let scanned = 0, more = true; more && claimed.length < wanted && scanned < 10_000; ) {
    // The first page is exactly what is wanted: usually every candidate is
    // claimed, and each row read costs a table seek and a copy of its
    // document (a FETCH of one job read 16 rows: 70 % of its claim). Pages
    // after a skipped candidate read at least 16, so a run of held-back
    // jobs is crossed in few statements.
    const limit = scanned === 0 ? wanted : Math.max(wanted - claimed.length, 16);
    const rows = (
      blocked.size === 0 && handlers === null && request.tenant === undefined
        ? stmt(claimPagePlain(limit)).all(queue, request.now, cursor.priority, cursor.seq)
        : stmt(claimPage(namedTenant, limit)).all(
            queue,
            request.now,
            cursor.priority,
            cursor.seq,
            JSON.stringify([...blocked]),
            handlers,
            request.tenant ?? null,
          )
    ) as Row[];
    // A short page was the last: no candidate is left after it (keys
    // blocked while reading it only leave out more).
    more = rows.length === limit;
    for (const row of rows) {
      if (claimed.length >= wanted) break;
      scanned++;
      const job = parseJob(row)!;
      cursor = { priority: job.priority, seq: job.seq! };
      if (typeof config?.concurrency === 'number') {
        const stored = ((activeInQueue.get(queue) as Row | undefined)?.n as number) ?? 0;
        // The jobs claimed so far in this call are not in the counts yet (claimFromQueue).
        const active = stored + counts.pending(queue, 'active') + claimed.length;
        if (active >= config.concurrency) return claimed;
      }
      const limit = job.rate_limit;
      if (limit !== undefined && blocked.has(limit.key)) continue;
      if (request.tenantConcurrency !== undefined && !tenantAdmits(stmt, request, job)) continue;
      if (limit?.concurrency !== undefined) {
        if (((activeWithKey.get(limit.key) as Row).n as number) >= limit.concurrency) {
          blocked.add(limit.key);
          continue;
        }
      }
      const queueRate =
        typeof config?.rate_limit === 'number'
          ? {
              key: `queue-config:${queue}`,
              limit: config.rate_limit,
              period: config.rate_period_ms as number,
            }
          : undefined;
      if (
        queueRate &&
        !rateAllows(stmt, queueRate.key, queueRate.limit, queueRate.period, request.now)
      ) {
        return claimed;
      }
      if (
        limit?.rate &&
        !rateAllows(stmt, limit.key, limit.rate.limit, limit.rate.period_ms, request.now)
      ) {
        blocked.add(limit.key);
        continue;
      }
      const active = claim(job, {
        workerId: request.workerId,
        now: request.now,
        visibilityTimeoutMs: request.visibilityTimeoutMs,
      });
      const values = lifecycleValues(active);
      const written = stmt(CLAIM_JOB).run(...values, job.id, job.rev);
      if (Number(written.changes) !== 1) continue;
      if (active.workflow_id === undefined) {
        // The document is SET_LIFECYCLE's last value.
        const doc = values[values.length - 1] as string;
        // A parse of the JSON written is a record of its own (the caller holds `active`).
        kept.keep(active.id, doc.length, () =>
          keepReturned ? (freezeKept ? deepFreeze(active) : active) : JSON.parse(doc),
        );
      }
      if (queueRate) rateTake(stmt, queueRate.key, queueRate.period, request.now);
      if (limit?.rate) rateTake(stmt, limit.key, limit.rate.period_ms, request.now);
      claimed.push(active);
    }
  }
  return claimed;
}

/**
 * The job's tenant is below its concurrency limit (ClaimRequest.tenantConcurrency).
 * Jobs claimed earlier in this claim are active already (same transaction).
 */
function tenantAdmits(stmt: Prepare, request: ClaimRequest, job: JobRecord): boolean {
  const tenant = tenantColumn(job);
  const max = tenant === null ? undefined : request.tenantConcurrency![tenant];
  if (max === undefined) return true;
  return ((stmt(ACTIVE_IN_TENANT).get(tenant) as Row).n as number) < max;
}

/** Fixed window: a window starts at the first start after the previous one ended. */
function rateAllows(
  stmt: Prepare,
  key: string,
  limit: number,
  periodMs: number,
  now: number,
): boolean {
  const row = stmt(RATE_WINDOW).get(key) as Row | undefined;
  if (row === undefined || now >= (row.window_start as number) + periodMs) return true;
  return (row.count as number) < limit;
}

function rateTake(stmt: Prepare, key: string, periodMs: number, now: number): void {
  stmt(TAKE_RATE).run({ key, now, period: periodMs });
}

/** `value` and everything it holds, frozen (a kept record under test, ClaimContext.freezeKept). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
