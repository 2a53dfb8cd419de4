/**
 * Wire helpers of the admin API (ADM): page/per_page and cursor
 * pagination, the confirmation of destructive operations, and the job
 * detail with its attempt history.
 */
import {
  BULK_ACTIONS,
  type BulkAction,
  invalidRequest,
  type JobFilter,
  type JobRecord,
  MAX_OFFSET,
  parseJobFilter,
  toWire,
} from '@ojs/core';
import type { BulkStep, JobListPage, JobListRequest } from '@ojs/engine';

type Obj = Record<string, unknown>;

function positiveInt(query: Obj, name: string, fallback: number, max?: number): number {
  const raw = query[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw invalidRequest(`${name} must be an integer >= 1.`, { field: name });
  }
  return max === undefined ? value : Math.min(value, max);
}

/**
 * A job listing request from query parameters: the filter, `cursor` (stable
 * keyset pages) or `page` (1-based), `per_page` (ADM; default 20, max 100)
 * or `limit` (HB; default 50, max 200), `order` asc|desc, `sort` (only
 * created_at: seq order is creation order), `total=false` to skip counting
 * the matches (`pagination.total: null`).
 */
export function listRequest(query: Obj, admin: boolean): JobListRequest {
  const { cursor, page, per_page, limit, order, sort, offset, total, ...filterQuery } = query;
  if (total !== undefined && total !== 'true' && total !== 'false') {
    throw invalidRequest("total must be 'true' or 'false'.", { field: 'total' });
  }
  const max = admin ? 100 : 200;
  const size =
    per_page !== undefined
      ? positiveInt(query, 'per_page', 20, max)
      : positiveInt(query, 'limit', admin ? 20 : 50, max);
  if (sort !== undefined && sort !== 'created_at') {
    throw invalidRequest("sort supports 'created_at' (creation order).", { field: 'sort' });
  }
  if (order !== undefined && order !== 'asc' && order !== 'desc') {
    throw invalidRequest("order must be 'asc' or 'desc'.", { field: 'order' });
  }
  if (cursor !== undefined && typeof cursor !== 'string') {
    throw invalidRequest('cursor must be a string.', { field: 'cursor' });
  }
  // Pages past MAX_OFFSET rows are refused, not handed to the store as an
  // offset the database cannot represent.
  const lastPage = Math.floor(MAX_OFFSET / size) + 1;
  let pageNumber = positiveInt(query, 'page', 1);
  if (pageNumber > lastPage) {
    throw invalidRequest(`page must be at most ${lastPage} at this page size; prefer cursor.`, {
      field: 'page',
      max: lastPage,
    });
  }
  if (offset !== undefined && page === undefined) {
    const skip = Number(offset);
    if (!Number.isInteger(skip) || skip < 0 || skip > MAX_OFFSET || skip % size !== 0) {
      throw invalidRequest('offset must be a multiple of the page size; prefer cursor.', {
        field: 'offset',
        max: MAX_OFFSET,
      });
    }
    pageNumber = skip / size + 1;
  }
  return {
    filter: parseJobFilter(filterQuery),
    limit: size,
    order: (order as 'asc' | 'desc' | undefined) ?? 'desc',
    ...(total === 'false' ? { countTotal: false } : {}),
    ...(cursor === undefined || cursor === '' ? { page: pageNumber } : { cursor }),
  };
}

export function pagination(page: JobListPage, limit: number): Obj {
  return {
    total: page.total,
    page: page.page,
    per_page: limit,
    limit,
    has_more: page.hasMore,
    ...(page.nextCursor === undefined ? {} : { next_cursor: page.nextCursor }),
  };
}

/** Destructive operations need `confirm: true` in the body (ADM, MUST: else 400). */
export function requireConfirm(body: Obj): void {
  if (body.confirm !== true) {
    throw invalidRequest('This operation changes many jobs: send "confirm": true to proceed.', {
      field: 'confirm',
    });
  }
}

/**
 * `limit` (at most this many jobs in this request) and `cursor` (the
 * previous answer's next_cursor) of a bulk action taken in steps.
 */
export function bulkStep(body: Obj): BulkStep {
  const step: BulkStep = {};
  if (body.limit !== undefined) {
    if (!Number.isInteger(body.limit) || (body.limit as number) < 1) {
      throw invalidRequest('limit must be an integer >= 1.', { field: 'limit' });
    }
    step.limit = body.limit as number;
  }
  if (body.cursor !== undefined) {
    if (typeof body.cursor !== 'string' || body.cursor === '') {
      throw invalidRequest('cursor must be the next_cursor of a previous answer.', {
        field: 'cursor',
      });
    }
    step.cursor = body.cursor;
  }
  return step;
}

/** `{filter: {...}, confirm: true, limit?, cursor?}` of a bulk action. */
export function bulkFilter(body: Obj): JobFilter {
  requireConfirm(body);
  for (const key of Object.keys(body)) {
    if (!['filter', 'confirm', 'limit', 'cursor'].includes(key)) {
      throw invalidRequest(`${key} is not a bulk field; send {filter, confirm, limit, cursor}.`, {
        field: key,
      });
    }
  }
  const filter = body.filter ?? {};
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
    throw invalidRequest('filter must be an object.', { field: 'filter' });
  }
  return parseJobFilter(filter as Obj, true);
}

export function bulkAction(value: string): BulkAction {
  if (!(BULK_ACTIONS as readonly string[]).includes(value)) {
    throw invalidRequest(`Unknown bulk action '${value}'; use ${BULK_ACTIONS.join(', ')}.`);
  }
  return value as BulkAction;
}

/** The admin job detail: the wire job, flat (CS reads $.id), with each attempt and its error. */
export function jobDetail(job: JobRecord): Obj {
  const attempts = [];
  for (let n = 1; n <= job.attempt; n++) {
    const error = job.errors.find((e) => e.attempt === n);
    const current = n === job.attempt;
    const outcome = error
      ? 'failed'
      : current
        ? job.state === 'active'
          ? 'running'
          : job.state
        : 'lost';
    attempts.push({ attempt: n, outcome, ...(error === undefined ? {} : { error }) });
  }
  return { ...toWire(job), attempts };
}
