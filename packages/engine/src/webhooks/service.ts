/**
 * The webhooks extension (ext-webhooks): subscriptions, the fan-out from
 * the event log, the delivery loop, and the delivery log's operations,
 * the same for every binding. Its timers do store work only while at
 * least one subscription exists: every CHECK_MS it reads the subscription
 * documents (which another process may have created), and the fan-out and
 * delivery loop run only when there are some. A server without
 * subscriptions does nothing per job.
 */
import {
  conflict,
  invalidRequest,
  makeEvent,
  notFound,
  parseRetrySchedule,
  replayWebhookDelivery,
  type Store,
  WEBHOOK_LOG_RETENTION,
  WEBHOOK_RETRY_SCHEDULE,
  type WebhookDelivery,
  type WebhookDeliveryState,
  type WebhookSubscription,
} from '@ojs/core';
import { DeliveryClient } from './delivery-client.ts';
import { Dispatcher, type WebhookObserver } from './dispatcher.ts';
import { FanOut } from './fan-out.ts';
import { visibleTo, WebhookSubscriptions } from './subscriptions.ts';

export type { WebhookObserver } from './dispatcher.ts';

export interface WebhookOptions {
  /** Deliver to loopback, private, link-local and metadata addresses (tests, development). */
  allowPrivate?: boolean;
  /** Accept http: subscription URLs (development only). */
  allowHttp?: boolean;
  /** Delay before each attempt, ms (default immediate, 30 s, 2 min, 10 min, 1 h, 4 h, 12 h, 24 h; >= 5 entries). */
  retrySchedule?: readonly number[];
  /** Attempts in flight per process (default 16). */
  concurrency?: number;
  /** How often the fan-out and the delivery loop look for work while subscriptions exist (default 200 ms). */
  pollMs?: number;
  /** How often the subscriptions are re-read (default 2000 ms). */
  checkMs?: number;
  /** A claim's lease beyond the subscription's timeout (default 5 s). */
  leaseMarginMs?: number;
}

export interface WebhookContext {
  readonly store: Store;
  now(): number;
  readonly errors: {
    failed(key: string, error: unknown, msg?: string): void;
    succeeded(key: string): void;
  };
}

export interface DeliveryQuery {
  subscriptionId?: string;
  state?: string;
  after?: string;
  limit?: number;
}

export interface WebhookTestResult {
  success: boolean;
  status_code: number | null;
  response_time_ms: number;
  response_body: string | null;
  error?: string;
}

const DELIVERY_STATES: readonly WebhookDeliveryState[] = [
  'pending',
  'delivering',
  'delivered',
  'dead',
];
const MAX_PAGE = 500;
/** The delivery log is pruned this often while subscriptions exist, this many at a time. */
const PRUNE_EVERY_MS = 60_000;
const PRUNE_STEP = 1000;

export class WebhookService {
  readonly #ctx: WebhookContext;
  readonly subscriptions: WebhookSubscriptions;
  readonly #fanOut: FanOut;
  readonly #dispatcher: Dispatcher;
  readonly #client: DeliveryClient;
  readonly #schedule: readonly number[];
  readonly #pollMs: number;
  readonly #checkMs: number;
  #active: WebhookSubscription[] = [];
  #checkedAt = Number.NEGATIVE_INFINITY;
  #prunedAt = Date.now();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = true;

