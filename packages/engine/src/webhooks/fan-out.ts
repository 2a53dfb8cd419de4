/**
 * The fan-out: the event log is the webhooks' outbox. Every event is
 * committed in the same atomic step as the transition it reports
 * (decision 0009), so nothing more is written on a job's path; this step
 * tails the log from a durable cursor (a settings document), inserts one
 * delivery per matching (event, subscription) with an id derived from both
 * (inserting it again is a no-op), and then advances the cursor with a
 * guarded write. A crash between the insert and the cursor write repeats
 * the inserts, harmlessly; several processes may run it at once.
 *
 * PostgreSQL gives an event its seq before its transaction commits, so a
 * lower seq can become visible after a higher one was read. The cursor
 * therefore keeps the last OVERLAP ids it consumed and each read starts
 * before them, skipping those: a late commit within that window is still
 * fanned out (event-tail.ts does the same for live streams).
 */
import {
  newWebhookDelivery,
  type OjsEvent,
  type Store,
  subscriptionMatches,
  type WebhookDelivery,
  type WebhookSubscription,
} from '@ojs/core';

export const FAN_OUT_NAMESPACE = 'webhooks';
export const FAN_OUT_KEY = 'fan-out-cursor';
const PAGE = 500;
const OVERLAP = 100;
/** An idle fan-out refreshes `caught_up_at` this often (the pruner wants it within its 60 s). */
const CAUGHT_UP_REFRESH_MS = 10_000;

interface Cursor {
  /** The last event consumed. */
  after: string | null;
  /** The last OVERLAP ids consumed, oldest first. */
  recent: string[];
  /** When a read last reached the head of the log (epoch ms): the pruner's go-ahead. */
  caught_up_at: number;
}

export interface FanOutContext {
  readonly store: Store;
  now(): number;
}

export class FanOut {
  readonly #ctx: FanOutContext;
  readonly #maxAttempts: () => number;

  constructor(ctx: FanOutContext, maxAttempts: () => number) {
    this.#ctx = ctx;
    this.#maxAttempts = maxAttempts;
  }

  /** Starts the cursor at the head of the log (the first subscription: no history is delivered). */
  async startAtHead(): Promise<void> {
    const store = this.#ctx.store;
    const [head] = await store.listEvents({ limit: 1, newestFirst: true });
    const cursor: Cursor = {
      after: head?.id ?? null,
      recent: head === undefined ? [] : [head.id],
      caught_up_at: this.#ctx.now(),
    };
    const existing = await store.getSetting(FAN_OUT_NAMESPACE, FAN_OUT_KEY);
    await store.putSetting(
      FAN_OUT_NAMESPACE,
      FAN_OUT_KEY,
      cursor as unknown as Record<string, unknown>,
      existing?.rev ?? null,
      this.#ctx.now(),
    );
  }

  /** When the fan-out last reached the head of the log; 0 when it never ran. */
  async caughtUpAt(): Promise<number> {
    const record = await this.#ctx.store.getSetting(FAN_OUT_NAMESPACE, FAN_OUT_KEY);
    return record === null ? 0 : ((record.value as unknown as Cursor).caught_up_at ?? 0);
  }

  /**
   * One pass over the new events; true when there is more to read at once.
   * The subscriptions are read after the events: an event committed after
   * a subscription (in any process) finds it, so none is missed while
   * another process's view of the subscriptions is a few seconds old.
   */
  async step(subscriptions: () => Promise<readonly WebhookSubscription[]>): Promise<boolean> {
    const store = this.#ctx.store;
    const record = await store.getSetting(FAN_OUT_NAMESPACE, FAN_OUT_KEY);
    if (record === null) {
      await this.startAtHead();
      return false;
    }
    const cursor = record.value as unknown as Cursor;
    const seen = new Set(cursor.recent);
    const page = await store.listEvents({
      after: cursor.recent[0] ?? cursor.after ?? undefined,
      limit: PAGE,
    });
    const fresh = page.filter((event) => !seen.has(event.id));
    const now = this.#ctx.now();
    const deliveries =
      fresh.length === 0 ? [] : this.#deliveries(fresh, await subscriptions(), now);
    if (deliveries.length > 0) await store.insertWebhookDeliveries(deliveries);
    const caughtUp = page.length < PAGE;
    if (fresh.length === 0 && !(caughtUp && now - cursor.caught_up_at > CAUGHT_UP_REFRESH_MS)) {
      return false;
    }
    const next: Cursor = {
      after: page.length > 0 ? page[page.length - 1]!.id : cursor.after,
      recent: [...cursor.recent, ...fresh.map((e) => e.id)].slice(-OVERLAP),
      caught_up_at: caughtUp ? now : cursor.caught_up_at,
    };
    // Another process advanced it first: it inserted the same deliveries.
    const stored = await store.putSetting(
      FAN_OUT_NAMESPACE,
      FAN_OUT_KEY,
      next as unknown as Record<string, unknown>,
      record.rev,
      now,
    );
    return stored !== null && !caughtUp;
  }

  #deliveries(
    events: readonly OjsEvent[],
    subscriptions: readonly WebhookSubscription[],
    now: number,
  ): WebhookDelivery[] {
    const out: WebhookDelivery[] = [];
    const maxAttempts = this.#maxAttempts();
    for (const event of events) {
      const at = Date.parse(event.time);
      for (const sub of subscriptions) {
        // A subscription receives what happened after it was made, not the log's history.
        if (at < Date.parse(sub.created_at)) continue;
        if (subscriptionMatches(sub, event))
          out.push(newWebhookDelivery(event, sub, maxAttempts, now));
      }
    }
    return out;
  }
}
