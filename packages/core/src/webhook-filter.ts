/**
 * Which events a subscription receives (ext-webhooks §1.2): its event
 * types (exact, `job.*`, `*`), its filter on queues and job types (an event
 * must match both), and its tenant (multi-tenancy §2.2: a tenant's
 * subscription never receives another tenant's events; an operator's,
 * with no tenant, receives all).
 *
 * `webhook.*` events are never delivered through the log, not even to `*`:
 * a delivery's own outcome events would otherwise be delivered, and their
 * outcomes delivered again, without end. `webhook.test` is sent directly.
 */
import { eventTenant } from './events.ts';
import type { OjsEvent } from './job-types.ts';
import type { WebhookSubscription } from './webhook-types.ts';

/** True when an event type names webhooks' own events, which are never fanned out. */
export function isWebhookEventType(type: string): boolean {
  return type.startsWith('webhook.');
}

/** True when `pattern` (exact, `prefix.*` or `*`) admits the event type. */
export function eventTypeMatches(pattern: string, type: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return type.startsWith(pattern.slice(0, -1));
  return pattern === type;
}

export function subscriptionMatches(sub: WebhookSubscription, event: OjsEvent): boolean {
  if (!sub.active || isWebhookEventType(event.type)) return false;
  if (!sub.events.some((pattern) => eventTypeMatches(pattern, event.type))) return false;
  if (sub.tenant_id !== undefined && eventTenant(event) !== sub.tenant_id) return false;
  const filter = sub.filter;
  if (filter !== null) {
    if (filter.queues !== undefined && filter.queues.length > 0) {
      const queue = event.data.queue;
      if (typeof queue !== 'string' || !filter.queues.includes(queue)) return false;
    }
    if (filter.job_types !== undefined && filter.job_types.length > 0) {
      const type = event.data.job_type;
      if (typeof type !== 'string' || !filter.job_types.includes(type)) return false;
    }
  }
  return true;
}