  constructor(ctx: WebhookContext, options: WebhookOptions = {}) {
    this.#ctx = ctx;
    this.#schedule = parseRetrySchedule(options.retrySchedule ?? WEBHOOK_RETRY_SCHEDULE);
    this.#pollMs = options.pollMs ?? 200;
    this.#checkMs = options.checkMs ?? 2000;
    this.subscriptions = new WebhookSubscriptions(ctx, {
      allowHttp: options.allowHttp,
      allowPrivate: options.allowPrivate,
    });
    this.#fanOut = new FanOut(ctx, () => this.#schedule.length);
    this.#client = new DeliveryClient({
      allowPrivate: options.allowPrivate ?? false,
      allowHttp: options.allowHttp ?? false,
    });
    this.#dispatcher = new Dispatcher(
      ctx,
      this.#client,
      {
        schedule: this.#schedule,
        concurrency: options.concurrency ?? 16,
        leaseMarginMs: options.leaseMarginMs ?? 5000,
      },
      (id) => this.#subscription(id),
    );
    this.#dispatcher.onSettled = () => this.#wake();
  }

  /** Who learns of each attempt's outcome (metrics). */
  get observers(): Set<WebhookObserver> {
    return this.#dispatcher.observers;
  }

  /** Subscriptions known at the last check (the subscription-count gauge). */
  get subscriptionCount(): number {
    return this.#active.length;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#arm(0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
    // Attempts in flight end now (their sockets closed) rather than holding
    // the shutdown up to a receiver's timeout: each settles as a connection
    // error and is retried on the schedule, by this server or another.
    this.#client.close();
    await this.#dispatcher.drain();
  }

  #arm(ms: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.#tick()
        .catch((error: unknown) =>
          this.#ctx.errors.failed('webhooks', error, 'webhooks tick failed'),
        )
        .finally(() => {
          this.#running = undefined;
          if (this.#timer === undefined) this.#arm(this.#pollMs);
        });
    }, ms);
    this.#timer.unref();
  }

  /** An attempt ended: look for more work now rather than at the next poll. */
  #wake(): void {
    if (this.#running === undefined && !this.#stopped) this.#arm(0);
  }

  async #tick(): Promise<void> {
    const now = Date.now();
    if (now - this.#checkedAt >= this.#checkMs) {
      this.#active = await this.subscriptions.all();
      this.#checkedAt = now;
    }
    if (this.#active.length === 0 && this.#dispatcher.inFlight === 0) return;
    // Fan out everything new, then claim what is due.
    const read = async () => {
      await this.#refresh();
      return this.#active;
    };
    for (let pages = 0; pages < 20; pages++) {
      if (!(await this.#fanOut.step(read))) break;
    }
    await this.#dispatcher.step();
    if (now - this.#prunedAt >= PRUNE_EVERY_MS) {
      this.#prunedAt = now;
      const at = this.#ctx.now();
      await this.#ctx.store.pruneWebhookDeliveries(
        {
          delivered: at - WEBHOOK_LOG_RETENTION.deliveredMs,
          dead: at - WEBHOOK_LOG_RETENTION.deadMs,
        },
        PRUNE_STEP,
      );
    }
    this.#ctx.errors.succeeded('webhooks');
  }

  async #subscription(id: string): Promise<WebhookSubscription | null> {
    return this.#active.find((s) => s.id === id) ?? (await this.subscriptions.find(id));
  }

  /** Forgets the subscriptions read (test mode's reset wiped them): re-read on the next tick. */
  forget(): void {
    this.#active = [];
    this.#checkedAt = Number.NEGATIVE_INFINITY;
  }

  /** Re-reads the subscriptions at once (after a local change). */
  async #refresh(): Promise<void> {
    this.#active = await this.subscriptions.all();
    this.#checkedAt = Date.now();
  }

  /**
   * The event pruner's go-ahead: no subscriptions, or the fan-out reached
   * the head of the log within `withinMs` (the pruner keeps the newest
   * events, so what the fan-out has not read yet is among them).
   */
  async eventsConsumed(withinMs: number): Promise<boolean> {
    if ((await this.subscriptions.all()).length === 0) return true;
    return this.#ctx.now() - (await this.#fanOut.caughtUpAt()) <= withinMs;
  }

  // ------------------------------------------------------------ operations

  async createSubscription(
    body: unknown,
    tenant: string | undefined,
  ): Promise<WebhookSubscription> {
    // The first subscription starts the fan-out at the head of the log.
    if ((await this.subscriptions.all()).length === 0) await this.#fanOut.startAtHead();
    const sub = await this.subscriptions.create(body, tenant);
    await this.#refresh();
    this.#wake();
    return sub;
  }

  async updateSubscription(
    id: string,
    body: unknown,
    tenant: string | undefined,
  ): Promise<WebhookSubscription> {
    const sub = await this.subscriptions.update(id, body, tenant);
    await this.#refresh();
    return sub;
  }

  async deleteSubscription(id: string, tenant: string | undefined): Promise<void> {
    await this.subscriptions.delete(id, tenant);
    await this.#refresh();
  }

  async rotateSecret(id: string, tenant: string | undefined): Promise<WebhookSubscription> {
    const sub = await this.subscriptions.rotateSecret(id, tenant);
    await this.#refresh();
    return sub;
  }

  /** Sends a synthetic `webhook.test` event now, outside the delivery log. */
  async testSubscription(id: string, tenant: string | undefined): Promise<WebhookTestResult> {
    const sub = await this.subscriptions.get(id, tenant);
    const now = this.#ctx.now();
    const data: Record<string, unknown> = { subscription_id: sub.id, message: 'OJS webhook test' };
    if (sub.tenant_id !== undefined) data.tenant_id = sub.tenant_id;
    const event = makeEvent('webhook.test', sub.id, data, now);
    const result = await this.#dispatcher.send(sub, event, `whd_test_${event.id.slice(4)}`);
    const out: WebhookTestResult = {
      success:
        result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300,
      status_code: result.statusCode ?? null,
      response_time_ms: result.responseTimeMs,
      response_body: result.responseBody ?? null,
    };
    if (result.error !== undefined) out.error = result.error;
    return out;
  }

  async listDeliveries(
    query: DeliveryQuery,
    tenant: string | undefined,
  ): Promise<WebhookDelivery[]> {
    if (
      query.state !== undefined &&
      !(DELIVERY_STATES as readonly string[]).includes(query.state)
    ) {
      throw invalidRequest(`state must be one of ${DELIVERY_STATES.join(', ')}.`, {
        field: 'state',
      });
    }
    const limit = query.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw invalidRequest(`limit must be an integer from 1 to ${MAX_PAGE}.`, { field: 'limit' });
    }
    if (query.subscriptionId !== undefined)
      await this.subscriptions.get(query.subscriptionId, tenant);
    return this.#ctx.store.listWebhookDeliveries({
      subscriptionId: query.subscriptionId,
      state: query.state as WebhookDeliveryState | undefined,
      tenantId: tenant,
      after: query.after,
      limit,
    });
  }

  async getDelivery(id: string, tenant: string | undefined): Promise<WebhookDelivery> {
    const delivery = await this.#ctx.store.getWebhookDelivery(id);
    if (delivery === null || !visibleTo(delivery, tenant)) throw notFound('webhook_delivery', id);
    return delivery;
  }

  /** Replays a dead delivery: pending again, due now, with a fresh set of attempts. */
  async retryDelivery(id: string, tenant: string | undefined): Promise<WebhookDelivery> {
    const delivery = await this.getDelivery(id, tenant);
    if (delivery.state !== 'dead') {
      throw conflict(`Delivery ${id} is ${delivery.state}; only a dead delivery is retried.`, {
        state: delivery.state,
      });
    }
    if ((await this.subscriptions.find(delivery.subscription_id)) === null) {
      throw notFound('webhook_subscription', delivery.subscription_id);
    }
    const replay = replayWebhookDelivery(delivery, this.#schedule.length, this.#ctx.now());
    if (!(await this.#ctx.store.updateWebhookDelivery(replay, delivery.rev))) {
      throw conflict(`Delivery ${id} changed during the retry; try again.`);
    }
    this.#wake();
    return replay;
  }
}
