/**
 * The webhooks extension (`urn:ojs:ext:webhooks`) as `client.webhooks`:
 * subscriptions (create, list, get, update, delete, test, rotate-secret)
 * and the delivery log (list, get, retry a dead delivery). HTTP only, as
 * the admin API. Receivers check a delivery with `verifyWebhookSignature`
 * (exported by the package).
 */
import { callAdmin } from './admin.ts';
import type { AdminCall, RequestOptions, Transport } from './types.ts';

type Obj = Record<string, unknown>;

export interface WebhookFilter {
  queues?: string[];
  job_types?: string[];
}

export interface WebhookSubscription {
  id: string;
  url: string;
  /** Event types: exact (`job.completed`), a prefix (`job.*`) or `*`. */
  events: string[];
  filter: WebhookFilter | null;
  metadata: Record<string, unknown> | null;
  active: boolean;
  timeout_ms: number;
  tenant_id?: string;
  /** Only in the answers of create and rotateSecret. */
  secret?: string;
  created_at: string;
  updated_at: string;
}

export interface WebhookSubscriptionInput {
  url: string;
  events: string[];
  filter?: WebhookFilter | null;
  metadata?: Record<string, unknown> | null;
  /** At least 16 characters; the server generates one when omitted. */
  secret?: string;
  active?: boolean;
  /** 5,000..60,000 ms (default 30,000). */
  timeout_ms?: number;
}

export type WebhookSubscriptionPatch = Partial<Omit<WebhookSubscriptionInput, 'secret'>>;

export interface WebhookTestResult {
  success: boolean;
  status_code: number | null;
  response_time_ms: number;
  response_body: string | null;
  error?: string;
}

export type WebhookDeliveryState = 'pending' | 'delivering' | 'delivered' | 'dead';

export interface WebhookDelivery {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  state: WebhookDeliveryState;
  attempts: number;
  max_attempts: number;
  next_attempt_at?: string;
  last_status_code?: number;
  last_error?: string;
  last_response_time_ms?: number;
  last_response_body?: string;
  delivered_at?: string;
  tenant_id?: string;
  created_at: string;
  updated_at: string;
  event: Obj;
}

export interface WebhookDeliveryQuery {
  subscriptionId?: string;
  state?: WebhookDeliveryState;
  limit?: number;
  cursor?: string;
}

export interface WebhookDeliveryPage {
  deliveries: WebhookDelivery[];
  nextCursor?: string;
}

const q = encodeURIComponent;
const SUBS = '/webhooks/subscriptions';

export class OjsWebhooks {
  readonly #transport: () => Transport;

  constructor(transport: () => Transport) {
    this.#transport = transport;
  }

  #call(call: AdminCall, options?: RequestOptions): Promise<Obj> {
    return callAdmin(this.#transport(), call, 'webhooks', options);
  }

  /** Creates a subscription; the answer carries its secret (shown only now and on rotation). */
  async create(
    input: WebhookSubscriptionInput,
    options?: RequestOptions,
  ): Promise<WebhookSubscription> {
    const body = await this.#call(
      { method: 'POST', path: SUBS, body: input, idempotent: false },
      options,
    );
    return body.subscription as WebhookSubscription;
  }

  async list(options?: RequestOptions): Promise<WebhookSubscription[]> {
    const body = await this.#call({ method: 'GET', path: SUBS, idempotent: true }, options);
    return (body.subscriptions ?? []) as WebhookSubscription[];
  }

  async get(id: string, options?: RequestOptions): Promise<WebhookSubscription> {
    const body = await this.#call(
      { method: 'GET', path: `${SUBS}/${q(id)}`, idempotent: true },
      options,
    );
    return body.subscription as WebhookSubscription;
  }

  async update(
    id: string,
    patch: WebhookSubscriptionPatch,
    options?: RequestOptions,
  ): Promise<WebhookSubscription> {
    const body = await this.#call(
      { method: 'PATCH', path: `${SUBS}/${q(id)}`, body: patch, idempotent: true },
      options,
    );
    return body.subscription as WebhookSubscription;
  }

  async delete(id: string, options?: RequestOptions): Promise<void> {
    await this.#call({ method: 'DELETE', path: `${SUBS}/${q(id)}`, idempotent: false }, options);
  }

  /** Sends a `webhook.test` event to the subscription's URL now. */
  async test(id: string, options?: RequestOptions): Promise<WebhookTestResult> {
    return (await this.#call(
      { method: 'POST', path: `${SUBS}/${q(id)}/test`, body: {}, idempotent: false },
      options,
    )) as unknown as WebhookTestResult;
  }

  /** A new secret (returned); the old one keeps signing for about a day. */
  async rotateSecret(id: string, options?: RequestOptions): Promise<WebhookSubscription> {
    const body = await this.#call(
      { method: 'POST', path: `${SUBS}/${q(id)}/rotate-secret`, body: {}, idempotent: false },
      options,
    );
    return body.subscription as WebhookSubscription;
  }

  /** One page of the delivery log, newest first. */
  async deliveries(
    query: WebhookDeliveryQuery = {},
    options?: RequestOptions,
  ): Promise<WebhookDeliveryPage> {
    const body = await this.#call(
      {
        method: 'GET',
        path: '/webhooks/deliveries',
        query: {
          subscription_id: query.subscriptionId,
          state: query.state,
          limit: query.limit,
          cursor: query.cursor,
        },
        idempotent: true,
      },
      options,
    );
    return {
      deliveries: (body.deliveries ?? []) as WebhookDelivery[],
      ...(typeof body.next_cursor === 'string' ? { nextCursor: body.next_cursor } : {}),
    };
  }

  async delivery(id: string, options?: RequestOptions): Promise<WebhookDelivery> {
    const body = await this.#call(
      { method: 'GET', path: `/webhooks/deliveries/${q(id)}`, idempotent: true },
      options,
    );
    return body.delivery as WebhookDelivery;
  }

  /** Replays a dead delivery (pending again, with a fresh set of attempts). */
  async retryDelivery(id: string, options?: RequestOptions): Promise<WebhookDelivery> {
    const body = await this.#call(
      { method: 'POST', path: `/webhooks/deliveries/${q(id)}/retry`, body: {}, idempotent: false },
      options,
    );
    return body.delivery as WebhookDelivery;
  }
}
