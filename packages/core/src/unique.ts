/**
 * Unique jobs (features §2): the key is a hash over the dimensions the
 * policy names, and the conflict predicate says whether an existing job
 * still holds it. Stores enforce the lock; this module only decides.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
import type { JobRecord, UniquePolicy } from './job-types.ts';

function selectFields(source: unknown, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (source !== null && typeof source === 'object' && !Array.isArray(source)) {
    for (const field of fields) out[field] = (source as Record<string, unknown>)[field] ?? null;
  }
  return out;
}

/**
 * The dimensions that make up the key. `args_keys` selects fields of an
 * object in args[0] (X-11: args is an array on the wire, keyed args live in
 * its first element).
 */
export function uniqueKeyMaterial(
  job: Pick<JobRecord, 'type' | 'queue' | 'args' | 'meta' | 'extensions' | 'version_num'>,
  policy: UniquePolicy,
): Record<string, unknown> {
  // The job type is always part of the key (features §2.2).
  const material: Record<string, unknown> = { type: job.type };
  for (const key of policy.keys) {
    switch (key) {
      case 'type':
        material.type = job.type;
        break;
      case 'queue':
        material.queue = job.queue;
        break;
      case 'args':
        material.args = policy.args_keys ? selectFields(job.args[0], policy.args_keys) : job.args;
        break;
      case 'meta':
        material.meta = policy.meta_keys ? selectFields(job.meta, policy.meta_keys) : job.meta;
        break;
      case 'version':
        // Compared as a version: "2.0", 2 and "2.0.0" are the same version.
        material.version = job.version_num ?? null;
        break;
    }
  }
  if (policy.meta_keys && !policy.keys.includes('meta')) {
    material.meta = selectFields(job.meta, policy.meta_keys);
  }
  return material;
}

export function computeUniqueKey(
  job: Pick<JobRecord, 'type' | 'queue' | 'args' | 'meta' | 'extensions' | 'version_num'>,
  policy: UniquePolicy,
): string {
  const digest = createHash('sha256')
    .update(canonicalJson(uniqueKeyMaterial(job, policy)))
    .digest('hex');
  return `ojs:unique:${digest}`;
}

/**
 * Does `existing` (the job holding the lock since `lockedAt`) block a new
 * job with `policy`? Only states the policy lists conflict, and a period
 * bounds the lock's life.
 */
export function uniqueConflicts(
  existing: JobRecord,
  policy: UniquePolicy,
  lockedAt: number,
  now: number,
): boolean {
  if (!policy.states.includes(existing.state)) return false;
  if (policy.period_ms !== undefined && lockedAt + policy.period_ms <= now) return false;
  return true;
}
