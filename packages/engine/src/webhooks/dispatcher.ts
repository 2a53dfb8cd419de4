/**
 * The delivery loop: claims due deliveries (a rev-guarded write taking a
 * lease, so among processes on one store each attempt is made by one), and
 * makes each attempt off the job path, at most `concurrency` at a time per
 * process. Every attempt is signed afresh (C6). Its outcome is written
 * guarded on the claim's rev, so a process whose lease lapsed (and whose
 * delivery another process claimed) cannot overwrite the newer attempt.
 * A process killed mid-attempt loses nothing: the lease lapses and the
 * delivery is claimed again (at-least-once; receivers dedupe by
 * X-OJS-Delivery-ID).
 */
import { hostname } from 'node:os';
import {
  abandonWebhookDelivery,
  claimWebhookDelivery,
  makeEvent,
  type OjsEvent,
  type Store,
  settleWebhookDelivery,
  uuidv7,
  type WebhookAttemptResult,
  type WebhookDelivery,
  type WebhookSubscription,
  webhookSignatureHeader,
  webhookSigningSecrets,
} from '@ojs/core';
import { type DeliveryClient, WEBHOOK_USER_AGENT } from './delivery-client.ts';

export interface DispatcherContext {
  readonly store: Store;
  now(): number;
}

/** Who learns of each attempt's outcome (metrics). */
export interface WebhookObserver {
  attempted(delivery: WebhookDelivery, result: WebhookAttemptResult): void;
}

export interface DispatcherOptions {
  schedule: readonly number[];
  concurrency: number;
  /** A claim's lease beyond the subscription's timeout. */
  leaseMarginMs: number;
}

export class Dispatcher {
  readonly #ctx: DispatcherContext;
  readonly #client: DeliveryClient;
  readonly #options: DispatcherOptions;
  readonly #subscription: (id: string) => Promise<WebhookSubscription | null>;
  readonly #inFlight = new Set<Promise<void>>();
  readonly owner = `${hostname()}:${process.pid}:${uuidv7()}`;
  readonly observers = new Set<WebhookObserver>();
  /** Called when an attempt ends, so the loop looks for more work at once. */
  onSettled: () => void = () => {};

  constructor(
    ctx: DispatcherContext,
    client: DeliveryClient,
    options: DispatcherOptions,
    subscription: (id: string) => Promise<WebhookSubscription | null>,
  ) {
    this.#ctx = ctx;
    this.#client = client;
    this.#options = options;
    this.#subscription = subscription;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Claims what is due, up to the free slots, and starts those attempts; how many started. */
  async step(): Promise<number> {
    const free = this.#options.concurrency - this.#inFlight.size;
    if (free <= 0) return 0;
    const store = this.#ctx.store;
    const due = await store.dueWebhookDeliveries(this.#ctx.now(), free);
    let started = 0;
    for (const delivery of due) {
      const sub = await this.#subscription(delivery.subscription_id);
      const now = this.#ctx.now();
      if (sub === null || !sub.active) {
        const reason = sub === null ? 'subscription deleted' : 'subscription inactive';
        await store.updateWebhookDelivery(
          abandonWebhookDelivery(delivery, reason, now),
          delivery.rev,
        );
        continue;
      }
      const claim = claimWebhookDelivery(
        delivery,
        this.owner,
        sub.timeout_ms + this.#options.leaseMarginMs,
        now,
      );
      if (!(await store.updateWebhookDelivery(claim, delivery.rev))) continue;
      started++;
      const attempt = this.#attempt(claim, sub).finally(() => {
        this.#inFlight.delete(attempt);
        this.onSettled();
      });
      this.#inFlight.add(attempt);
    }
    return started;
  }

  /** Waits for the attempts in flight (shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }

  async #attempt(claim: WebhookDelivery, sub: WebhookSubscription): Promise<void> {
    const result = await this.#send(sub, claim.event, claim.id);
    const now = this.#ctx.now();
    const settled = settleWebhookDelivery(claim, result, this.#options.schedule, now);
    const store = this.#ctx.store;
    try {
      if (!(await store.updateWebhookDelivery(settled, claim.rev))) return;
      for (const observer of this.observers) observer.attempted(settled, result);
      await store.appendEvents([outcomeEvent(settled, now)]);
    } catch {
      // The store is down: the lease lapses and the delivery is attempted again.
    }
  }

  /** One signed POST of `event` to the subscription (also the test route's). */
  send(
    sub: WebhookSubscription,
    event: OjsEvent,
    deliveryId: string,
  ): Promise<WebhookAttemptResult> {
    return this.#send(sub, event, deliveryId);
  }

  #send(
    sub: WebhookSubscription,
    event: OjsEvent,
    deliveryId: string,
  ): Promise<WebhookAttemptResult> {
    const body = JSON.stringify(event);
    // The receiver compares it with its own clock: wall-clock seconds, fresh each attempt.
    const timestamp = Math.floor(Date.now() / 1000);
    return this.#client.send({
      url: sub.url,
      body,
      timeoutMs: sub.timeout_ms,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': WEBHOOK_USER_AGENT,
        'X-OJS-Event-Type': event.type,
        'X-OJS-Delivery-ID': deliveryId,
        'X-OJS-Subscription-ID': sub.id,
        'X-OJS-Timestamp': String(timestamp),
        'X-OJS-Signature': webhookSignatureHeader(
          webhookSigningSecrets(sub, Date.now()),
          timestamp,
          body,
        ),
      },
    });
  }
}

/** webhook.delivered, webhook.failed (a retry is scheduled) or webhook.dead. */
function outcomeEvent(d: WebhookDelivery, now: number): OjsEvent {
  const type =
    d.state === 'delivered'
      ? 'webhook.delivered'
      : d.state === 'dead'
        ? 'webhook.dead'
        : 'webhook.failed';
  const data: Record<string, unknown> = {
    delivery_id: d.id,
    subscription_id: d.subscription_id,
    event_id: d.event_id,
    event_type: d.event_type,
    attempt: d.attempts,
  };
  if (d.last_status_code !== undefined) data.status_code = d.last_status_code;
  if (d.last_error !== undefined) data.error = d.last_error;
  if (d.state === 'pending') data.next_attempt_at = new Date(d.next_attempt_at).toISOString();
  if (d.tenant_id !== undefined) data.tenant_id = d.tenant_id;
  return makeEvent(type, d.id, data, now);
}
