/**
 * Live event streams (http-binding §9.3): a subscriber follows the event
 * log, which stays the source of truth. Events are committed with their
 * transitions (decision 0009), so a stream reads them back after a cursor
 * (the last event id it delivered: SSE's Last-Event-ID) and is resumable
 * by construction; a slow client holds its own cursor instead of a buffer,
 * so nothing is ever dropped while the log still holds it.
 *
 * Wake-ups: local job changes wake the followers at once (an observer);
 * changes made by other server processes on a shared store are found by a
 * bounded poll (every 250 ms while anyone follows), which is also what
 * keeps a missed wake-up from costing more than that.
 *
 * PostgreSQL assigns an event's seq before its transaction commits, so a
 * transaction can commit a lower seq after a higher one was read. Each read
 * therefore starts before the last OVERLAP ids it saw and skips those it
 * already delivered, which catches such late commits in practice.
 */
import { type EventFilter, eventTenant, type OjsEvent } from '@ojs/core';
import type { EngineContext } from './context.ts';

export interface TailFilter {
  types?: string[];
  queues?: string[];
  jobTypes?: string[];
  /** Only events of this subject (a job id). */
  subject?: string;
  /** Only events about this tenant's jobs (a tenant's stream; not indexed). */
  tenant?: string;
}

const PAGE = 500;
const OVERLAP = 100;
const POLL_MS = 250;

export class EventTail {
  readonly #engine: EngineContext;
  readonly #waiters = new Set<() => void>();
  readonly #pollMs: number;
  #following = 0;

  constructor(engine: EngineContext, pollMs = POLL_MS) {
    this.#engine = engine;
    this.#pollMs = pollMs;
    const wake = () => {
      if (this.#waiters.size > 0) this.#wakeAll();
    };
    engine.observers.add({ enqueued: wake, started: wake, settled: wake });
  }

  /** How many streams follow the log now. */
  get following(): number {
    return this.#following;
  }

  #wakeAll(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Ends every wait now (shutdown). */
  wakeAll(): void {
    this.#wakeAll();
  }

  /** The newest event id matching the filter: where a stream without a cursor starts. */
  async latestId(filter: TailFilter = {}): Promise<string | undefined> {
    const [newest] = await this.#engine.store.listEvents({
      ...storeFilter(filter),
      limit: 1,
      newestFirst: true,
    });
    return newest?.id;
  }

  /**
   * Where a stream resuming after `lastId` starts. When that event is no
   * longer in the log (pruned, or never was), replaying "after" it would
   * replay the whole retained log: that is a gap, and the stream resumes
   * from now (RT §2). Detected with two reads by seq: the event after
   * `lastId` is the oldest retained one exactly when `lastId` is not there.
   */
  async resumePoint(
    filter: TailFilter,
    lastId: string,
  ): Promise<{ after: string | undefined; gap: boolean; oldest?: string }> {
    const store = this.#engine.store;
    const [[next], [oldest]] = await Promise.all([
      store.listEvents({ after: lastId, limit: 1 }),
      store.listEvents({ limit: 1 }),
    ]);
    if (next === undefined || oldest === undefined || next.id !== oldest.id) {
      return { after: lastId, gap: false };
    }
    return { after: await this.latestId(filter), gap: true, oldest: oldest.id };
  }

  /**
   * Yields the events after `after` (all retained events when undefined),
   * in log order, in batches, until `signal` aborts. The consumer's pace
   * is the stream's pace: nothing is read ahead of it.
   */
  async *follow(
    filter: TailFilter,
    after: string | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<OjsEvent[]> {
    this.#following++;
    try {
      yield* this.#pages(filter, after, signal);
    } finally {
      this.#following--;
    }
  }

  async *#pages(
    filter: TailFilter,
    after: string | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<OjsEvent[]> {
    const recent: string[] = [];
    const seen = new Set<string>();
    let cursor = after;
    while (!signal.aborted) {
      const page = await this.#engine.store.listEvents({
        ...storeFilter(filter),
        after: recent.length > 0 ? recent[0] : cursor,
        limit: PAGE,
      });
      const fresh: OjsEvent[] = [];
      let unseen = 0;
      for (const event of page) {
        if (seen.has(event.id)) continue;
        unseen++;
        seen.add(event.id);
        recent.push(event.id);
        if (
          (filter.subject === undefined || event.subject === filter.subject) &&
          (filter.tenant === undefined || eventTenant(event) === filter.tenant)
        ) {
          fresh.push(event);
        }
      }
      while (recent.length > OVERLAP) seen.delete(recent.shift()!);
      if (page.length > 0) cursor = page[page.length - 1]!.id;
      if (fresh.length > 0) yield fresh;
      // A full page with new events: read on (a page of only re-read ones is the overlap).
      if (page.length === PAGE && unseen > 0) continue;
      await this.#wait(signal);
    }
  }

  #wait(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, this.#pollMs);
      this.#waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

function storeFilter(filter: TailFilter): Omit<EventFilter, 'limit'> {
  return { types: filter.types, queues: filter.queues, jobTypes: filter.jobTypes };
}
