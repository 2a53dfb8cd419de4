/**
 * claimJobs inside one transaction (READ COMMITTED).
 *
 * Unlimited queues (the common case): the plan of the requested queues
 * (`claimPlan`), then ONE statement per queue reached, the `claimQueue`
 * CTE: FOR UPDATE SKIP LOCKED picks at most `count` available, unexpired
 * jobs in claim order and the same statement makes them active, so
 * concurrent claimers never wait on each other and never share a job. The
 * claim returns the transaction's xid, sparing the lost-COMMIT check its
 * own round trip. When no requested queue is limited, the statement also
 * inserts the job.started events (`claimQueueLogged`): a claim is then
 * BEGIN, plan, claim, COMMIT.
 *
 * Limited queue (queue concurrency / rate limit, or rate-limited jobs
 * waiting in it): the checks need counts that must not change under the
 * claimer, so limited claims serialise on advisory transaction locks:
 *   - the queue's lock (queue limits), taken for all limited queues of the
 *     request up front in name order;
 *   - a rate key's lock (job rate_limit), the first one waited for, any
 *     further one only tried (jobs whose key another claimer holds right
 *     now are skipped and stay available).
 * Since a claimer waits only for queue locks (taken in one global order
 * before anything else) or for its first key lock (while holding no other
 * key), no two claimers can wait on each other in a cycle.
 * Candidates are then scanned in claim order (locked with SKIP LOCKED, at
 * most 10,000 per queue; keys found at their limit are left out of later
 * pages, so one key's backlog cannot hide eligible jobs behind it), each
 * checked like the SQLite store does, and the accepted ones claimed by one
 * `claimIds` statement. Rate windows are fixed
 * windows kept in rate_windows and written back before commit.
 */
import {
  type ClaimRequest,
  claimSteps,
  DEFAULT_TENANT,
  EVENT_SOURCE,
  type JobRecord,
  jobEvent,
  type OjsEvent,
  type RateLimitPolicy,
  toIso,
  uuidv7,
} from '@ojs/core';
import { lockText } from './names.ts';
import { handlerRows, toNumber } from './rows.ts';
import type { Tx } from './tx.ts';

/** Candidates examined per queue on the limited path (a fetch never walks the whole backlog). */
const MAX_LIMITED_SCAN = 10_000;
const MAX_PRIORITY = 2_147_483_647;
const MAX_PAGE = 256;

interface PlanRow {
  name: string;
  paused: boolean;
  concurrency: number | null;
  rate_limit: number | null;
  rate_period_ms: number | null;
  keyed: boolean;
}

interface CandidateRow {
  id: string;
  priority: number;
  seq: string;
  rate_limit: RateLimitPolicy | null;
  tenant_id: string | null;
}

interface Window {
  start: number;
  count: number;
}

export type ClaimContext = Pick<Tx, 'client' | 'sql' | 'schema' | 'state'>;

/** Rate windows and key locks of one claim transaction. */
class LimitState {
  readonly #ctx: ClaimContext;
  readonly #now: number;
  readonly #windows = new Map<string, Window | null>();
  readonly #dirty = new Set<string>();
  /** Active job count per rate key whose lock we hold; null = held elsewhere, skip. */
  readonly #keys = new Map<string, { active: number } | null>();
  #heldKeys = 0;

  constructor(ctx: ClaimContext, now: number) {
    this.#ctx = ctx;
    this.#now = now;
  }

  /**
   * A tenant with a concurrency limit: its lock (taken like a rate key's:
   * the first lock of a claim waited for, later ones only tried) and its
   * active job count; null = another claimer holds it, skip its jobs now.
   */
  tenant(id: string): Promise<{ active: number } | null> {
    const { schema, sql } = this.#ctx;
    return this.#counted(`tenant:${id}`, lockText.tenant(schema, id), sql.activeInTenant, id);
  }

  key(key: string): Promise<{ active: number } | null> {
    const { schema, sql } = this.#ctx;
    return this.#counted(key, lockText.rateKey(schema, key), sql.activeWithKey, key);
  }

