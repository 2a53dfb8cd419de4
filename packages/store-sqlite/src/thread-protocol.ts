/**
 * The messages between SqliteThreadStore (the server's thread) and the
 * store thread that owns the SQLite connection. Calls and replies travel in
 * arrays, so the calls of one event-loop turn cost one message and land in
 * one group commit. Errors are sent as data and rebuilt on the other side,
 * so an OjsError (e.g. a 409 per settled item) keeps its code and details.
 */
import {
  type ErrorCode,
  type InsertResult,
  type JobRecord,
  OjsError,
  type SettleResult,
} from '@ojs/core';

/** The Store methods the thread answers (everything but the optional wake-up hook). */
export const STORE_METHODS = [
  'init',
  'close',
  'ping',
  'getJob',
  'insertJobs',
  'claimJobs',
  'commit',
  'settleJobs',
  'extendLeases',
  'promoteDueJobs',
  'findExpiredLeases',
  'findExpiringWorkflowJobs',
  'listDeadLetter',
  'listJobs',
  'countJobs',
  'countJobsByQueue',
  'pruneJobs',
  'rateLimitState',
  'listQueues',
  'queueStats',
  'setQueuePaused',
  'setQueueConfig',
  'getWorkflow',
  'listWorkflowJobs',
  'upsertCron',
  'getCron',
  'listCrons',
  'deleteCron',
  'dueCrons',
  'getSetting',
  'listSettings',
  'putSetting',
  'deleteSetting',
  'appendEvents',
  'listEvents',
  'pruneEvents',
  'insertWebhookDeliveries',
  'dueWebhookDeliveries',
  'updateWebhookDelivery',
  'getWebhookDelivery',
  'listWebhookDeliveries',
  'pruneWebhookDeliveries',
  'reset',
] as const;

/**
 * The thread's own call besides the Store methods: start (true) or stop
 * (false) forwarding cross-connection wake-ups as `{ wake: true }` messages.
 */
export const WATCH_METHOD = 'watchJobsAvailable';

export type StoreMethod = (typeof STORE_METHODS)[number] | typeof WATCH_METHOD;

export interface Call {
  id: number;
  method: StoreMethod;
  args: unknown[];
}

export interface SentError {
  ojs: boolean;
  name: string;
  message: string;
  code?: unknown;
  details?: Record<string, unknown>;
  stack?: string;
}

export type Reply =
  | { id: number; value: unknown }
  | { id: number; error: SentError }
  /** Unsolicited: another connection committed (SqliteStore.onJobsAvailable). */
  | { wake: true };

export function sendError(error: unknown): SentError {
  if (error instanceof OjsError) {
    return {
      ojs: true,
      name: error.name,
      message: error.message,
      code: error.code,
      details: error.details,
    };
  }
  const e = error instanceof Error ? error : new Error(String(error));
  return {
    ojs: false,
    name: e.name,
    message: e.message,
    code: (e as { code?: unknown }).code,
    stack: e.stack,
  };
}

export function receiveError(sent: SentError): Error {
  if (sent.ojs) return new OjsError(sent.code as ErrorCode, sent.message, sent.details);
  const error = new Error(sent.message) as Error & { code?: unknown };
  error.name = sent.name;
  if (sent.code !== undefined) error.code = sent.code;
  if (sent.stack !== undefined) error.stack = `${sent.stack}\n    at (store thread)`;
  return error;
}

type SentSettleResult =
  | Exclude<SettleResult, { status: 'conflict' }>
  | { status: 'conflict'; error: SentError; job: JobRecord };

/** settleJobs answers errors per item: send them as data. */
export function sendSettleResults(results: SettleResult[]): SentSettleResult[] {
  return results.map((r) => (r.status === 'conflict' ? { ...r, error: sendError(r.error) } : r));
}

export function receiveSettleResults(results: SentSettleResult[]): SettleResult[] {
  return results.map((r) =>
    r.status === 'conflict'
      ? ({ ...r, error: receiveError(r.error) } as SettleResult)
      : (r as SettleResult),
  );
}

/**
 * insertJobs across the thread: an inserted job is the caller's job plus its
 * `seq`, so only the number crosses back (a clone of every job in the reply
 * cost more than the insert itself).
 */
type SentInsertResult =
  | Exclude<InsertResult, { status: 'inserted' }>
  | { status: 'inserted'; seq: number | undefined };

export function sendInsertResults(results: InsertResult[]): SentInsertResult[] {
  return results.map((r) => (r.status === 'inserted' ? { status: 'inserted', seq: r.job.seq } : r));
}

/** `jobs` are the caller's: results are one per job, in order. */
export function receiveInsertResults(
  results: SentInsertResult[],
  jobs: readonly JobRecord[],
): InsertResult[] {
  return results.map((r, index) =>
    r.status === 'inserted' ? { status: 'inserted', job: { ...jobs[index]!, seq: r.seq } } : r,
  );
}
