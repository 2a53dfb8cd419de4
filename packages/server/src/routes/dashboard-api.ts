/**
 * The few reads the web dashboard needs beyond the admin API (everything
 * else it calls is /ojs/v1/admin/*, /ojs/v1/cron, ...):
 *
 * - GET  /ojs/v1/admin/dashboard/session     the key's role (viewer or admin)
 * - GET  /ojs/v1/admin/dashboard/throughput  completed / failed per bucket over a window
 * - GET  /ojs/v1/admin/dashboard/events      the event log newest first (subject, types)
 * - GET  /ojs/v1/admin/dashboard/queues      every queue: counts, limits and their use
 * - GET  /ojs/v1/admin/dashboard/workflows   recent workflows, newest first
 * - GET  /ojs/v1/admin/dashboard/cron        crons with their next fire times
 *
 * "Run now" on a cron is POST /ojs/v1/cron/:name/trigger (routes/cron.ts).
 *
 * Throughput is counted from the jobs' finished_at (an index range per
 * bucket boundary, decision 0071), not from /metrics: the figures are the
 * store's, shared by every server process on it.
 */
import {
  invalidRequest,
  JOB_STATES,
  nextFireTime,
  parseCronSchedule,
  type StateCounts,
  toIso,
  workflowToWire,
} from '@ojs/core';
import { cronToWire } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { csv } from '../wire.ts';

type Obj = Record<string, unknown>;

/** An integer query parameter within [min, max]; absent -> fallback; anything else is a 400. */
export function intParam(query: Obj, name: string, fallback: number, min: number, max: number) {
  const raw = query[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw invalidRequest(`${name} must be an integer from ${min} to ${max}.`, { field: name });
  }
  return value;
}

/** Refuses query parameters a read does not know (a typo is pointed out, not ignored). */
function knownParams(query: Obj, known: string[]): void {
  for (const key of Object.keys(query)) {
    if (!known.includes(key)) {
      throw invalidRequest(`Unknown query parameter '${key}'; use ${known.join(', ') || 'none'}.`, {
        field: key,
      });
    }
  }
}

/** How many upcoming fire times the cron view shows. */
const NEXT_FIRES = 5;