  async #counted(
    key: string,
    lockKey: string,
    countSql: string,
    countParam: string,
  ): Promise<{ active: number } | null> {
    const cached = this.#keys.get(key);
    if (cached !== undefined) return cached;
    const { client, sql } = this.#ctx;
    if (this.#heldKeys === 0) {
      await client.query(sql.advisoryLock, [lockKey]);
    } else {
      const { rows } = await client.query<{ locked: boolean }>(sql.tryAdvisoryLock, [lockKey]);
      if (!rows[0]!.locked) {
        this.#keys.set(key, null);
        return null;
      }
    }
    this.#heldKeys++;
    const { rows } = await client.query<{ n: string }>(countSql, [countParam]);
    const state = { active: toNumber(rows[0]!.n) };
    this.#keys.set(key, state);
    return state;
  }

  async #window(key: string): Promise<Window | null> {
    if (!this.#windows.has(key)) {
      const { rows } = await this.#ctx.client.query<{ window_start: number; count: number }>(
        this.#ctx.sql.rateWindow,
        [key],
      );
      const row = rows[0];
      this.#windows.set(
        key,
        row === undefined ? null : { start: row.window_start, count: row.count },
      );
    }
    return this.#windows.get(key)!;
  }

  /** Fixed window: a window starts at the first start after the previous one ended. */
  async allows(key: string, limit: number, periodMs: number): Promise<boolean> {
    const window = await this.#window(key);
    if (window === null || this.#now >= window.start + periodMs) return true;
    return window.count < limit;
  }

  take(key: string, periodMs: number): void {
    const window = this.#windows.get(key) ?? null;
    const next =
      window === null || this.#now >= window.start + periodMs
        ? { start: this.#now, count: 1 }
        : { start: window.start, count: window.count + 1 };
    this.#windows.set(key, next);
    this.#dirty.add(key);
  }

  async save(): Promise<void> {
    if (this.#dirty.size === 0) return;
    const rows = [...this.#dirty].map((key) => {
      const window = this.#windows.get(key)!;
      return { key, window_start: window.start, count: window.count };
    });
    await this.#ctx.client.query(this.#ctx.sql.saveRateWindows, [JSON.stringify(rows)]);
  }
}

const byClaimOrder = (a: JobRecord, b: JobRecord) => b.priority - a.priority || a.seq! - b.seq!;

/** A claimed job's row: its document as the database sent it (JSON text), and the xid. */
interface ClaimedRow {
  doc: string;
  xid: string;
}

/** A row of claimQueueGated: a claimed job, or doc NULL when the queue needs the transaction. */
export interface GatedRow {
  doc: string | null;
  xid: string | null;
}

/**
 * The claim. `docs`: each claimed job's document as the database sent it
 * (JSON text), in the order of `jobs`: a second JSON.parse of it is the
 * cheapest copy of the job (core ClaimedJobs).
 */
export async function claimInTransaction(
  ctx: ClaimContext,
  request: ClaimRequest,
): Promise<{ jobs: JobRecord[]; docs: string[]; events: OjsEvent[] }> {
  const { client, sql, schema } = ctx;
  if (request.count <= 0 || request.queues.length === 0) {
    ctx.state.xid = null;
    return { jobs: [], docs: [], events: [] };
  }
  const params = [
    request.now,
    toIso(request.now),
    request.visibilityTimeoutMs ?? null,
    request.workerId ?? null,
  ];
  const handlers = handlerRows(request);
  const claimed: { job: JobRecord; doc: string }[] = [];
  let xid: string | null = null;
  const take = (rows: ClaimedRow[]) => {
    if (rows.length > 0) xid = rows[0]!.xid;
    const taken = rows.map((row) => ({ job: JSON.parse(row.doc) as JobRecord, doc: row.doc }));
    claimed.push(...taken.sort((a, b) => byClaimOrder(a.job, b.job)));
  };
  const plan = (await client.query<PlanRow>(sql.claimPlan, [request.queues])).rows;
  const limited = (row: PlanRow) => row.concurrency !== null || row.rate_limit !== null;
  const queueLocks = [...new Set(plan.filter((r) => !r.paused && limited(r)).map((r) => r.name))];
  for (const name of queueLocks.sort()) {
    await client.query(sql.advisoryLock, [lockText.queue(schema, name)]);
  }
  const limits = new LimitState(ctx, request.now);
  // No limited queue in the request: each claim statement inserts its own
  // job.started events (one round trip fewer). Otherwise they are built
  // here and appended by the caller, in claim order across all queues.
  // A tenant's claim (ClaimRequest.tenant) or one with tenant limits takes
  // the candidate path, which filters and counts by tenant; the claim of
  // every tenant without limits stays as it was.
  const scoped = request.tenant !== undefined || request.tenantConcurrency !== undefined;
  const logged = !scoped && !plan.some((row) => limited(row) || row.keyed);
  const claimFrom = async (queue: PlanRow, wanted: number): Promise<number> => {
    if (queue.paused) return 0;
    let rows: ClaimedRow[];
    if (scoped || limited(queue) || queue.keyed) {
      rows = await claimLimited(
        ctx,
        queue,
        wanted,
        params,
        limits,
        request.now,
        handlers,
        request.tenant,
        request.tenantConcurrency,
      );
    } else if (logged) {
      rows = (
        await client.query<ClaimedRow>(
          sql.claimQueueLogged,
          claimQueueLoggedParams(request, queue.name, wanted),
          true,
        )
      ).rows;
    } else {
      rows = (
        await client.query<ClaimedRow>(
          sql.claimQueue,
          [...params, queue.name, wanted, handlers],
          true,
        )
      ).rows;
    }
    take(rows);
    return rows.length;
  };
  if (request.takes === undefined) {
    for (const queue of plan) {
      const wanted = request.count - claimed.length;
      if (wanted <= 0) break;
      await claimFrom(queue, wanted);
    }
  } else {
    // Fair scheduling's takes first, then the fill (core claimSteps).
    const rows = new Map(plan.map((row) => [row.name, row]));
    const steps = claimSteps(request.takes, request.queues, request.count);
    for (let step = steps.next(0); !step.done; ) {
      const row = rows.get(step.value.queue);
      step = steps.next(row === undefined ? 0 : await claimFrom(row, step.value.count));
    }
  }
  await limits.save();
  // Rate windows are saved only for accepted (so claimed) jobs: no claim, no write.
  ctx.state.xid = xid;
  const jobs = claimed.map((c) => c.job);
  const docs = claimed.map((c) => c.doc);
  if (logged) return { jobs, docs, events: [] };
  const events = jobs.map((job) =>
    jobEvent(
      'job.started',
      job,
      { worker_id: job.worker_id ?? null, attempt: job.attempt },
      request.now,
    ),
  );
  return { jobs, docs, events };
}

/** The values of claimQueueLogged for `wanted` jobs of `queue`. */
function claimQueueLoggedParams(request: ClaimRequest, queue: string, wanted: number): unknown[] {
  return [
    request.now,
    toIso(request.now),
    request.visibilityTimeoutMs ?? null,
    request.workerId ?? null,
    queue,
    wanted,
    handlerRows(request),
    // One fresh event id per job the statement may claim, in claim order.
    Array.from({ length: wanted }, () => `evt_${uuidv7(request.now)}`),
    EVENT_SOURCE,
  ];
}

/**
 * The claim of the one queue of `request` as claimQueueGated, sent through
 * `run` on its own (decision 0082); undefined, with nothing claimed, when
 * the queue needs the transaction (paused, limited, or rate-limited jobs
 * waiting in it).
 */
export async function claimOneQueue(
  run: (text: string, params: unknown[]) => Promise<GatedRow[]>,
  sql: ClaimContext['sql'],
  request: ClaimRequest,
): Promise<{ jobs: JobRecord[]; docs: string[] } | undefined> {
  const rows = await run(
    sql.claimQueueGated,
    claimQueueLoggedParams(request, request.queues[0]!, request.count),
  );
  const docs = rows.map((row) => row.doc);
  if (docs.includes(null)) return undefined;
  const claimed = (docs as string[])
    .map((doc) => ({ job: JSON.parse(doc) as JobRecord, doc }))
    .sort((a, b) => byClaimOrder(a.job, b.job));
  return { jobs: claimed.map((c) => c.job), docs: claimed.map((c) => c.doc) };
}

async function claimLimited(
  ctx: ClaimContext,
  queue: PlanRow,
  wanted: number,
  params: unknown[],
  limits: LimitState,
  now: number,
  handlers: string | null,
  tenant: string | undefined,
  tenantConcurrency: Record<string, number> | undefined,
): Promise<ClaimedRow[]> {
  const { client, sql } = ctx;
  let queueActive: number | undefined;
  if (queue.concurrency !== null) {
    const { rows } = await client.query<{ n: string }>(sql.activeInQueue, [queue.name]);
    queueActive = toNumber(rows[0]!.n);
  }
  const queueRate =
    queue.rate_limit !== null && queue.rate_period_ms !== null
      ? { key: `queue-config:${queue.name}`, limit: queue.rate_limit, period: queue.rate_period_ms }
      : undefined;
  const accepted: string[] = [];
  // Rate keys at their limit (or held by another claimer): left out of later pages.
  const blocked = new Set<string>();
  let cursor = { priority: MAX_PRIORITY, seq: '0' };
  let scanned = 0;
  // Every candidate of a page is locked until commit, hidden from concurrent
  // claimers: pages start at what is still wanted and grow only while
  // limited jobs are being skipped (a long blocked backlog costs few round trips).
  let page = 0;
  scan: while (accepted.length < wanted && scanned < MAX_LIMITED_SCAN) {
    page = Math.min(Math.max(page * 4, wanted - accepted.length), MAX_PAGE);
    const candidates =
      tenant !== undefined && tenant !== DEFAULT_TENANT
        ? sql.claimCandidatesTenant
        : sql.claimCandidates;
    const { rows } = await client.query<CandidateRow>(candidates, [
      queue.name,
      now,
      cursor.priority,
      cursor.seq,
      Math.min(page, MAX_LIMITED_SCAN - scanned),
      [...blocked],
      handlers,
      tenant ?? null,
    ]);
    if (rows.length === 0) break;
    for (const row of rows) {
      scanned++;
      cursor = { priority: row.priority, seq: row.seq };
      if (accepted.length >= wanted) break scan;
      if (queueActive !== undefined && queueActive >= queue.concurrency!) break scan;
      // The tenant's concurrency (MT-003), held under its lock until commit.
      const tenantMax = row.tenant_id === null ? undefined : tenantConcurrency?.[row.tenant_id];
      let ofTenant: { active: number } | null = null;
      if (tenantMax !== undefined) {
        ofTenant = await limits.tenant(row.tenant_id!);
        if (ofTenant === null || ofTenant.active >= tenantMax) continue;
      }
      const limit = row.rate_limit;
      let key: { active: number } | null = null;
      if (limit !== null && blocked.has(limit.key)) continue;
      if (limit !== null && (limit.concurrency !== undefined || limit.rate !== undefined)) {
        key = await limits.key(limit.key);
        if (key === null || (limit.concurrency !== undefined && key.active >= limit.concurrency)) {
          blocked.add(limit.key);
          continue;
        }
      }
      if (queueRate && !(await limits.allows(queueRate.key, queueRate.limit, queueRate.period))) {
        break scan;
      }
      if (
        limit?.rate &&
        !(await limits.allows(limit.key, limit.rate.limit, limit.rate.period_ms))
      ) {
        blocked.add(limit.key);
        continue;
      }
      accepted.push(row.id);
      if (queueActive !== undefined) queueActive++;
      if (key !== null) key.active++;
      if (ofTenant !== null) ofTenant.active++;
      if (queueRate) limits.take(queueRate.key, queueRate.period);
      if (limit?.rate) limits.take(limit.key, limit.rate.period_ms);
    }
  }
  if (accepted.length === 0) return [];
  const { rows } = await client.query<ClaimedRow>(sql.claimIds, [...params, accepted], true);
  return rows;
}
