/**
 * The worker registry (WP §8, admin API workers, graceful shutdown): every
 * heartbeat records the worker (state it reports, active jobs, last
 * heartbeat) as a settings document shared by all server processes; an
 * operator's quiet / terminate is stored on the same document and answered
 * in the worker's next heartbeat. A worker that reported quiet, drain or
 * terminate, or was told to, gets no new jobs from FETCH.
 *
 * Both writers (heartbeat, operator) update the document guarded on its
 * rev and retry on a stale guard, so neither overwrites the other's field.
 * FETCH reads the record through the engine's short settings cache: a
 * state reported through another server process is seen within its TTL
 * (the worker itself stops fetching at once; this is the server's check).
 */
import { conflict, invalidRequest, notFound, type SettingRecord, toIso } from '@ojs/core';
import type { EngineContext, WorkerDirective } from './context.ts';

export const WORKER_NAMESPACE = 'worker-state';

/** States a worker reports (WP §8.1; `drain` is the graceful-shutdown extension's). */
export const WORKER_STATES = ['running', 'quiet', 'drain', 'terminate', 'terminated'] as const;
export type WorkerState = (typeof WORKER_STATES)[number];

/** A worker whose last heartbeat is older than this is listed as stale (WP: 30 s). */
export const HEARTBEAT_TIMEOUT_MS = 30_000;
/** Records of workers silent for this long are removed by the retention pruner. */
export const WORKER_RECORD_TTL_MS = 24 * 3600 * 1000;

export interface WorkerReport {
  workerId: string;
  state?: WorkerState;
  activeJobIds?: string[];
  /** A count, when the worker reports one instead of ids. */
  activeJobs?: number;
  hostname?: string;
  pid?: number;
  queues?: string[];
  concurrency?: number;
  version?: string;
  /** Fair scheduling: the one pool the worker declares. */
  pool?: string;
}

export interface WorkerRecord {
  id: string;
  state: WorkerState;
  /** The operator's instruction, answered in heartbeats until the worker stops. */
  directive?: 'quiet' | 'terminate';
  active_jobs: number;
  active_job_ids: string[];
  hostname?: string;
  pid?: number;
  queues?: string[];
  concurrency?: number;
  version?: string;
  pool?: string;
  started_at: string;
  last_heartbeat_at: string;
}

const MAX_TRIES = 20;
/** Worker ids this process has listed from a fetch: bounded, like the settings cache. */
const MAX_SEEN = 10_000;
/** A fetching worker's record is checked again this often (the pruner may have removed it). */
const SEEN_RECHECK_MS = 3600 * 1000;

/** A worker's health (graceful shutdown, C22): 200 only while running. */
export interface WorkerHealth {
  worker_id: string;
  state: 'running' | 'draining' | 'shutting_down' | 'stale';
  reported_state: WorkerState;
  last_heartbeat_at: string;
}

export function parseWorkerState(value: unknown): WorkerState | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !(WORKER_STATES as readonly string[]).includes(value)) {
    throw invalidRequest(`state must be one of ${WORKER_STATES.join(', ')}.`, { field: 'state' });
  }
  return value as WorkerState;
}

export class WorkerRegistry {
  readonly #engine: EngineContext;
  /** Worker id -> when this process last made sure it is listed. */
  readonly #seen = new Map<string, number>();

  constructor(engine: EngineContext) {
    this.#engine = engine;
  }

