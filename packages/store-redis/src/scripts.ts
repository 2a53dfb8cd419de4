/**
 * The store's server-side functions: lua/apply.lua, read.lua and
 * prune-events.lua form one Redis function library (FUNCTION LOAD, Redis
 * 7+), loaded at start and again if Redis answers that a function is
 * missing (a restart without persistence, a FUNCTION FLUSH). A library's
 * top level runs once, when it is loaded: the tables and helpers every call
 * shares are not rebuilt per call as an EVAL script's body is (14 against
 * 4 us of Redis CPU for an empty call). Library and function names carry a
 * hash of the source, so servers of different versions on one Redis each
 * call their own.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type JobRecord, jobColumns, type OjsEvent, toIso } from '@ojs/core';
import type { Redis } from 'ioredis';
import { type IndexChange, indexChange } from './indexes.ts';
import { encodeEvent, splitJob } from './records.ts';

const FRAGMENTS = ['apply', 'read', 'prune-events', 'webhooks'].map((name) =>
  readFileSync(new URL(`../lua/${name}.lua`, import.meta.url), 'utf8'),
);
const VERSION = createHash('sha256').update(FRAGMENTS.join('\n')).digest('hex').slice(0, 12);
const LIBRARY = `#!lua name=ojs_${VERSION}\n${FRAGMENTS.join('\n').replaceAll('__V__', `_${VERSION}`)}`;

type Reply = unknown;

/** The client's view of the library: each call loads it again once if Redis lost it. */
export class Functions {
  readonly #redis: Redis;
  constructor(redis: Redis) {
    this.#redis = redis;
  }

  /** FUNCTION LOAD REPLACE of this version's library. */
  async load(): Promise<void> {
    await this.#redis.call('FUNCTION', 'LOAD', 'REPLACE', LIBRARY);
  }

  async #fcall(name: string, key: string, args: string[]): Promise<unknown> {
    // One array, never spread into a call: a batch of 10,000 jobs is 150,000
    // arguments, beyond what a JavaScript call can take.
    const command = [`${name}_${VERSION}`, '1', key, ...args];
    try {
      return await this.#redis.call('FCALL', command);
    } catch (error) {
      // Not run at all: loading the library and calling again applies it once.
      if (!String((error as Error).message).includes('Function not found')) throw error;
      await this.load();
      return this.#redis.call('FCALL', command);
    }
  }

  apply(key: string, args: string[]): Promise<[Reply[], Reply[]]> {
    return this.#fcall('ojs_apply', key, args) as Promise<[Reply[], Reply[]]>;
  }
  read(key: string, args: string[]): Promise<Reply[]> {
    return this.#fcall('ojs_read', key, args) as Promise<Reply[]>;
  }
  pruneEvents(key: string, keep: string, limit: string): Promise<number> {
    return this.#fcall('ojs_prune_events', key, [keep, limit]) as Promise<number>;
  }
  insertWebhookDeliveries(key: string, args: string[]): Promise<number> {
    return this.#fcall('ojs_wh_insert', key, args) as Promise<number>;
  }
  updateWebhookDelivery(key: string, args: string[]): Promise<number> {
    return this.#fcall('ojs_wh_update', key, args) as Promise<number>;
  }
  pruneWebhookDeliveries(key: string, args: string[]): Promise<number> {
    return this.#fcall('ojs_wh_prune', key, args) as Promise<number>;
  }
}

const text = (value: string | number | boolean | null | undefined): string =>
  value === null || value === undefined
    ? ''
    : typeof value === 'boolean'
      ? value
        ? '1'
        : ''
      : String(value);

/** The index changes of a write as record arguments: counts, leave keys, then enter pairs. */
function changeArgs(change: IndexChange): string[] {
  return [
    String(change.leave.length),
    String(change.enter.length),
    ...change.leave,
    ...change.enter.flat(),
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
  /** The tenant has fewer than `limit` active jobs (its max_concurrency). */
  tenantConcurrency(tenant: string, limit: number): this {
    return this.#push('Gtconc', tenant, String(limit));
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

  /**
   * Writes `job`, which was `before` as stored (null: a new job), moving its
   * index entries from the one to the other. Guard the write on `before`'s
   * rev: the index change is only right for that record.
   */
  put(
    job: JobRecord,
    before: JobRecord | null,
    parts: { base: string; life: string } = splitJob(job, before),
  ): this {
    const change = indexChange(before === null ? null : jobColumns(before), jobColumns(job));
    return this.#push(
      'Wput',
      job.id,
      parts.base,
      parts.life,
      String(job.rev),
      job.state,
      job.queue,
      ...changeArgs(change),
    );
  }
  /** Deletes `job` as stored (guard on its rev) with its index entries and unique key. */
  delete(job: JobRecord): this {
    const change = indexChange(jobColumns(job), null);
    return this.#push(
      'Wdel',
      job.id,
      job.unique_key ?? '',
      String(change.leave.length),
      ...change.leave,
    );
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
    for (const event of events) this.#push('Wev', event.id, encodeEvent(event));
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
