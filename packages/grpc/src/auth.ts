/**
 * API keys in call metadata (features.md §11): `authorization: Bearer <key>`
 * or `x-ojs-api-key: <key>`, the same keys and roles as the HTTP binding
 * (core api-keys.ts): producers enqueue and read jobs and workflows, workers
 * run jobs, admin does everything; Manifest and Health are open to any key.
 */
import type * as grpc from '@grpc/grpc-js';
import {
  type ApiKey,
  type AuthConfig,
  matchApiKey,
  OjsError,
  type Role,
  resolveTenant,
  TENANT_HEADERS,
  type TenantScope,
} from '@ojs/core';

const ANY: Role[] = ['producer', 'worker', 'admin'];
const WORKER: Role[] = ['worker', 'admin'];
const PRODUCER: Role[] = ['producer', 'admin'];

/** Roles per RPC; RPCs not listed are the admin role's (queues, dead letter, cron, events). */
const ROLES: Record<string, Role[]> = {
  Manifest: ANY,
  Health: ANY,
  Enqueue: PRODUCER,
  EnqueueBatch: PRODUCER,
  EnqueueMany: PRODUCER,
  GetJob: PRODUCER,
  CancelJob: PRODUCER,
  ActivateJob: PRODUCER,
  CreateWorkflow: PRODUCER,
  GetWorkflow: PRODUCER,
  CancelWorkflow: PRODUCER,
  Fetch: WORKER,
  Ack: WORKER,
  Nack: WORKER,
  Heartbeat: WORKER,
  StreamJobs: WORKER,
  AckBatch: WORKER,
  HeartbeatMany: WORKER,
};

function presentedKey(metadata: grpc.Metadata): string | undefined {
  const header = metadata.get('authorization')[0];
  if (typeof header === 'string' && header.startsWith('Bearer ')) return header.slice(7).trim();
  const key = metadata.get('x-ojs-api-key')[0];
  return typeof key === 'string' ? key.trim() : undefined;
}

/**
 * Throws UNAUTHENTICATED / PERMISSION_DENIED (as OjsError) unless the call
 * may proceed; returns the key that authenticated it (none when auth is off).
 */
export function authorize(
  config: AuthConfig | undefined,
  method: string,
  metadata: grpc.Metadata,
): ApiKey | undefined {
  if (config === undefined || config.keys.length === 0) return undefined;
  const token = presentedKey(metadata);
  if (token === undefined) {
    throw new OjsError(
      'unauthenticated',
      'Missing API key: send metadata authorization: Bearer <key> or x-ojs-api-key.',
    );
  }
  const match = matchApiKey(config, token);
  if (match === undefined) throw new OjsError('unauthenticated', 'The API key is not valid.');
  if (!(ROLES[method] ?? ['admin']).includes(match.role)) {
    throw new OjsError('permission_denied', `The '${match.role}' role may not call ${method}.`);
  }
  return match;
}

/**
 * The tenant a call acts for: metadata `x-ojs-tenant` (or `x-ojs-tenant-id`)
 * and the key's bound tenant, resolved as the HTTP binding resolves its
 * headers (core resolveTenant).
 */
export function callTenant(
  metadata: grpc.Metadata,
  key: ApiKey | undefined,
): TenantScope | undefined {
  let named: string | undefined;
  for (const name of TENANT_HEADERS) {
    const value = metadata.get(name)[0];
    if (typeof value === 'string') {
      named = value;
      break;
    }
  }
  if (named === undefined && key?.tenant === undefined) return undefined;
  return resolveTenant(named, key?.tenant);
}