export async function dashboardApiRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;
  const base = '/ojs/v1/admin/dashboard';

  app.get(`${base}/session`, async (request) => {
    knownParams(request.query as Obj, []);
    return {
      role: request.ojsRole ?? 'admin',
      auth: (app.appConfig.auth?.keys.length ?? 0) > 0,
      version: app.appConfig.implementationVersion ?? null,
      store: engine.store.backend,
      now: toIso(engine.now()),
    };
  });

  app.get(`${base}/throughput`, async (request) => {
    const query = request.query as Obj;
    knownParams(query, ['minutes', 'buckets', 'queue']);
    const minutes = intParam(query, 'minutes', 60, 1, 24 * 60);
    const buckets = intParam(query, 'buckets', 30, 1, 120);
    const queue = typeof query.queue === 'string' && query.queue !== '' ? query.queue : undefined;
    const bucketMs = Math.ceil((minutes * 60_000) / buckets);
    const to = engine.now();
    const from = to - bucketMs * buckets;
    // count(finished >= boundary) for each boundary; neighbours' differences
    // are the buckets. One index range per boundary and state.
    const boundaries = Array.from({ length: buckets }, (_, i) => from + i * bucketMs);
    const cumulative = async (state: 'completed' | 'discarded') =>
      Promise.all(
        boundaries.map((at) =>
          engine.store.countJobs({
            states: [state],
            finishedFrom: at,
            ...(queue === undefined ? {} : { queues: [queue] }),
          }),
        ),
      );
    const [completed, failed] = await Promise.all([
      cumulative('completed'),
      cumulative('discarded'),
    ]);
    const at = (counts: number[], i: number) =>
      Math.max(0, counts[i]! - (i + 1 < counts.length ? counts[i + 1]! : 0));
    return {
      from: toIso(from),
      to: toIso(to),
      bucket_seconds: bucketMs / 1000,
      buckets: boundaries.map((start, i) => ({
        start: toIso(start),
        completed: at(completed, i),
        failed: at(failed, i),
      })),
      totals: { completed: completed[0] ?? 0, failed: failed[0] ?? 0 },
    };
  });

  app.get(`${base}/events`, async (request) => {
    const query = request.query as Obj;
    knownParams(query, ['subject', 'types', 'limit']);
    const limit = intParam(query, 'limit', 50, 1, 500);
    const subject =
      typeof query.subject === 'string' && query.subject !== '' ? query.subject : undefined;
    const events = await engine.listEvents({
      types: csv(query.types),
      ...(subject === undefined ? {} : { subject }),
      newestFirst: true,
      limit,
    });
    // The newest event id: where a live tail of GET /ojs/v1/events?after= starts.
    const latest = subject === undefined && query.types === undefined ? events[0] : undefined;
    return { events, cursor: latest?.id ?? null };
  });

  // Counts from the counters (decision 0036); the visible state (limits in
  // use, what blocks FETCH) only for queues with limits, since it also counts
  // the queue's last hour.
  app.get(`${base}/queues`, async (request) => {
    knownParams(request.query as Obj, []);
    const [queues, counts] = await Promise.all([
      engine.listQueues(),
      engine.store.countJobsByQueue(),
    ]);
    const byName = new Map(queues.map((q) => [q.name, q]));
    const countsOf = new Map<string, StateCounts>();
    for (const { queue, state, count } of counts) {
      let entry = countsOf.get(queue);
      if (entry === undefined) {
        entry = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as StateCounts;
        countsOf.set(queue, entry);
      }
      entry[state] = count;
    }
    const names = [...new Set([...byName.keys(), ...countsOf.keys()])].sort();
    const items = await Promise.all(
      names.map(async (name) => {
        const info = byName.get(name);
        const queueCounts =
          countsOf.get(name) ?? (Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as StateCounts);
        const limited = info?.concurrency !== undefined || info?.rate_limit !== undefined;
        const state = limited ? await engine.queueSettings.state(name) : undefined;
        const blocked = state?.blocked_by ?? [
          ...(info?.paused ? ['paused'] : []),
          ...(queueCounts.available === 0 ? ['empty'] : []),
        ];
        return {
          name,
          paused: info?.paused ?? false,
          counts: queueCounts,
          concurrency: state?.concurrency ?? null,
          rate_limit: state?.rate_limit ?? null,
          blocked_by: blocked,
        };
      }),
    );
    return { items };
  });

  app.get(`${base}/workflows`, async (request) => {
    const query = request.query as Obj;
    knownParams(query, ['limit']);
    const limit = intParam(query, 'limit', 50, 1, 200);
    const started = await engine.listEvents({
      types: ['workflow.started'],
      newestFirst: true,
      limit,
    });
    const ids = [...new Set(started.map((e) => e.subject).filter((s) => s !== undefined))];
    const found = await Promise.all(ids.map((id) => engine.store.getWorkflow(id)));
    return {
      items: found
        .filter((w) => w !== null)
        .map((w) => {
          const wire = workflowToWire(w);
          const { steps: _steps, ...summary } = wire;
          return { ...summary, steps_total: w.steps.length };
        }),
    };
  });

  app.get(`${base}/cron`, async (request) => {
    knownParams(request.query as Obj, []);
    const now = engine.now();
    const crons = await engine.store.listCrons();
    return {
      items: crons.map((cron) => {
        const schedule = parseCronSchedule(cron.expression, cron.timezone);
        const next: string[] = [];
        let at = now;
        for (let i = 0; i < NEXT_FIRES; i++) {
          const fire = nextFireTime(schedule, at);
          if (fire === null) break;
          next.push(toIso(fire));
          at = fire;
        }
        return { ...cronToWire(cron), next_fire_times: cron.enabled ? next : [] };
      }),
    };
  });
}
