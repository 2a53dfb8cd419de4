/**
 * The claim on Redis: read the head of each queue (read.lua `claim`: the
 * available jobs in priority and FIFO order, a page per round trip), let
 * core decide each candidate's claimed record, then apply the page in one
 * script (apply.lua, 'each' mode) that claims at most `wanted` of them, each
 * guarded on its rev and state 'available' and on the limits as they are
 * now: queue pause, concurrency and rate window; the job's rate key
 * concurrency and window. A candidate another process claimed first fails
 * its guard and is skipped; keys found at their limit are left out of later
 * pages and a queue found paused or at its limit is not read again, as on
 * the other stores. Two round trips per page, whatever the page's size.
 */
import {
  type ClaimedJobs,
  type ClaimRequest,
  claim,
  claimSteps,
  DEFAULT_TENANT,
  handlersAdmit,
  type JobRecord,
  jobEvent,
  jobTenant,
  tenantColumn,
} from '@ojs/core';
import { mergeJob, type Reply, splitJob, splitStored } from './records.ts';
import { type Applied, Ops } from './scripts.ts';

export interface ClaimIo {
  read(args: string[]): Promise<Reply[]>;
  apply(ops: Ops, mode: 'each', now: number, wanted: number): Promise<Applied>;
}

/** Candidates read beyond the wanted count, for the ones other processes take first. */
const SPARE_CANDIDATES = 4;
/** Candidates a claim looks at before it gives up on a backlog no handler or limit admits. */
const MAX_SCANNED = 10_000;

export async function claimJobs(
  io: ClaimIo,
  request: ClaimRequest,
  kept: ClaimedJobs,
): Promise<JobRecord[]> {
  if (request.takes === undefined) return claimInOrder(io, request, kept);
  // Fair scheduling's takes first, then the fill (core claimSteps): each a
  // claim of one queue, each job guarded on its own as always.
  const claimed: JobRecord[] = [];
  const steps = claimSteps(request.takes, request.queues, request.count);
  for (let step = steps.next(0); !step.done; ) {
    const { queue, count } = step.value;
    const jobs = await claimInOrder(io, { ...request, queues: [queue], count }, kept);
    claimed.push(...jobs);
    step = steps.next(jobs.length);
  }
  return claimed;
}

async function claimInOrder(
  io: ClaimIo,
  request: ClaimRequest,
  kept: ClaimedJobs,
): Promise<JobRecord[]> {
  const claimed: JobRecord[] = [];
  // A named tenant's claim reads its own index (avt:<queue>:<tenant>); the
  // default tenant's jobs have none, so its claim reads the queue's and skips.
  const indexedTenant =
    request.tenant === undefined || request.tenant === DEFAULT_TENANT ? '' : request.tenant;
  const cursors = new Map<string, string>();
  const closed = new Set<string>();
  const blocked = new Set<string>();
  /** Tenants found at their max_concurrency: their jobs are left for later claims. */
  const blockedTenants = new Set<string>();
  let scanned = 0;
  while (claimed.length < request.count && scanned < MAX_SCANNED) {
    const queues = request.queues.filter((q) => !closed.has(q));
    if (queues.length === 0) break;
    const wanted = request.count - claimed.length;
    const page = wanted + SPARE_CANDIDATES;
    const reply = (await io.read([
      'claim',
      String(page),
      indexedTenant,
      ...queues.flatMap((q) => [q, cursors.get(q) ?? '-inf']),
    ])) as Reply[][];
    const ops = new Ops();
    const decided: {
      job: JobRecord;
      base: string;
      life: string;
      queue: string;
      key?: string;
      tenant?: string;
    }[] = [];
    let found = 0;
    for (let i = 0; i < queues.length; i++) {
      const queue = queues[i]!;
      const entries = reply[i]!;
      if (entries[0] === 'unread') continue;
      if (entries[0] === 'paused') {
        closed.add(queue);
        continue;
      }
      const asked = page - found;
      const count = (entries.length - 1) / 3;
      found += count;
      // A queue that had fewer than asked for has nothing after this page.
      if (count < asked) closed.add(queue);
      for (let j = 1; j < entries.length; j += 3) {
        cursors.set(queue, String(entries[j + 1]));
        scanned++;
        if (entries[j + 2] === null) continue;
        const stored = splitStored(String(entries[j + 2]));
        const base = stored.base;
        const job = mergeJob(stored.seq, base, stored.life);
        if (job.expires_at_ms !== undefined && job.expires_at_ms <= request.now) continue;
        if (!handlersAdmit(request.handlers, job)) continue;
        // The default tenant's claim skips named tenants' jobs (read from
        // the queue's index: a large named backlog is scanned up to MAX_SCANNED).
        if (request.tenant !== undefined && jobTenant(job) !== request.tenant) continue;
        const tenant = tenantColumn(job);
        const tenantMax = tenant === null ? undefined : request.tenantConcurrency?.[tenant];
        if (tenant !== null && blockedTenants.has(tenant)) continue;
        const limit = job.rate_limit;
        if (limit !== undefined && blocked.has(limit.key)) continue;
        const active = claim(job, {
          workerId: request.workerId,
          now: request.now,
          visibilityTimeoutMs: request.visibilityTimeoutMs,
        });
        const parts = splitJob(active, job);
        ops.job(job.id, job.rev, 'available').queueAdmits(queue);
        if (limit?.concurrency !== undefined) ops.keyConcurrency(limit.key, limit.concurrency);
        if (tenantMax !== undefined) ops.tenantConcurrency(tenant!, tenantMax);
        if (limit?.rate) ops.keyRate(limit.key, limit.rate.limit, limit.rate.period_ms);
        ops.put(active, job, parts).takeQueueRate(queue);
        if (limit?.rate) ops.takeKeyRate(limit.key, limit.rate.period_ms);
        ops.events([
          jobEvent(
            'job.started',
            active,
            { worker_id: active.worker_id ?? null, attempt: active.attempt },
            request.now,
          ),
        ]);
        ops.end();
        decided.push({
          job: active,
          base,
          life: parts.life,
          queue,
          key: limit?.key,
          tenant: tenant ?? undefined,
        });
      }
    }
    if (found === 0) break;
    if (decided.length === 0) continue;
    const applied = await io.apply(ops, 'each', request.now, wanted);
    applied.statuses.forEach((status, i) => {
      const { job, base, life, queue, key, tenant } = decided[i]!;
      if (status === 1) {
        claimed.push(job);
        if (job.workflow_id === undefined) {
          // A parse of the JSON written: the caller holds `job` and may change it.
          kept.keep(job.id, base.length + life.length, () => mergeJob(job.seq!, base, life));
        }
      } else if (status === 'paused' || status === 'qconc' || status === 'qrate') {
        closed.add(queue);
      } else if ((status === 'kconc' || status === 'krate') && key !== undefined) {
        blocked.add(key);
      } else if (status === 'tconc' && tenant !== undefined) {
        blockedTenants.add(tenant);
      }
    });
  }
  return claimed;
}
