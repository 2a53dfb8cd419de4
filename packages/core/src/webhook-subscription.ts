/**
 * Webhook subscriptions (ext-webhooks §1.1, §1.2, C2, C3): the create and
 * patch bodies checked and normalised once for every binding, the wire
 * shape (the secret only on create and rotate), and secret rotation
 * (both secrets sign for a day after it).
 */
import { randomBytes } from 'node:crypto';
import { invalidRequest } from './errors.ts';
import { isObject } from './is-object.ts';
import { isBlockedAddress, literalHostIp } from './ssrf.ts';
import { toIso } from './time.ts';
import { uuidv7 } from './uuid.ts';
import { WEBHOOK_TIMEOUT_MS, WEBHOOK_TIMEOUT_RANGE } from './webhook-delivery.ts';
import type { WebhookFilter, WebhookSubscription } from './webhook-types.ts';

/** The settings namespace subscriptions are kept in (one document each, guarded by rev). */
export const WEBHOOK_SUBSCRIPTIONS = 'webhook-subscriptions';

/** How long the previous secret still signs after a rotation. */
export const WEBHOOK_ROTATION_OVERLAP_MS = 86_400_000;

/** Shortest client-chosen secret (C3). */
const MIN_SECRET_LENGTH = 16;
const MAX_EVENTS = 100;
const MAX_URL_LENGTH = 2048;

/** What the operator allows subscriptions to point at. */
export interface WebhookTargetPolicy {
  /** Accept `http:` URLs (development only). */
  allowHttp?: boolean;
  /** Accept loopback, private, link-local and metadata addresses. */
  allowPrivate?: boolean;
}

export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64url')}`;
}

function checkUrl(value: unknown, policy: WebhookTargetPolicy): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_URL_LENGTH) {
    throw invalidRequest('url must be an absolute https URL.', { field: 'url' });
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidRequest(`url '${value}' is not a valid URL.`, { field: 'url' });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw invalidRequest('url must use https.', { field: 'url' });
  }
  if (url.protocol === 'http:' && policy.allowHttp !== true) {
    throw invalidRequest(
      'url must use https (http: is refused unless the server allows insecure webhooks).',
      { field: 'url' },
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw invalidRequest('url must not carry credentials.', { field: 'url' });
  }
  const ip = literalHostIp(url.hostname);
  if (ip !== null && isBlockedAddress(ip) && policy.allowPrivate !== true) {
    throw invalidRequest(
      `url points at a private, loopback or link-local address (${ip}); webhooks deliver to public addresses only.`,
      { field: 'url' },
    );
  }
  return url.toString();
}

function checkEvents(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_EVENTS) {
    throw invalidRequest(`events must be an array of 1 to ${MAX_EVENTS} event types.`, {
      field: 'events',
    });
  }
  for (const type of value) {
    if (typeof type !== 'string' || !/^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$/.test(type)) {
      throw invalidRequest(
        `events holds '${String(type)}': an event type (job.completed), a prefix wildcard (job.*) or *.`,
        { field: 'events' },
      );
    }
  }
  return [...new Set(value as string[])];
}

function stringList(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
    throw invalidRequest(`filter.${field} must be an array of names.`, {
      field: `filter.${field}`,
    });
  }
  return value as string[];
}

function checkFilter(value: unknown): WebhookFilter | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) throw invalidRequest('filter must be an object.', { field: 'filter' });
  for (const key of Object.keys(value)) {
    if (key !== 'queues' && key !== 'job_types') {
      throw invalidRequest(`filter.${key} is unknown (queues, job_types).`, { field: 'filter' });
    }
  }
  const filter: WebhookFilter = {};
  if (value.queues !== undefined) filter.queues = stringList(value.queues, 'queues');
  if (value.job_types !== undefined) filter.job_types = stringList(value.job_types, 'job_types');
  return filter;
}

function checkMetadata(value: unknown): Record<string, unknown> | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) throw invalidRequest('metadata must be an object.', { field: 'metadata' });
  return value;
}

function checkActive(value: unknown): boolean {
  if (typeof value !== 'boolean')
    throw invalidRequest('active must be a boolean.', { field: 'active' });
  return value;
}

function checkTimeout(value: unknown): number {
  const { min, max } = WEBHOOK_TIMEOUT_RANGE;
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
    throw invalidRequest(`timeout_ms must be an integer from ${min} to ${max}.`, {
      field: 'timeout_ms',
    });
  }
  return value as number;
}

