/**
 * The admin API extension (`urn:ojs:ext:admin-api`, http-binding §10) under
 * /ojs/v1/admin: stats, queues with counts, pause/resume and configuration,
 * job listing and detail, single and bulk retry / cancel / delete (bulk and
 * purge need `confirm: true`), workers with quiet / terminate. Lists answer
 * `{items, pagination}`.
 */
import {
  invalidRequest,
  JOB_STATES,
  type JobState,
  parseIsoDuration,
  type StateCounts,
  toIso,
  toWire,
  validateQueueName,
} from '@ojs/core';
import type { WorkerRecord } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import {
  bulkAction,
  bulkFilter,
  bulkStep,
  jobDetail,
  listRequest,
  pagination,
  requireConfirm,
} from '../admin-wire.ts';
import { objectBody } from '../wire.ts';

type Obj = Record<string, unknown>;

function zeroCounts(): StateCounts {
  return Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as StateCounts;
}

export async function adminRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;
  const startedAt = Date.now();

  /** Counts per queue (every known queue, zeros included). */
  const queueCounts = async () => {
    const [queues, counts] = await Promise.all([
      engine.listQueues(),
      engine.store.countJobsByQueue(),
    ]);
    const byQueue = new Map(queues.map((q) => [q.name, { info: q, counts: zeroCounts() }]));
    for (const { queue, state, count } of counts) {
      let entry = byQueue.get(queue);
      if (entry === undefined) {
        entry = { info: { name: queue, paused: false }, counts: zeroCounts() };
        byQueue.set(queue, entry);
      }
      entry.counts[state] = count;
    }
    return [...byQueue.values()].sort((a, b) => a.info.name.localeCompare(b.info.name));
  };

  const throughput = async (queue?: string) => {
    const since = engine.now() - 60_000;
    const queues = queue === undefined ? {} : { queues: [queue] };
    const [processed, failed] = await Promise.all([
      engine.store.countJobs({ ...queues, states: ['completed'], finishedFrom: since }),
      engine.store.countJobs({ ...queues, states: ['discarded'], finishedFrom: since }),
    ]);
    return { processed_per_minute: processed, failed_per_minute: failed };
  };

  const workerWire = (worker: WorkerRecord) => ({
    id: worker.id,
    hostname: worker.hostname ?? null,
    state: engine.workers.displayState(worker),
    reported_state: worker.state,
    directive: worker.directive ?? null,
    queues: worker.queues ?? [],
    concurrency: worker.concurrency ?? null,
    pool: worker.pool ?? null,
    active_jobs: worker.active_jobs,
    active_job_ids: worker.active_job_ids,
    started_at: worker.started_at,
    last_heartbeat_at: worker.last_heartbeat_at,
    version: worker.version ?? null,
    metadata: worker.pid === undefined ? {} : { pid: worker.pid },
  });

  // ------------------------------------------------------------ stats

  app.get('/ojs/v1/admin/stats', async () => {
    const [queues, workers, rate] = await Promise.all([
      queueCounts(),
      engine.workers.list(),
      throughput(),
    ]);
    const jobs = zeroCounts();
    for (const { counts } of queues) {
      for (const state of JOB_STATES) jobs[state] += counts[state];
    }
    return {
      queues: queues.length,
      workers: workers.filter((w) => engine.workers.displayState(w) !== 'stale').length,
      jobs,
      throughput: rate,
      uptime_seconds: Math.floor((Date.now() - startedAt) / 1000),
      draining: engine.draining,
    };
  });

  // ------------------------------------------------------------ queues

  app.get('/ojs/v1/admin/queues', async (request) => {
    const { limit, page } = listRequest(request.query as Obj, true);
    const all = await queueCounts();
    const slice = all.slice(((page ?? 1) - 1) * limit, (page ?? 1) * limit);
    return {
      items: slice.map(({ info, counts }) => ({
        name: info.name,
        state: info.paused ? 'paused' : 'active',
        paused: info.paused,
        counts,
        created_at: info.created_at ?? null,
      })),
      pagination: { total: all.length, page: page ?? 1, per_page: limit },
    };
  });

  app.get<{ Params: { name: string } }>('/ojs/v1/admin/queues/:name', async (request) => {
    const name = validateQueueName(request.params.name, 'queue');
    const [stats, configuration, rate] = await Promise.all([
      engine.queueStats(name),
      engine.queueSettings.configuration(name),
      throughput(name),
    ]);
    const { counts } = stats;
    return {
      name,
      state: stats.paused ? 'paused' : 'active',
      paused: stats.paused,
      counts,
      depth: counts.available + counts.scheduled + counts.retryable + counts.pending,
      throughput: rate,
      configuration,
    };
  });

  const setPaused = (paused: boolean) => async (request: { params: { name: string } }) => {
    const info = await engine.setQueuePaused(request.params.name, paused);
    return { name: info.name, paused, ...(paused ? { paused_at: toIso(engine.now()) } : {}) };
  };
  app.post<{ Params: { name: string } }>('/ojs/v1/admin/queues/:name/pause', setPaused(true));
  app.post<{ Params: { name: string } }>('/ojs/v1/admin/queues/:name/resume', setPaused(false));

  app.get<{ Params: { name: string } }>('/ojs/v1/admin/queues/:name/state', async (request) =>
    engine.queueSettings.state(request.params.name),
  );

  app.put<{ Params: { name: string } }>('/ojs/v1/admin/queues/:name/config', async (request) => ({
    name: request.params.name,
    configuration: await engine.queueSettings.configure(
      request.params.name,
      objectBody(request.body),
    ),
  }));
  app.get<{ Params: { name: string } }>('/ojs/v1/admin/queues/:name/config', async (request) => ({
    name: request.params.name,
    configuration: await engine.queueSettings.configuration(
      validateQueueName(request.params.name, 'queue'),
    ),
  }));

  // Purge a queue's finished jobs: {states, older_than?, confirm: true} (ADM-R001).
  app.delete<{ Params: { name: string } }>('/ojs/v1/admin/queues/:name/jobs', async (request) => {
    const name = validateQueueName(request.params.name, 'queue');
    const body = objectBody(request.body);
    requireConfirm(body);
    const states = body.states;
    if (
      !Array.isArray(states) ||
      states.length === 0 ||
      !states.every((s) => s === 'completed' || s === 'cancelled' || s === 'discarded')
    ) {
      throw invalidRequest('states must list finished states: completed, cancelled, discarded.', {
        field: 'states',
      });
    }
    const olderThan =
      body.older_than === undefined ? null : parseIsoDuration(String(body.older_than));
    if (body.older_than !== undefined && olderThan === null) {
      throw invalidRequest('older_than must be an ISO 8601 duration.', { field: 'older_than' });
    }
    const result = await engine.jobs.bulk('delete', {
      queues: [name],
      states: states as JobState[],
      ...(olderThan === null ? {} : { createdTo: engine.now() - olderThan }),
    });
    return {
      purged_count: result.succeeded,
      states,
      failed: result.failed,
      truncated: result.truncated,
    };
  });

  // ------------------------------------------------------------ jobs

  app.get('/ojs/v1/admin/jobs', async (request) => {
    const listing = listRequest(request.query as Obj, true);
    // A request naming a tenant sees that tenant's jobs; none: every job.
    const page = await engine.jobs.list(listing, request.ojsTenant);
    return { items: page.jobs.map(toWire), pagination: pagination(page, listing.limit) };
  });

  app.get<{ Params: { id: string } }>('/ojs/v1/admin/jobs/:id', async (request) =>
    jobDetail(await engine.getJob(request.params.id, request.ojsTenant)),
  );

  for (const action of ['retry', 'cancel'] as const) {
    app.post<{ Params: { id: string } }>(`/ojs/v1/admin/jobs/:id/${action}`, async (request) => {
      objectBody(request.body, { allowEmpty: true });
      return {
        job: toWire(await engine.jobs.act(action, request.params.id, request.ojsTenant)),
      };
    });
  }
  app.delete<{ Params: { id: string } }>('/ojs/v1/admin/jobs/:id', async (request, reply) => {
    await engine.jobs.act('delete', request.params.id, request.ojsTenant);
    reply.code(204);
  });

  app.post<{ Params: { action: string } }>('/ojs/v1/admin/jobs/bulk/:action', async (request) => {
    const action = bulkAction(request.params.action);
    const body = objectBody(request.body);
    return engine.jobs.bulk(action, bulkFilter(body), bulkStep(body), request.ojsTenant);
  });

  // ------------------------------------------------------------ workers

  app.get('/ojs/v1/admin/workers', async (request) => {
    const { limit, page } = listRequest(request.query as Obj, true);
    const all = await engine.workers.list();
    const items = all.map(workerWire);
    const summary = { total: items.length, running: 0, quiet: 0, stale: 0 };
    for (const item of items) {
      if (item.state === 'running') summary.running++;
      else if (item.state === 'stale') summary.stale++;
      else summary.quiet++;
    }
    const from = ((page ?? 1) - 1) * limit;
    return {
      items: items.slice(from, from + limit),
      summary,
      pagination: { total: items.length, page: page ?? 1, per_page: limit },
    };
  });

  app.get<{ Params: { id: string } }>('/ojs/v1/admin/workers/:id', async (request) =>
    workerWire(await engine.workers.get(request.params.id)),
  );

  for (const directive of ['quiet', 'terminate'] as const) {
    app.post<{ Params: { id: string } }>(
      `/ojs/v1/admin/workers/:id/${directive}`,
      async (request) => {
        objectBody(request.body, { allowEmpty: true });
        return workerWire(await engine.workers.direct(request.params.id, directive));
      },
    );
  }
}