  /** Guarded read-modify-write of one worker's document. */
  async #update(
    id: string,
    change: (current: WorkerRecord | null) => WorkerRecord | null,
  ): Promise<WorkerRecord | null> {
    const { store, settings } = this.#engine;
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const existing = await store.getSetting(WORKER_NAMESPACE, id);
      const next = change(existing === null ? null : (existing.value as unknown as WorkerRecord));
      if (next === null) return null;
      const value = next as unknown as Record<string, unknown>;
      const now = this.#engine.now();
      if (
        (await store.putSetting(WORKER_NAMESPACE, id, value, existing?.rev ?? null, now)) !== null
      ) {
        settings.forget(WORKER_NAMESPACE, id);
        return next;
      }
    }
    throw conflict(`Worker '${id}' is being updated too fast; retry.`, { worker_id: id });
  }

  /** Records a heartbeat; answers the operator's directive, if any. */
  async heartbeat(report: WorkerReport): Promise<WorkerDirective> {
    const at = toIso(this.#engine.now());
    const record = await this.#update(report.workerId, (current) => {
      const ids = report.activeJobIds ?? current?.active_job_ids ?? [];
      const next: WorkerRecord = {
        ...current,
        id: report.workerId,
        state: report.state ?? current?.state ?? 'running',
        active_job_ids: ids,
        active_jobs: report.activeJobs ?? ids.length,
        started_at: current?.started_at ?? at,
        last_heartbeat_at: at,
      };
      const optional = {
        hostname: report.hostname,
        pid: report.pid,
        queues: report.queues,
        concurrency: report.concurrency,
        version: report.version,
        pool: report.pool,
      };
      for (const [key, value] of Object.entries(optional)) {
        if (value !== undefined) (next as unknown as Record<string, unknown>)[key] = value;
      }
      return next;
    });
    return record?.directive ?? 'running';
  }

  /**
   * A fetching worker is listed from its first fetch (with its queues and
   * pool), not only once it heartbeats: one guarded write per worker id per
   * process (again after an hour, in case the pruner removed a worker that
   * never heartbeats), none in between. A record that exists (a heartbeat,
   * another process) keeps its state; only queues and pool it lacks are added.
   */
  seen(workerId: string, queues: string[], pool: string | undefined): Promise<void> | undefined {
    const now = this.#engine.now();
    const last = this.#seen.get(workerId);
    // Known: nothing to do, and no promise (this runs on every fetch).
    if (last !== undefined && now - last < SEEN_RECHECK_MS) return undefined;
    if (this.#seen.size >= MAX_SEEN) this.#seen.clear();
    this.#seen.set(workerId, now);
    return this.#list(workerId, queues, pool, toIso(now));
  }

  async #list(
    workerId: string,
    queues: string[],
    pool: string | undefined,
    at: string,
  ): Promise<void> {
    try {
      await this.#update(workerId, (current) => {
        if (
          current !== null &&
          current.queues !== undefined &&
          (pool === undefined || current.pool !== undefined)
        ) {
          return null;
        }
        const next: WorkerRecord = current ?? {
          id: workerId,
          state: 'running',
          active_jobs: 0,
          active_job_ids: [],
          started_at: at,
          last_heartbeat_at: at,
        };
        return {
          ...next,
          queues: next.queues ?? queues,
          ...(pool !== undefined && next.pool === undefined ? { pool } : {}),
        };
      });
    } catch (error) {
      // Listed on a later fetch instead; the fetch itself goes on.
      this.#seen.delete(workerId);
      this.#engine.errors.failed('worker registry', error);
    }
  }

  /** GET /workers/{id}/health (C22): draining after a quiet or drain beat, or an operator's quiet. */
  async health(id: string): Promise<WorkerHealth> {
    const worker = await this.get(id);
    const stopping =
      worker.state === 'terminate' ||
      worker.state === 'terminated' ||
      worker.directive === 'terminate';
    const draining =
      worker.state === 'quiet' || worker.state === 'drain' || worker.directive === 'quiet';
    const state = stopping
      ? 'shutting_down'
      : draining
        ? 'draining'
        : this.displayState(worker) === 'stale'
          ? 'stale'
          : 'running';
    return {
      worker_id: worker.id,
      state,
      reported_state: worker.state,
      last_heartbeat_at: worker.last_heartbeat_at,
    };
  }

  /** Operator: tell a worker to go quiet or terminate (delivered in its next heartbeat). */
  async direct(id: string, directive: 'quiet' | 'terminate'): Promise<WorkerRecord> {
    const record = await this.#update(id, (current) => {
      if (current === null) return null;
      // terminate is final (WP §8.1: no terminate -> quiet).
      if (current.directive === 'terminate') return current;
      return { ...current, directive };
    });
    if (record === null) throw notFound('worker', id);
    return record;
  }

  async get(id: string): Promise<WorkerRecord> {
    const record = await this.#engine.store.getSetting(WORKER_NAMESPACE, id);
    if (record === null) throw notFound('worker', id);
    return record.value as unknown as WorkerRecord;
  }

  async list(): Promise<WorkerRecord[]> {
    const records = await this.#engine.store.listSettings(WORKER_NAMESPACE);
    return records.map((r: SettingRecord) => r.value as unknown as WorkerRecord);
  }

  /** Listed state: the reported one, or `stale` after the heartbeat timeout. */
  displayState(record: WorkerRecord, now = this.#engine.now()): WorkerState | 'stale' {
    const last = Date.parse(record.last_heartbeat_at);
    return now - last > HEARTBEAT_TIMEOUT_MS ? 'stale' : record.state;
  }

  /** Whether FETCH may hand this worker new jobs (cached read, see the module comment). */
  async mayFetch(workerId: string): Promise<boolean> {
    const record = await this.#engine.settings.get(WORKER_NAMESPACE, workerId);
    if (record === null) return true;
    const worker = record.value as unknown as WorkerRecord;
    return worker.state === 'running' && worker.directive === undefined;
  }

  /** Removes records of workers silent for WORKER_RECORD_TTL_MS; returns how many. */
  async prune(): Promise<number> {
    const now = this.#engine.now();
    let removed = 0;
    for (const worker of await this.list()) {
      if (now - Date.parse(worker.last_heartbeat_at) > WORKER_RECORD_TTL_MS) {
        if (await this.#engine.store.deleteSetting(WORKER_NAMESPACE, worker.id)) removed++;
      }
    }
    if (removed > 0) this.#engine.settings.invalidate(WORKER_NAMESPACE);
    return removed;
  }
}