function checkSecret(value: unknown): string {
  if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH || value.length > 256) {
    throw invalidRequest(`secret must be a string of ${MIN_SECRET_LENGTH} to 256 characters.`, {
      field: 'secret',
    });
  }
  return value;
}

const CREATE_FIELDS = new Set([
  'url',
  'events',
  'filter',
  'metadata',
  'secret',
  'active',
  'timeout_ms',
]);
const PATCH_FIELDS = new Set(['url', 'events', 'filter', 'metadata', 'active', 'timeout_ms']);

function checkFields(body: Record<string, unknown>, allowed: Set<string>): void {
  for (const key of Object.keys(body)) {
    if (!allowed.has(key)) {
      throw invalidRequest(`Unknown field '${key}' (${[...allowed].join(', ')}).`, { field: key });
    }
  }
}

/** A new subscription from a create body; a spec-shaped 400 for anything wrong. */
export function createWebhookSubscription(
  body: unknown,
  policy: WebhookTargetPolicy,
  tenantId: string | undefined,
  now: number,
): WebhookSubscription {
  if (!isObject(body)) throw invalidRequest('The request body must be a JSON object.');
  checkFields(body, CREATE_FIELDS);
  const sub: WebhookSubscription = {
    id: `sub_${uuidv7(now)}`,
    url: checkUrl(body.url, policy),
    events: checkEvents(body.events),
    filter: checkFilter(body.filter),
    metadata: checkMetadata(body.metadata),
    active: body.active === undefined ? true : checkActive(body.active),
    secret: body.secret === undefined ? generateWebhookSecret() : checkSecret(body.secret),
    timeout_ms: body.timeout_ms === undefined ? WEBHOOK_TIMEOUT_MS : checkTimeout(body.timeout_ms),
    created_at: toIso(now),
    updated_at: toIso(now),
  };
  if (tenantId !== undefined) sub.tenant_id = tenantId;
  return sub;
}

/** The subscription after a PATCH body (url, events, filter, active, metadata, timeout_ms). */
export function patchWebhookSubscription(
  sub: WebhookSubscription,
  body: unknown,
  policy: WebhookTargetPolicy,
  now: number,
): WebhookSubscription {
  if (!isObject(body)) throw invalidRequest('The request body must be a JSON object.');
  checkFields(body, PATCH_FIELDS);
  const next: WebhookSubscription = { ...sub, updated_at: toIso(now) };
  if (body.url !== undefined) next.url = checkUrl(body.url, policy);
  if (body.events !== undefined) next.events = checkEvents(body.events);
  if (body.filter !== undefined) next.filter = checkFilter(body.filter);
  if (body.metadata !== undefined) next.metadata = checkMetadata(body.metadata);
  if (body.active !== undefined) next.active = checkActive(body.active);
  if (body.timeout_ms !== undefined) next.timeout_ms = checkTimeout(body.timeout_ms);
  return next;
}

/** A new secret; the old one keeps signing for WEBHOOK_ROTATION_OVERLAP_MS. */
export function rotateWebhookSecret(sub: WebhookSubscription, now: number): WebhookSubscription {
  return {
    ...sub,
    secret: generateWebhookSecret(),
    previous_secret: sub.secret,
    previous_secret_until: toIso(now + WEBHOOK_ROTATION_OVERLAP_MS),
    updated_at: toIso(now),
  };
}

/** The secrets a delivery is signed with now: the current one, and the previous one during its overlap. */
export function webhookSigningSecrets(sub: WebhookSubscription, now: number): string[] {
  const until = sub.previous_secret_until === undefined ? 0 : Date.parse(sub.previous_secret_until);
  return sub.previous_secret !== undefined && until > now
    ? [sub.secret, sub.previous_secret]
    : [sub.secret];
}

/** The wire shape: never the previous secret; the secret only when `withSecret` (create, rotate). */
export function webhookSubscriptionToWire(
  sub: WebhookSubscription,
  withSecret = false,
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: sub.id,
    url: sub.url,
    events: sub.events,
    filter: sub.filter,
    metadata: sub.metadata,
    active: sub.active,
    timeout_ms: sub.timeout_ms,
    created_at: sub.created_at,
    updated_at: sub.updated_at,
  };
  if (sub.tenant_id !== undefined) out.tenant_id = sub.tenant_id;
  if (withSecret) out.secret = sub.secret;
  return out;
}
