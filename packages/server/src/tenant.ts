/**
 * The tenant a request names (ext-multi-tenancy §2.1, C10): `X-OJS-Tenant`,
 * or its alias `X-OJS-Tenant-Id`; undefined when it names none (an
 * operator's request). The webhooks routes scope by it; the tenancy work
 * replaces this with the server's request tenant resolution.
 */
import { invalidRequest, isTenantId, TENANT_HEADERS } from '@ojs/core';
import type { FastifyRequest } from 'fastify';

export function requestTenant(request: FastifyRequest): string | undefined {
  for (const name of TENANT_HEADERS) {
    const value = request.headers[name];
    if (value === undefined) continue;
    if (!isTenantId(value)) {
      throw invalidRequest(`${name} must be a tenant id (letters, digits, . _ : -).`, {
        header: name,
      });
    }
    return value;
  }
  return undefined;
}
