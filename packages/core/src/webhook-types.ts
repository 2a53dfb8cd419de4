/**
 * The webhooks extension's records (ext-webhooks §1.2): a subscription
 * (a settings document, namespace `webhook-subscriptions`) and a delivery
 * (one row per event and subscription in the store's delivery log). Types
 * only, so the store seam and the decisions share them without a cycle.
 */
import type { OjsEvent } from './job-types.ts';

export interface WebhookFilter {
  queues?: string[];
  job_types?: string[];
}

export interface WebhookSubscription {
  id: string;
  url: string;
  events: string[];
  filter: WebhookFilter | null;
  metadata: Record<string, unknown> | null;
  active: boolean;
  /** Shown on create and rotate only. */
  secret: string;
  /** The secret before the last rotation, still signed with until `previous_secret_until`. */
  previous_secret?: string;
  previous_secret_until?: string;
  /** The creating request's tenant; absent for an operator's subscription (receives every tenant). */
  tenant_id?: string;
  /** Per-subscription request timeout, 5,000..60,000 ms (default 30,000). */
  timeout_ms: number;
  created_at: string;
  updated_at: string;
}

export type WebhookDeliveryState = 'pending' | 'delivering' | 'delivered' | 'dead';

export interface WebhookDelivery {
  /** Stable per (event, subscription): the X-OJS-Delivery-ID every attempt carries (C4). */
  id: string;
  subscription_id: string;
  /** The subscription's tenant, for tenant-scoped listing (absent: operator's). */
  tenant_id?: string;
  event_id: string;
  event_type: string;
  /** The event as delivered (the POST body). */
  event: OjsEvent;
  state: WebhookDeliveryState;
  /** Attempts started (a claim counts one). */
  attempts: number;
  /** Largest number of attempts (the retry schedule's length when the delivery was made). */
  max_attempts: number;
  /** Epoch ms: when a pending delivery is due. */
  next_attempt_at: number;
  /** Who holds a delivering delivery, and until when (epoch ms). */
  lease_owner?: string;
  lease_until?: number;
  /** Incremented on every write: claims and settlements are guarded on it. */
  rev: number;
  last_status_code?: number;
  last_error?: string;
  /** The receiver's response body, truncated. */
  last_response_body?: string;
  last_response_time_ms?: number;
  created_at: string;
  updated_at: string;
  delivered_at?: string;
}

export interface WebhookDeliveryFilter {
  subscriptionId?: string;
  state?: WebhookDeliveryState;
  /** Only deliveries of subscriptions of this tenant. */
  tenantId?: string;
  /** Newest first; the page after this delivery id. */
  after?: string;
  limit: number;
}
