/**
 * The indexes of a job on Redis: which sorted sets hold its id, and with
 * what score, as a function of its columns (core jobColumns). Computed here
 * for the job before and after a write; the apply function receives only
 * the difference (sets to leave, sets to enter) and applies it under the
 * write's guard on the job's rev, which makes the "before" exact. Keeping
 * this in TypeScript leaves the Lua with no rule of its own and costs V8 a
 * fraction of what the same table work costs Lua 5.1 per job.
 *
 * Sets (all under the deployment's `{prefix}:`):
 *
 * | set | members | score |
 * | --- | --- | --- |
 * | `all` | every job | seq |
 * | `av:<queue>` | available jobs: the claim order and the (queue, available) set | (100 - priority) * 2^44 + seq |
 * | `qs:<queue>:<state>` | the queue's jobs in any other state | seq |
 * | `due` | scheduled and retryable jobs | run_at |
 * | `exp` / `wexp` | unstarted jobs with expires_at, outside / inside workflows | expires_at |
 * | `lease` | active jobs | deadline (lease or execution timeout) |
 * | `dead`, `dead:<queue>` | dead-lettered jobs | seq |
 * | `fin:<queue>:<state>` | finished jobs (throughput) | finished_at |
 * | `ret:<queue>:<class>` | finished jobs outside workflows, by retention class | finished_at |
 * | `rka:<key>` / `rkw:<key>` | active / available jobs with a rate-limit key | seq |
 * | `ta:<tenant>` | active jobs of a named tenant (its max_concurrency) | seq |
 * | `avt:<queue>:<tenant>` | a named tenant's available jobs: its claim (queue names hold no ':') | as `av:<queue>` |
 * | `wfj:<workflow>` | a workflow's jobs | seq |
 */
import type { JobColumns } from '@ojs/core';

/** The width of one priority band of av:<queue> (seq < 2^44, so every score is exact). */
export const PRIORITY_SPAN = 2 ** 44;

/**
 * An index entry's score: a number, or `s<n>` for the job's seq plus n (a
 * new job's seq is given inside the apply call).
 */
export type Score = string;

const UNSTARTED = new Set(['scheduled', 'available', 'pending', 'retryable']);
const TERMINAL = new Set(['completed', 'cancelled', 'discarded']);

/** Set name (without the prefix) -> score of every index a job with these columns is in. */
export function indexEntries(c: JobColumns): Map<string, Score> {
  const e = new Map<string, Score>();
  const { state, queue } = c;
  e.set('all', 's0');
  if (state === 'available') {
    const score = `s${(100 - c.priority) * PRIORITY_SPAN}`;
    e.set(`av:${queue}`, score);
    if (c.tenant_id !== null) e.set(`avt:${queue}:${c.tenant_id}`, score);
  } else e.set(`qs:${queue}:${state}`, 's0');
  if ((state === 'scheduled' || state === 'retryable') && c.run_at !== null) {
    e.set('due', String(c.run_at));
  }
  if (c.expires_at !== null && UNSTARTED.has(state)) {
    e.set(c.workflow_id === null ? 'exp' : 'wexp', String(c.expires_at));
  }
  if (state === 'active' && c.deadline !== null) e.set('lease', String(c.deadline));
  if (c.dead_letter) {
    e.set('dead', 's0');
    e.set(`dead:${queue}`, 's0');
  }
  if (TERMINAL.has(state) && c.finished_at !== null) {
    e.set(`fin:${queue}:${state}`, String(c.finished_at));
    if (c.workflow_id === null) {
      const retention = c.dead_letter ? 'dead_letter' : state;
      e.set(`ret:${queue}:${retention}`, String(c.finished_at));
    }
  }
  if (c.rate_key !== null) {
    if (state === 'active') e.set(`rka:${c.rate_key}`, 's0');
    if (state === 'available') e.set(`rkw:${c.rate_key}`, 's0');
  }
  if (c.tenant_id !== null && state === 'active') e.set(`ta:${c.tenant_id}`, 's0');
  if (c.workflow_id !== null) e.set(`wfj:${c.workflow_id}`, 's0');
  return e;
}

/** What a write changes: sets the job leaves, and sets it enters or whose score changes. */
export interface IndexChange {
  leave: string[];
  enter: [string, Score][];
}

export function indexChange(before: JobColumns | null, after: JobColumns | null): IndexChange {
  const old = before === null ? new Map<string, Score>() : indexEntries(before);
  const next = after === null ? new Map<string, Score>() : indexEntries(after);
  const leave: string[] = [];
  const enter: [string, Score][] = [];
  for (const key of old.keys()) if (!next.has(key)) leave.push(key);
  for (const [key, score] of next) if (old.get(key) !== score) enter.push([key, score]);
  return { leave, enter };
}
