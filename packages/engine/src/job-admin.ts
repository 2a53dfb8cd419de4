/**
 * Finding jobs and acting on them (admin API, bulk operations, dead letter
 * extension): listings with cursor or page pagination, counts, job detail,
 * and retry / cancel / delete of one job or of every job a filter matches.
 *
 * Each job of a bulk action is decided in core (`decideAdminAction`) and
 * committed guarded on the rev read, a page of jobs per store commit; when
 * a page's commit finds a stale guard (someone changed a job meanwhile), the
 * page is redone job by job through the engine's read-decide-commit loop, so
 * every job ends succeeded or failed with its reason, never silently skipped.
 * Jobs of a workflow always take that path (their workflow advances in the
 * same commit).
 */
import {
  type BulkAction,
  decideAdminAction,
  decodeCursor,
  encodeCursor,
  inTenant,
  type JobFilter,
  type JobRecord,
  notFound,
  OjsError,
  type OjsEvent,
  type PageOrder,
  type TenantScope,
} from '@ojs/core';
import type { EngineContext } from './context.ts';

export interface JobListRequest {
  filter: JobFilter;
  limit: number;
  order?: PageOrder;
  cursor?: string;
  /** 1-based page (page/per_page listings); ignored when a cursor is given. */
  page?: number;
  /**
   * false: no total (a filter no index serves, such as error_type alone,
   * counts by reading every job; the page itself stops at limit + 1).
   */
  countTotal?: boolean;
}

export interface JobListPage {
  jobs: JobRecord[];
  /** null when the request asked for no total (countTotal: false). */
  total: number | null;
  hasMore: boolean;
  nextCursor?: string;
  page: number;
}

export interface BulkResult {
  action: BulkAction;
  matched: number;
  succeeded: number;
  failed: number;
  errors: { job_id: string; error: { code: string; message: string } }[];
  /** More jobs matched than one request acts on (maxJobs); run it again for the rest. */
  truncated: boolean;
  /** When truncated: where the next request continues (`cursor`), so no job is visited twice. */
  next_cursor?: string;
}

/** One step of a bulk action: at most `limit` jobs, after `cursor` (a previous next_cursor). */
export interface BulkStep {
  limit?: number;
  cursor?: string;
}

/** Jobs decided and committed together in one bulk step. */
const BULK_PAGE = 200;
/** Failed items reported in a bulk result (the counts cover all). */
const MAX_REPORTED_ERRORS = 100;

export class JobAdmin {
  readonly #engine: EngineContext;
  /** Most jobs one bulk request acts on. */
  readonly maxBulkJobs: number;

  constructor(engine: EngineContext, maxBulkJobs = 10_000) {
    this.#engine = engine;
    this.maxBulkJobs = maxBulkJobs;
  }

  /** A page of jobs; with `tenant`, of that tenant's jobs only. */
  async list(request: JobListRequest, tenant?: TenantScope): Promise<JobListPage> {
    if (tenant !== undefined)
      request = { ...request, filter: { ...request.filter, tenant: tenant.id } };
    const order = request.order ?? 'desc';
    const store = this.#engine.store;
    const afterSeq = request.cursor === undefined ? undefined : decodeCursor(request.cursor, order);
    const page = request.cursor === undefined ? (request.page ?? 1) : 1;
    const offset = request.cursor === undefined ? (page - 1) * request.limit : 0;
    const [rows, total] = await Promise.all([
      // One more than asked: whether another page exists, without a second count.
      store.listJobs({ filter: request.filter, limit: request.limit + 1, order, afterSeq, offset }),
      request.countTotal === false ? null : store.countJobs(request.filter),
    ]);
    const jobs = rows.slice(0, request.limit);
    const hasMore = rows.length > request.limit;
    const last = jobs.at(-1);
    return {
      jobs,
      total,
      hasMore,
      page,
      ...(hasMore && last?.seq !== undefined ? { nextCursor: encodeCursor(last.seq, order) } : {}),
    };
  }

