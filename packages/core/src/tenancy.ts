/**
 * Multi-tenancy identifiers (ext-multi-tenancy §2.1, ADR-008): a job's
 * tenant lives in `meta.tenant_id`, not in a core field. A job without one
 * belongs to the default tenant; nothing is written into its meta for that,
 * so untenanted jobs stay byte-exact (encryption §3.1).
 */
import { OjsError } from './errors.ts';
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

/**
 * The tenant a request acts for, resolved once by the binding (header,
 * gRPC metadata, or the API key's bound tenant) and handed to every engine
 * operation. `bound`: it comes from the credential, so naming another
 * tenant is a 403, not a 400. No scope = an operator or a shared worker:
 * it sees every tenant.
 */
export interface TenantScope {
  id: string;
  bound?: boolean;
}

/**
 * The request's tenant from what the binding read: the API key's tenant
 * (a principal), then the header. A malformed header is a 400; a header
 * naming another tenant than the key's is a 403 `tenant_access_denied`.
 */
export function resolveTenant(
  header: string | undefined,
  keyTenant: string | undefined,
): TenantScope | undefined {
  if (header !== undefined && header !== '' && !isTenantId(header)) {
    throw new OjsError(
      'invalid_request',
      `The tenant header must match ${TENANT_ID.source} (got '${String(header).slice(0, 64)}').`,
      { field: 'X-OJS-Tenant' },
    );
  }
  const named = header === '' ? undefined : header;
  if (keyTenant !== undefined) {
    if (named !== undefined && named !== keyTenant) throw tenantDenied(named);
    return { id: keyTenant, bound: true };
  }
  return named === undefined ? undefined : { id: named };
}

export function tenantDenied(tenant: string): OjsError {
  return new OjsError(
    'tenant_access_denied',
    `This credential may not act for tenant '${tenant}'.`,
    { tenant_id: tenant },
  );
}

/**
 * The tenant a new job is stored under, written into its meta: the
 * body's `meta.tenant_id` must match MT-001's pattern, and when the
 * request names a tenant too they must agree (a header: 400; a bound
 * credential: 403). With a scope and no body tenant the scope's tenant is
 * written; with neither nothing is written (the default tenant, byte-exact
 * meta). `strict`: a job with no tenant at all is refused (C9's opt-in).
 */
export function assignTenant(
  job: { meta: Record<string, unknown> },
  scope: TenantScope | undefined,
  strict = false,
): void {
  const own = job.meta.tenant_id;
  if (own !== undefined && !isTenantId(own)) {
    throw new OjsError('invalid_request', `meta.tenant_id must match ${TENANT_ID.source}.`, {
      field: 'meta.tenant_id',
    });
  }
  if (scope === undefined) {
    if (own === undefined && strict) {
      throw new OjsError(
        'invalid_request',
        'This server requires a tenant: send X-OJS-Tenant or meta.tenant_id.',
        { field: 'X-OJS-Tenant' },
      );
    }
    return;
  }
  if (own === undefined) {
    job.meta.tenant_id = scope.id;
    return;
  }
  if (own !== scope.id) {
    if (scope.bound) throw tenantDenied(own);
    throw new OjsError(
      'invalid_request',
      `meta.tenant_id '${own}' does not match the X-OJS-Tenant header '${scope.id}'.`,
      { field: 'meta.tenant_id', header: scope.id, body: own },
    );
  }
}

/** Whether a request of `scope` may see or act on `job` (no scope: every job). */
export function inTenant(
  job: { meta?: unknown },
  scope: TenantScope | string | undefined,
): boolean {
  if (scope === undefined) return true;
  return jobTenant(job) === (typeof scope === 'string' ? scope : scope.id);
}

/**
 * The tenant index column of a job: its named tenant, or null for the
 * default tenant (so untenanted jobs add no index entries; a claim or a
 * listing of `_default` reads `tenant_id IS NULL`).
 */
export function tenantColumn(job: { meta?: unknown }): string | null {
  const tenant = jobTenant(job);
  return tenant === DEFAULT_TENANT ? null : tenant;
}
