/**
 * The store seam (DESIGN §4). A Store speaks OJS semantics and commits what
 * core decided: every state change is a guarded write (the job's `rev` read
 * before the decision must still be the stored one), and everything that
 * belongs to one transition (the job, new jobs, workflow records, events)
 * commits atomically or not at all.
 */
import type { Clock } from './clock.ts';
import type { JobRecord } from './job.ts';
import type { JobState } from './states.ts';

export interface OjsEvent {
  specversion: '1.0';
  id: string;
  type: string;
  source: string;
  time: string;
  subject?: string;
  datacontenttype?: string;
  data: Record<string, unknown>;
}

export interface EventFilter {
  types?: string[];
  queues?: string[];
  jobTypes?: string[];
  /** Return events after this event id (ids sort by time). */
  after?: string;
  limit: number;
}

export interface ClaimRequest {
  queues: string[];
  count: number;
  workerId?: string;
  /** Overrides each job's own visibility_timeout_ms for this claim. */
  visibilityTimeoutMs?: number;
  now: number;
}

/** A guarded update: applied only if the stored job's rev is still `expectRev`. */
export interface JobWrite {
  job: JobRecord;
  expectRev: number;
}

export interface Commit {
  updates?: JobWrite[];
  inserts?: JobRecord[];
  /** Guarded deletes (dead letter delete). */
  deletes?: { id: string; expectRev: number }[];
  events?: OjsEvent[];
}

export type InsertResult =
  | { status: 'inserted'; job: JobRecord }
  /** Same client id already stored. */
  | { status: 'duplicate_id'; existing: JobRecord }
  /** Unique conflict resolved by `ignore`: nothing inserted, existing returned. */
  | { status: 'existing'; existing: JobRecord }
  /** Unique conflict with `reject`. */
  | { status: 'rejected'; existing: JobRecord };

export interface QueueInfo {
  name: string;
  paused: boolean;
  created_at?: string;
}

export type StateCounts = Record<JobState, number>;

export interface QueueStats {
  name: string;
  paused: boolean;
  counts: StateCounts;
  /** Jobs completed in the last 60 s / last hour, for throughput. */
  completed_last_minute: number;
  completed_last_hour: number;
  failed_last_hour: number;
}

export interface Page<T> {
  items: T[];
  total: number;
}

export interface Store {
  /** 'sqlite', 'postgres', 'redis'. */
  readonly backend: string;
  /** The clock that decides leases and schedules (the database's for shared stores). */
  readonly clock?: Clock;

  init(): Promise<void>;
  close(): Promise<void>;
  /** Cheap liveness check of the backing store; throws when unreachable. */
  ping(): Promise<void>;

  getJob(id: string): Promise<JobRecord | null>;
  /**
   * Inserts jobs atomically (all or none), assigning `seq` in array order and
   * enforcing id and unique-key uniqueness. If any result is `duplicate_id` or
   * `rejected`, nothing is stored. `replace` conflicts cancel the old job in
   * the same atomic step.
   */
  insertJobs(jobs: JobRecord[], events: OjsEvent[], now: number): Promise<InsertResult[]>;
  /**
   * Claims up to `count` available jobs in one atomic step: queues in the
   * given order, priority descending, then `seq`; skips paused queues and
   * expired jobs; sets active, attempt + 1, started_at, worker_id, lease.
   */
  claimJobs(request: ClaimRequest): Promise<JobRecord[]>;
  /** Applies a commit atomically; false (and nothing applied) if any guard failed. */
  commit(commit: Commit): Promise<boolean>;
  /**
   * Time-driven transitions: due scheduled/retryable jobs -> available;
   * unstarted jobs past expires_at -> discarded (job.expired event).
   * Returns the number of jobs made available.
   */
  promoteDueJobs(now: number): Promise<number>;
  /** Active jobs whose visibility or execution deadline has passed. */
  findExpiredLeases(now: number, limit: number): Promise<JobRecord[]>;

  listDeadLetter(
    queue: string | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<JobRecord>>;
  listQueues(): Promise<QueueInfo[]>;
  queueStats(name: string, now: number): Promise<QueueStats>;
  setQueuePaused(name: string, paused: boolean, now: number): Promise<QueueInfo>;

  appendEvents(events: OjsEvent[]): Promise<void>;
  listEvents(filter: EventFilter): Promise<OjsEvent[]>;
  /** Deletes events beyond the retention count; returns how many were removed. */
  pruneEvents(keep: number): Promise<number>;

  /** Wipes everything (test mode only). */
  reset(): Promise<void>;
}