  /**
   * Retry, cancel or delete one job (admin endpoints); throws 404 / 409.
   * With `tenant`, another tenant's job is not found.
   */
  async act(action: BulkAction, id: string, tenant?: TenantScope): Promise<JobRecord> {
    const engine = this.#engine;
    if (action !== 'delete') {
      const { after } = await engine.transitionJob(id, (job, now) => {
        if (!inTenant(job, tenant)) throw notFound('job', id);
        const decision = decideAdminAction(action, job, now);
        if (decision.kind !== 'update') throw new Error('unreachable');
        return decision;
      });
      if (after.state === 'available') engine.notifier.notify();
      if (after.state === 'cancelled') engine.observers.settled(after);
      return after;
    }
    for (let tries = 0; tries < 20; tries++) {
      const job = await engine.store.getJob(id);
      if (job === null || !inTenant(job, tenant)) throw notFound('job', id);
      const decision = decideAdminAction('delete', job, engine.now());
      const deleted = await engine.store.commit({
        deletes: [{ id, expectRev: job.rev }],
        events: decision.events,
      });
      if (deleted) return job;
    }
    throw new OjsError('conflict', `Job '${id}' is changing too fast to delete; retry.`);
  }

  /**
   * Applies `action` to every job `filter` matches (up to maxBulkJobs),
   * oldest first. Jobs the action does not apply to fail with the reason.
   */
  /** With `tenant`, the action reaches that tenant's jobs only. */
  async bulk(
    action: BulkAction,
    filter: JobFilter,
    step: BulkStep = {},
    tenant?: TenantScope,
  ): Promise<BulkResult> {
    if (tenant !== undefined) filter = { ...filter, tenant: tenant.id };
    const store = this.#engine.store;
    const result: BulkResult = {
      action,
      matched: await store.countJobs(filter),
      succeeded: 0,
      failed: 0,
      errors: [],
      truncated: false,
    };
    // Steps (a CLI's progress bar): each continues after the last job the previous one saw.
    let afterSeq = step.cursor === undefined ? undefined : decodeCursor(step.cursor, 'asc');
    const maxJobs = Math.min(step.limit ?? this.maxBulkJobs, this.maxBulkJobs);
    let seen = 0;
    while (seen < maxJobs) {
      const limit = Math.min(BULK_PAGE, maxJobs - seen);
      const jobs = await store.listJobs({ filter, limit, order: 'asc', afterSeq });
      if (jobs.length === 0) break;
      seen += jobs.length;
      afterSeq = jobs.at(-1)!.seq;
      await this.#applyPage(action, jobs, result);
      if (jobs.length < limit) break;
    }
    if (seen >= maxJobs) {
      const more = await store.listJobs({ filter, limit: 1, order: 'asc', afterSeq });
      result.truncated = more.length > 0;
      if (result.truncated && afterSeq !== undefined) {
        result.next_cursor = encodeCursor(afterSeq, 'asc');
      }
    }
    if (action === 'retry' && result.succeeded > 0) this.#engine.notifier.notify();
    return result;
  }

  async #applyPage(action: BulkAction, jobs: JobRecord[], result: BulkResult): Promise<void> {
    const engine = this.#engine;
    const now = engine.now();
    const updates: { job: JobRecord; expectRev: number }[] = [];
    const deletes: { id: string; expectRev: number }[] = [];
    const events: OjsEvent[] = [];
    const oneByOne: JobRecord[] = [];
    for (const job of jobs) {
      if (job.workflow_id !== undefined) {
        oneByOne.push(job);
        continue;
      }
      try {
        const decision = decideAdminAction(action, job, now);
        events.push(...decision.events);
        if (decision.kind === 'update') updates.push({ job: decision.job, expectRev: job.rev });
        else deletes.push({ id: job.id, expectRev: job.rev });
      } catch (error) {
        this.#fail(result, job.id, error);
      }
    }
    const batch = updates.length + deletes.length;
    if (batch > 0) {
      if (await engine.store.commit({ now, updates, deletes, events })) {
        result.succeeded += batch;
        // Cancels are job outcomes for logs and metrics (a retry re-enqueues, a delete removes).
        for (const { job } of updates) if (job.state === 'cancelled') engine.observers.settled(job);
      } else {
        // A job changed since it was read: redo this page's jobs one at a time.
        const ids = new Set([...updates.map((u) => u.job.id), ...deletes.map((d) => d.id)]);
        oneByOne.push(...jobs.filter((job) => ids.has(job.id)));
      }
    }
    for (const job of oneByOne) {
      try {
        await this.act(action, job.id);
        result.succeeded++;
      } catch (error) {
        this.#fail(result, job.id, error);
      }
    }
  }

  #fail(result: BulkResult, jobId: string, error: unknown): void {
    if (!(error instanceof OjsError)) throw error;
    result.failed++;
    if (result.errors.length < MAX_REPORTED_ERRORS) {
      result.errors.push({ job_id: jobId, error: { code: error.code, message: error.message } });
    }
  }
}
