/**
 * Multi-tenancy identifiers (ext-multi-tenancy §2.1, ADR-008): a job's
 * tenant lives in `meta.tenant_id`, not in a core field. A job without one
 * belongs to the default tenant; nothing is written into its meta for that,
 * so untenanted jobs stay byte-exact (encryption §3.1).
 */
import { isObject } from './is-object.ts';

/** The tenant of every job and request that names none (C9). */
export const DEFAULT_TENANT = '_default';

/** Request headers naming the tenant: the spec's, then the binding example's alias (C10). */
export const TENANT_HEADERS = ['x-ojs-tenant', 'x-ojs-tenant-id'] as const;

const TENANT_ID = /^[a-zA-Z0-9][a-zA-Z0-9._:-]*$/;

/** MT-001's pattern; at most 255 characters, as queue names. */
export function isTenantId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 255 && TENANT_ID.test(value);
}

/** The tenant a job belongs to: `meta.tenant_id`, else the default tenant. */
export function jobTenant(job: { meta?: unknown }): string {
  const id = isObject(job.meta) ? job.meta.tenant_id : undefined;
  return typeof id === 'string' && id !== '' ? id : DEFAULT_TENANT;
}
