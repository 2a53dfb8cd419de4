/**
 * Fairness between tenants at dispatch (ext-multi-tenancy §2.2, fair
 * scheduling's "tenant interleaving"): a fetch that names no tenant spans
 * every tenant, and its slots are handed out by smooth weighted
 * round-robin over the tenants (weights: `fairness_weight`, C18), so a
 * tenant with a large backlog cannot starve one that enqueued later. Each
 * slot is then claimed with `ClaimRequest.tenant`; slots a tenant cannot
 * fill (nothing waiting) fall back to one claim over every tenant, so
 * dispatch never idles while any job waits. A tenant found empty is left
 * out for a short while instead of being asked on every fetch.
 *
 * Priority first: the round-robin runs among the tenants whose next job
 * has the highest priority, estimated from what their claims returned
 * (claims come in priority order; a tenant not yet claimed from, or whose
 * enqueue raised it, counts as highest). A tenant whose head estimate is
 * lower waits until the others' claims come down to it, so tenants are
 * interleaved within a priority, not across priorities.
 *
 * State is per process (the credits of the round-robin): several server
 * processes each interleave their own fetches, which interleaves the
 * whole. Only used when more than one tenant exists: a server without
 * tenants pays nothing.
 */
import { DEFAULT_TENANT } from '@ojs/core';

/** How long a tenant that had nothing to claim is skipped. */
const IDLE_MS = 250;

export interface TenantWeight {
  id: string;
  weight: number;
}

export class TenantRoundRobin {
  readonly #credit = new Map<string, number>();
  readonly #idleUntil = new Map<string, number>();
  /** Estimated priority of each tenant's next job (absent: unknown, counts as highest). */
  readonly #head = new Map<string, number>();

  /**
   * The tenants `count` slots go to, in order (a tenant may appear with
   * several slots), among `tenants` (the default tenant included by the
   * caller) minus those found idle recently.
   */
  plan(tenants: readonly TenantWeight[], count: number, now: number): Map<string, number> {
    const awake = tenants.filter((t) => (this.#idleUntil.get(t.id) ?? 0) <= now);
    const head = (t: TenantWeight) => this.#head.get(t.id) ?? Number.POSITIVE_INFINITY;
    const top = Math.max(...awake.map(head));
    const live = awake.filter((t) => head(t) >= top);
    const slots = new Map<string, number>();
    if (live.length === 0) return slots;
    const total = live.reduce((sum, t) => sum + t.weight, 0);
    for (let slot = 0; slot < count; slot++) {
      let best: TenantWeight | undefined;
      let bestCredit = Number.NEGATIVE_INFINITY;
      for (const tenant of live) {
        const credit = (this.#credit.get(tenant.id) ?? 0) + tenant.weight;
        this.#credit.set(tenant.id, credit);
        if (credit > bestCredit) {
          best = tenant;
          bestCredit = credit;
        }
      }
      this.#credit.set(best!.id, bestCredit - total);
      slots.set(best!.id, (slots.get(best!.id) ?? 0) + 1);
    }
    return slots;
  }

  /** What a claim of the tenant returned (in claim order): its next job is at most as urgent as the last. */
  claimed(tenant: string, priorities: readonly number[]): void {
    if (priorities.length > 0) this.#head.set(tenant, priorities[priorities.length - 1]!);
  }

  /** The tenant had fewer jobs than slots: skip it for a while, and forget its credit. */
  idle(tenant: string, now: number): void {
    this.#idleUntil.set(tenant, now + IDLE_MS);
    this.#credit.delete(tenant);
    this.#head.delete(tenant);
  }

  /** A new job of the tenant: it is asked again at once, at the job's priority if higher. */
  woke(tenant: string, priority: number): void {
    this.#idleUntil.delete(tenant);
    const head = this.#head.get(tenant);
    if (head !== undefined && priority > head) this.#head.set(tenant, priority);
  }
}

/** The tenants a fetch spans: every named tenant with a record, and the default tenant. */
export function dispatchTenants(
  records: readonly { id: string; weight: number }[],
): TenantWeight[] {
  const tenants = records.filter((r) => r.id !== DEFAULT_TENANT);
  return [...tenants, { id: DEFAULT_TENANT, weight: defaultWeight(records) }];
}

function defaultWeight(records: readonly { id: string; weight: number }[]): number {
  return records.find((r) => r.id === DEFAULT_TENANT)?.weight ?? 1;
}
