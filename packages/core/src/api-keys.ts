/**
 * API keys and their roles (SEC §15, features §11), shared by both
 * bindings: the HTTP binding reads a key from `Authorization: Bearer`, the
 * gRPC binding from call metadata, and both match it here. Each binding
 * keeps its own table of which roles may call what (decision 0089).
 */
import { timingSafeEqual } from 'node:crypto';
import { isTenantId } from './tenancy.ts';

export type Role = 'producer' | 'worker' | 'viewer' | 'admin';

/** Every role a key may carry. */
export const ROLES: readonly Role[] = ['producer', 'worker', 'viewer', 'admin'];

export interface ApiKey {
  key: string;
  role: Role;
  /**
   * The tenant the key acts for (ext-multi-tenancy): its requests are
   * scoped to it, and naming another tenant is a 403.
   */
  tenant?: string;
}

export interface AuthConfig {
  keys: ApiKey[];
}

/**
 * `role:key,role:key,...` (a key without a role is admin's); `role@tenant:key`
 * binds the key to a tenant.
 */
export function parseApiKeys(spec: string): AuthConfig {
  const keys = spec
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [role, key] = entry.includes(':')
        ? (entry.split(/:(.*)/s) as [string, string])
        : ['admin', entry];
      const [roleName, tenant] = role.split('@') as [string, string | undefined];
      if (!(ROLES as readonly string[]).includes(roleName)) {
        throw new Error(`Unknown API key role '${roleName}' (use ${ROLES.join(', ')}).`);
      }
      if (key.length < 16) throw new Error('API keys must be at least 16 characters.');
      if (tenant === undefined) return { role: roleName as Role, key };
      if (!isTenantId(tenant))
        throw new Error(`The API key tenant '${tenant}' is not a tenant id.`);
      return { role: roleName as Role, key, tenant };
    });
  return { keys };
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The configured key equal to `token` (compared in constant time), or undefined. */
export function matchApiKey(config: AuthConfig, token: string): ApiKey | undefined {
  return config.keys.find((k) => same(k.key, token));
}
