/**
 * API-key authentication (SEC §15): `Authorization: Bearer <key>`, each key
 * bound to a role. Off when no keys are configured; main() refuses to bind
 * a non-loopback address without keys.
 */
import { type AuthConfig, matchApiKey, OjsError, type Role } from '@ojs/core';
import type { FastifyRequest } from 'fastify';
import { PUBLIC_PATHS } from './routes/health.ts';

/** The dashboard's own files (HTML, JS, CSS) carry no data: they load without a key. */
export const DASHBOARD_PREFIX = '/ojs/admin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The role of the key that authenticated the request; admin when auth is off. */
    ojsRole?: Role;
    /** The tenant the authenticating key is bound to (ext-multi-tenancy). */
    ojsKeyTenant?: string;
  }
}

/**
 * Which roles may call a route: producers enqueue and read, workers run
 * jobs, viewers (the dashboard's read-only role) read everything outside
 * the worker protocol and change nothing, admin does all.
 */
function rolesFor(request: FastifyRequest): Role[] {
  const path = request.url.split('?')[0]!;
  if (
    (request.method === 'GET' || request.method === 'HEAD') &&
    !path.startsWith('/ojs/v1/workers/')
  ) {
    return [...rolesForPath(path), 'viewer'];
  }
  return rolesForPath(path);
}

function rolesForPath(path: string): Role[] {
  if (path === '/ojs/manifest' || path === '/ojs/v1/health') return ['producer', 'worker', 'admin'];
  if (path.startsWith('/ojs/v1/workers/') || /^\/ojs\/v1\/jobs\/[^/]+\/(ack|nack)$/.test(path)) {
    return ['worker', 'admin'];
  }
  // Workers report progress; producers read it.
  if (/^\/ojs\/v1\/jobs\/[^/]+\/progress$/.test(path)) return ['producer', 'worker', 'admin'];
  // Producers enqueue jobs and workflows and read them back; everything else
  // (queues, cron, dead letter, events, admin) is the admin role's.
  if (path.startsWith('/ojs/v1/jobs') || path.startsWith('/ojs/v1/workflows')) {
    return ['producer', 'admin'];
  }
  return ['admin'];
}

/** The key a request presents, or the 401 to answer; undefined when auth is off. */
function keyOf(
  request: FastifyRequest,
  config: AuthConfig,
): { key: string; role: Role; tenant?: string } | OjsError | undefined {
  if (config.keys.length === 0) return undefined;
  const header = request.headers.authorization;
  const token =
    typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
  if (token === undefined) {
    return new OjsError('unauthenticated', 'Missing Authorization: Bearer <api key>.');
  }
  return matchApiKey(config, token) ?? new OjsError('unauthenticated', 'The API key is not valid.');
}

/**
 * Authentication alone (no role check): the 401 for a request without a
 * valid key, else undefined. Used for requests the router refuses before
 * any route (a malformed path), so they tell nothing to an anonymous client.
 */
export function authenticate(request: FastifyRequest, config: AuthConfig): OjsError | undefined {
  const match = keyOf(request, config);
  return match instanceof OjsError ? match : undefined;
}

/**
 * Authentication and the role check of one request (SEC §15): the 401 or
 * 403 to answer, else undefined, with the key's role and tenant set on the
 * request. Called by the binding's one onRequest hook (app.ts), so a
 * request pays no hook and no promise of its own for it.
 */
export function authorize(request: FastifyRequest, config: AuthConfig): OjsError | undefined {
  if (config.keys.length === 0) return undefined;
  // Health and readiness probes carry no key (load balancers, orchestrators).
  if (request.method === 'GET' && PUBLIC_PATHS.has(request.url.split('?')[0]!)) return undefined;
  if (isDashboardAsset(request.url)) return undefined;
  const match = keyOf(request, config);
  if (match === undefined) return undefined;
  if (match instanceof OjsError) return match;
  request.ojsRole = match.role;
  if (match.tenant !== undefined) request.ojsKeyTenant = match.tenant;
  if (!rolesFor(request).includes(match.role)) {
    return new OjsError(
      'permission_denied',
      `The '${match.role}' role may not call ${request.method} ${request.url.split('?')[0]}.`,
    );
  }
  return undefined;
}

/** A path under /ojs/admin (the dashboard's static files), not the admin API. */
export function isDashboardAsset(url: string): boolean {
  return (
    url === DASHBOARD_PREFIX ||
    url.startsWith(`${DASHBOARD_PREFIX}/`) ||
    url.startsWith(`${DASHBOARD_PREFIX}?`)
  );
}
