/**
 * Webhook subscriptions as settings documents (namespace
 * `webhook-subscriptions`, one per id, guarded by rev), scoped by tenant:
 * a request naming a tenant sees and changes only that tenant's
 * subscriptions (another tenant's is "not found", multi-tenancy §2.2); a
 * request naming none (the operator) sees all.
 */
import {
  createWebhookSubscription,
  makeEvent,
  notFound,
  patchWebhookSubscription,
  rotateWebhookSecret,
  type SettingRecord,
  type Store,
  WEBHOOK_SUBSCRIPTIONS,
  type WebhookSubscription,
  type WebhookTargetPolicy,
} from '@ojs/core';

const GUARD_RETRIES = 20;

export interface SubscriptionsContext {
  readonly store: Store;
  now(): number;
}

/** True when a request scoped to `tenant` (undefined: the operator) may see `sub`. */
export function visibleTo(sub: { tenant_id?: string }, tenant: string | undefined): boolean {
  return tenant === undefined || sub.tenant_id === tenant;
}

export class WebhookSubscriptions {
  readonly #ctx: SubscriptionsContext;
  readonly #policy: WebhookTargetPolicy;

  constructor(ctx: SubscriptionsContext, policy: WebhookTargetPolicy) {
    this.#ctx = ctx;
    this.#policy = policy;
  }

  /** Every subscription (the fan-out's view). */
  async all(): Promise<WebhookSubscription[]> {
    const records = await this.#ctx.store.listSettings(WEBHOOK_SUBSCRIPTIONS);
    return records.map((r) => r.value as unknown as WebhookSubscription);
  }

  async list(tenant: string | undefined): Promise<WebhookSubscription[]> {
    return (await this.all()).filter((sub) => visibleTo(sub, tenant));
  }

  async #record(id: string, tenant: string | undefined): Promise<SettingRecord> {
    const record = await this.#ctx.store.getSetting(WEBHOOK_SUBSCRIPTIONS, id);
    if (record === null || !visibleTo(record.value as { tenant_id?: string }, tenant)) {
      throw notFound('webhook_subscription', id);
    }
    return record;
  }

  async get(id: string, tenant: string | undefined): Promise<WebhookSubscription> {
    return (await this.#record(id, tenant)).value as unknown as WebhookSubscription;
  }

  /** Reads a subscription without scoping; null when gone. */
  async find(id: string): Promise<WebhookSubscription | null> {
    const record = await this.#ctx.store.getSetting(WEBHOOK_SUBSCRIPTIONS, id);
    return record === null ? null : (record.value as unknown as WebhookSubscription);
  }

  async create(body: unknown, tenant: string | undefined): Promise<WebhookSubscription> {
    const now = this.#ctx.now();
    const sub = createWebhookSubscription(body, this.#policy, tenant, now);
    const stored = await this.#ctx.store.putSetting(
      WEBHOOK_SUBSCRIPTIONS,
      sub.id,
      sub as unknown as Record<string, unknown>,
      null,
      now,
    );
    if (stored === null) throw new Error(`subscription id ${sub.id} already taken`);
    await this.#ctx.store.appendEvents([
      makeEvent('webhook.subscription.created', sub.id, subscriptionEventData(sub), now),
    ]);
    return sub;
  }

  /** Read, decide, write guarded on rev; again when another writer came first. */
  async #change(
    id: string,
    tenant: string | undefined,
    decide: (sub: WebhookSubscription, now: number) => WebhookSubscription,
  ): Promise<WebhookSubscription> {
    for (let i = 0; i < GUARD_RETRIES; i++) {
      const record = await this.#record(id, tenant);
      const now = this.#ctx.now();
      const next = decide(record.value as unknown as WebhookSubscription, now);
      const stored = await this.#ctx.store.putSetting(
        WEBHOOK_SUBSCRIPTIONS,
        id,
        next as unknown as Record<string, unknown>,
        record.rev,
        now,
      );
      if (stored !== null) return next;
    }
    throw new Error(`subscription ${id} kept changing under the update`);
  }

  update(id: string, body: unknown, tenant: string | undefined): Promise<WebhookSubscription> {
    return this.#change(id, tenant, (sub, now) =>
      patchWebhookSubscription(sub, body, this.#policy, now),
    );
  }

  rotateSecret(id: string, tenant: string | undefined): Promise<WebhookSubscription> {
    return this.#change(id, tenant, (sub, now) => rotateWebhookSecret(sub, now));
  }

  async delete(id: string, tenant: string | undefined): Promise<WebhookSubscription> {
    const sub = await this.get(id, tenant);
    if (!(await this.#ctx.store.deleteSetting(WEBHOOK_SUBSCRIPTIONS, id))) {
      throw notFound('webhook_subscription', id);
    }
    const now = this.#ctx.now();
    await this.#ctx.store.appendEvents([
      makeEvent('webhook.subscription.deleted', sub.id, subscriptionEventData(sub), now),
    ]);
    return sub;
  }
}

function subscriptionEventData(sub: WebhookSubscription): Record<string, unknown> {
  const data: Record<string, unknown> = {
    subscription_id: sub.id,
    url: sub.url,
    events: sub.events,
  };
  if (sub.tenant_id !== undefined) data.tenant_id = sub.tenant_id;
  return data;
}
