/**
 * The store's server-side scripts (lua/*.lua) and the builder of an apply
 * script's records. ioredis runs each script by EVALSHA and loads it again
 * with EVAL when Redis answers NOSCRIPT (after a restart or SCRIPT FLUSH).
 */
import { readFileSync } from 'node:fs';
import { type JobRecord, jobColumns, type OjsEvent, toIso } from '@ojs/core';
import type { Redis } from 'ioredis';

const lua = (name: string): string =>
  readFileSync(new URL(`../lua/${name}.lua`, import.meta.url), 'utf8');

export const SCRIPTS = {
  ojsApply: lua('apply'),
  ojsRead: lua('read'),
  ojsPruneEvents: lua('prune-events'),
} as const;

type Reply = unknown;

/** The client with the scripts defined (defineScripts). */
export interface ScriptedRedis extends Redis {
  ojsApply(key: string, ...args: string[]): Promise<[Reply[], Reply[]]>;
  ojsRead(key: string, ...args: string[]): Promise<Reply[]>;
  ojsPruneEvents(key: string, keep: string, limit: string): Promise<number>;
}

export function defineScripts(redis: Redis): ScriptedRedis {
  for (const [name, source] of Object.entries(SCRIPTS)) {
    redis.defineCommand(name, { numberOfKeys: 1, lua: source });
  }
  return redis as ScriptedRedis;
}

const text = (value: string | number | boolean | null | undefined): string =>
  value === null || value === undefined
    ? ''
    : typeof value === 'boolean'
      ? value
        ? '1'
        : ''
      : String(value);

/** The arguments of a Wput record: the job's id, its document and its index columns (apply.lua FIELDS). */
export function putArgs(job: JobRecord, doc: string): string[] {
  const c = jobColumns(job);
  return [
    job.id,
    doc,
    c.queue,
    c.state,
    String(c.priority),
    c.type,
    String(c.rev),
    String(c.attempt),
    text(c.worker_id),
    text(c.run_at),
    text(c.deadline),
    text(c.expires_at),
    text(c.finished_at),
    c.dead_letter ? '1' : '',
    text(c.workflow_id),
    text(c.rate_key),
    text(c.unique_key),
  ];
}

/**
 * The records of one apply call: groups of guards (G*) and writes (W*),
 * each group ended by 'E'. See lua/apply.lua for what each record checks or
 * writes.
 */
export class Ops {
  readonly args: string[] = [];
  groups = 0;
  #open = false;

  #push(op: string, ...values: string[]): this {
    this.args.push(op, ...values);
    this.#open = true;
    return this;
  }

  /** The job exists with this rev ('' any) and state ('' any). */
  job(id: string, rev: number | '', state = ''): this {
    return this.#push('Gjob', id, String(rev), state);
  }
  absent(id: string): this {
    return this.#push('Gabsent', id);
  }
  /** The unique key is held by this job id ('' none). */
  uniqueHolder(key: string, holder: string): this {
    return this.#push('Gunique', key, holder);
  }
  /** The queue is not paused, below its concurrency and within its rate window (a claim's guard). */
  queueAdmits(queue: string): this {
    return this.#push('Gqueue', queue);
  }
  keyConcurrency(key: string, limit: number): this {
    return this.#push('Gkconc', key, String(limit));
  }
  keyRate(key: string, limit: number, periodMs: number): this {
    return this.#push('Gkrate', key, String(limit), String(periodMs));
  }
  workflowRev(id: string, rev: number | null): this {
    return this.#push('Gwf', id, rev === null ? '' : String(rev));
  }
  cronRev(name: string, rev: number | null): this {
    return this.#push('Gcron', name, rev === null ? '' : String(rev));
  }
  settingRev(namespace: string, key: string, rev: number | null): this {
    return this.#push('Gset', namespace, key, rev === null ? '' : String(rev));
  }

  put(job: JobRecord, doc = JSON.stringify(job)): this {
    return this.#push('Wput', ...putArgs(job, doc));
  }
  delete(id: string): this {
    return this.#push('Wdel', id);
  }
  lock(key: string, id: string, at: number): this {
    return this.#push('Wlock', key, id, String(at));
  }
  takeQueueRate(queue: string): this {
    return this.#push('Wqrate', queue);
  }
  takeKeyRate(key: string, periodMs: number): this {
    return this.#push('Wkrate', key, String(periodMs));
  }
  putWorkflow(id: string, rev: number, doc: string): this {
    return this.#push('Wwf', id, String(rev), doc);
  }
  putCron(
    name: string,
    rev: number,
    enabled: boolean,
    nextRunMs: number | null,
    doc: string,
  ): this {
    return this.#push('Wcron', name, String(rev), enabled ? '1' : '', text(nextRunMs), doc);
  }
  deleteCron(name: string): this {
    return this.#push('Wcrondel', name);
  }
  putSetting(namespace: string, key: string, rev: number, record: string): this {
    return this.#push('Wset', namespace, key, String(rev), record);
  }
  deleteSetting(namespace: string, key: string): this {
    return this.#push('Wsetdel', namespace, key);
  }
  events(events: readonly OjsEvent[]): this {
    for (const event of events) this.#push('Wev', event.id, JSON.stringify(event));
    return this;
  }
  pauseQueue(queue: string, paused: boolean): this {
    return this.#push('Wqpause', queue, paused ? '1' : '');
  }
  /** undefined keeps a value, null clears it. */
  configureQueue(
    queue: string,
    concurrency: number | null | undefined,
    rate: { limit: number; period_ms: number } | null | undefined,
  ): this {
    return this.#push(
      'Wqconf',
      queue,
      concurrency === undefined ? '-' : text(concurrency),
      rate === undefined ? '-' : rate === null ? '' : String(rate.limit),
      rate ? String(rate.period_ms) : '',
    );
  }

  /** Ends the current group. */
  end(): this {
    this.args.push('E');
    this.groups++;
    this.#open = false;
    return this;
  }

  get empty(): boolean {
    return this.groups === 0 && !this.#open;
  }

  /** The script's arguments: header, then the records (an open group is closed). */
  argv(mode: 'all' | 'each', now: number, wanted = 0): string[] {
    if (this.#open) this.end();
    return [mode, String(now), toIso(now), String(wanted), ...this.args];
  }
}

/** What apply.lua answered: per group 1 (applied), 0 (not tried) or a reason; the seqs given to new jobs. */
export interface Applied {
  statuses: (1 | 0 | string)[];
  seqs: Map<string, number>;
}

export function parseApplied(reply: [Reply[], Reply[]]): Applied {
  const [statuses, flat] = reply;
  const seqs = new Map<string, number>();
  for (let i = 0; i < flat.length; i += 2) seqs.set(String(flat[i]), Number(flat[i + 1]));
  return {
    statuses: statuses.map((s) => (s === 1 || s === 0 ? s : String(s))) as Applied['statuses'],
    seqs,
  };
}
