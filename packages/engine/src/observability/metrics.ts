/**
 * Prometheus metrics (prom-client) under the names of http-binding §16.3
 * (OBS §8, rendered the Prometheus way: `ojs.job.enqueued` ->
 * `ojs_job_enqueued_total`, seconds in the name of histograms).
 *
 * Per-job cost: the series of each (queue, type) are created once and
 * cached, and they are series.ts's, not prom-client's children (which hash
 * their labels on every call), so counting a job is two Map lookups and an
 * addition, with no key to build; durations read the timestamps a batch shares once
 * (Elapsed). Queue depths are read at scrape time from the per-(queue,
 * state) counters the stores keep (decisions 0036, 0038), one cheap read
 * per scrape, never a COUNT over the jobs table.
 */
import { JOB_STATES, type JobRecord, type JobState, type Store } from '@ojs/core';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { WebhookObserver } from '../webhooks/dispatcher.ts';
import { Elapsed, finishedAt, type JobObserver } from './lifecycle.ts';
import { SeriesCounter, SeriesHistogram } from './series.ts';

/** OBS §8 buckets (seconds). */
export const DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];
export const QUEUE_TIME_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600];
/** Store operations and fetches: sub-millisecond to seconds. */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

const STATES = JOB_STATES;

interface CounterChild {
  inc(value?: number): void;
}
interface HistogramChild {
  observe(value: number): void;
}

/** The cached children of one (queue, type). */
interface JobSeries {
  enqueued: CounterChild;
  started: CounterChild;
  completed: CounterChild;
  failed: CounterChild;
  retried: CounterChild;
  cancelled: CounterChild;
  leaseExpired: CounterChild;
  /** ojs.scheduling.dispatch_total{queue}: the same child for every type of the queue. */
  dispatched: CounterChild;
  queueTime: HistogramChild;
  duration: Partial<Record<JobState, HistogramChild>>;
}

/** The job metrics of one process (a server or an SDK worker). */
export class JobMetrics implements JobObserver {
  readonly registry: Registry;
  readonly #enqueued: SeriesCounter;
  readonly #started: SeriesCounter;
  readonly #completed: SeriesCounter;
  readonly #failed: SeriesCounter;
  readonly #retried: SeriesCounter;
  readonly #cancelled: SeriesCounter;
  readonly #leaseExpired: SeriesCounter;
  readonly #dispatched: SeriesCounter;
  readonly #duration: SeriesHistogram;
  readonly #queueTime: SeriesHistogram;
  /** Cached children by queue, then type. */
  readonly #series = new Map<string, Map<string, JobSeries>>();
  readonly #queueTimeMs = new Elapsed();
  readonly #durationMs = new Elapsed();

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    const counter = (name: string, help: string) =>
      new SeriesCounter({ name, help, labelNames: ['queue', 'type'], registers: [registry] });
    this.#enqueued = counter('ojs_job_enqueued_total', 'Jobs enqueued.');
    this.#started = counter(
      'ojs_job_started_total',
      'Job attempts started (jobs claimed by a fetch).',
    );
    this.#completed = counter('ojs_job_completed_total', 'Jobs completed.');
    this.#failed = counter(
      'ojs_job_failed_total',
      'Jobs that failed for good (reached discarded after their last attempt).',
    );
    this.#retried = counter('ojs_job_retried_total', 'Failed attempts that will be retried.');
    this.#cancelled = counter('ojs_job_cancelled_total', 'Jobs cancelled.');
    this.#leaseExpired = counter(
      'ojs_job_lease_expired_total',
      'Attempts whose lease (visibility timeout or execution timeout) expired.',
    );
    // Fair scheduling (ext §4 observability): dispatches per queue, the ratio's numerator.
    this.#dispatched = new SeriesCounter({
      name: 'ojs_scheduling_dispatch_total',
      help: 'Jobs dispatched to workers by FETCH, per queue.',
      labelNames: ['queue'],
      registers: [registry],
    });
    this.#duration = new SeriesHistogram({
      name: 'ojs_job_duration_seconds',
      help: 'Execution time of an attempt, from start to its outcome.',
      labelNames: ['queue', 'type', 'state'],
      buckets: DURATION_BUCKETS,
      registers: [registry],
    });
    this.#queueTime = new SeriesHistogram({
      name: 'ojs_job_queue_time_seconds',
      help: 'Time from enqueue (or the scheduled time) to the start of the first attempt.',
      labelNames: ['queue', 'type'],
      buckets: QUEUE_TIME_BUCKETS,
      registers: [registry],
    });
  }

  #of(job: JobRecord): JobSeries {
    let byType = this.#series.get(job.queue);
    if (byType === undefined) {
      byType = new Map();
      this.#series.set(job.queue, byType);
    }
    let series = byType.get(job.type);
    if (series === undefined) {
      const labels = [job.queue, job.type] as const;
      series = {
        enqueued: this.#enqueued.labels(...labels),
        started: this.#started.labels(...labels),
        completed: this.#completed.labels(...labels),
        failed: this.#failed.labels(...labels),
        retried: this.#retried.labels(...labels),
        cancelled: this.#cancelled.labels(...labels),
        leaseExpired: this.#leaseExpired.labels(...labels),
        dispatched: this.#dispatched.labels(job.queue),
        queueTime: this.#queueTime.labels(...labels),
        duration: {},
      };
      // Every counter of the pair starts at 0, so rates and alerts see the series from the start.
      for (const counter of [
        series.enqueued,
        series.started,
        series.completed,
        series.failed,
        series.retried,
        series.cancelled,
        series.leaseExpired,
        series.dispatched,
      ]) {
        counter.inc(0);
      }
      byType.set(job.type, series);
    }
    return series;
  }

  enqueued(jobs: readonly JobRecord[]): void {
    for (const job of jobs) this.#of(job).enqueued.inc();
  }

  started(jobs: readonly JobRecord[]): void {
    for (const job of jobs) {
      const series = this.#of(job);
      series.started.inc();
      series.dispatched.inc();
      if (job.attempt !== 1) continue;
      const waited = this.#queueTimeMs.ms(job.scheduled_at ?? job.enqueued_at, job.started_at);
      if (waited !== undefined) series.queueTime.observe(waited / 1000);
    }
  }

  settled(job: JobRecord, expired: boolean): void {
    const series = this.#of(job);
    switch (job.state) {
      case 'completed':
        series.completed.inc();
        break;
      case 'retryable':
        series.retried.inc();
        break;
      case 'discarded':
        series.failed.inc();
        break;
      case 'cancelled':
        series.cancelled.inc();
        // A cancel of a job that never ran has no duration.
        if (job.started_at === undefined) return;
        break;
      case 'available':
        if (expired) series.retried.inc();
        break;
    }
    if (expired) series.leaseExpired.inc();
    const ms = this.#durationMs.ms(job.started_at, finishedAt(job));
    if (ms === undefined) return;
    let duration = series.duration[job.state];
    if (duration === undefined) {
      duration = this.#duration.labels(job.queue, job.type, job.state);
      series.duration[job.state] = duration;
    }
    duration.observe(ms / 1000);
  }
}

/** Distinct tenant_id label values before the rest share `_other` (MT-006, about 1,000). */
export const MAX_TENANT_LABELS = 1000;
export const OTHER_TENANT = '_other';

/**
 * `ojs_tenant_jobs_{enqueued,started,completed,failed}_total{tenant_id}`
 * (ext-multi-tenancy MT-006): jobs of named tenants only, so a server
 * without tenants adds one property read per job. The label takes the
 * first MAX_TENANT_LABELS tenants seen; later ones are counted under
 * `_other`, which bounds the series a tenant-per-customer server creates.
 */
export class TenantMetrics implements JobObserver {
  readonly #series = new Map<
    string,
    { enqueued: CounterChild; started: CounterChild; completed: CounterChild; failed: CounterChild }
  >();
  readonly #enqueued: SeriesCounter;
  readonly #started: SeriesCounter;
  readonly #completed: SeriesCounter;
  readonly #failed: SeriesCounter;

  constructor(registry: Registry) {
    const counter = (name: string, help: string) =>
      new SeriesCounter({ name, help, labelNames: ['tenant_id'], registers: [registry] });
    this.#enqueued = counter('ojs_tenant_jobs_enqueued_total', 'Jobs enqueued, by tenant.');
    this.#started = counter('ojs_tenant_jobs_started_total', 'Job attempts started, by tenant.');
    this.#completed = counter('ojs_tenant_jobs_completed_total', 'Jobs completed, by tenant.');
    this.#failed = counter(
      'ojs_tenant_jobs_failed_total',
      'Jobs that failed for good (discarded), by tenant.',
    );
  }

  #of(job: JobRecord) {
    const tenant = job.meta.tenant_id;
    if (typeof tenant !== 'string' || tenant === '') return undefined;
    let series = this.#series.get(tenant);
    if (series === undefined) {
      const label = this.#series.size < MAX_TENANT_LABELS ? tenant : OTHER_TENANT;
      series =
        label === OTHER_TENANT && this.#series.has(OTHER_TENANT)
          ? this.#series.get(OTHER_TENANT)!
          : {
              enqueued: this.#enqueued.labels(label),
              started: this.#started.labels(label),
              completed: this.#completed.labels(label),
              failed: this.#failed.labels(label),
            };
      if (label === OTHER_TENANT) this.#series.set(OTHER_TENANT, series);
      else this.#series.set(tenant, series);
    }
    return series;
  }

  enqueued(jobs: readonly JobRecord[]): void {
    for (const job of jobs) this.#of(job)?.enqueued.inc();
  }

  started(jobs: readonly JobRecord[]): void {
    for (const job of jobs) this.#of(job)?.started.inc();
  }

  settled(job: JobRecord): void {
    if (job.state === 'completed') this.#of(job)?.completed.inc();
    else if (job.state === 'discarded') this.#of(job)?.failed.inc();
  }
}

/**
 * `ojs_queue_depth{queue,state}` and `ojs_workers_busy{queue}` (active jobs),
 * from the store's counters at scrape time. A scrape during a store outage
 * keeps the last values rather than failing the whole scrape.
 */
export function registerQueueDepth(registry: Registry, store: Store): void {
  type Counts = Awaited<ReturnType<Store['countJobsByQueue']>>;
  // Both gauges are collected concurrently in one scrape: one read serves them.
  let reading: Promise<Counts | undefined> | undefined;
  const read = () => {
    reading ??= store.countJobsByQueue().then(
      (counts) => counts,
      () => undefined,
    );
    const current = reading;
    current.finally(() => setImmediate(() => (reading = undefined)));
    return current;
  };
  new Gauge({
    name: 'ojs_queue_depth',
    help: 'Jobs per queue and state (from the store counters, at scrape time).',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      const counts = await read();
      if (counts === undefined) return; // store unreachable: keep the last values
      this.reset();
      const queues = new Set<string>();
      for (const { queue, state, count } of counts) {
        queues.add(queue);
        this.labels(queue, state).set(count);
      }
      // Zero series for known queues, so a drained state reads 0 instead of vanishing.
      const seen = new Set(counts.map((c) => `${c.queue}\u0000${c.state}`));
      for (const queue of queues) {
        for (const state of STATES) {
          if (!seen.has(`${queue}\u0000${state}`)) this.labels(queue, state).set(0);
        }
      }
    },
  });
  new Gauge({
    name: 'ojs_workers_busy',
    help: 'Jobs being executed (active) per queue.',
    labelNames: ['queue'] as const,
    registers: [registry],
    async collect() {
      const counts = await read();
      if (counts === undefined) return;
      const busy = new Map<string, number>();
      for (const { queue, state, count } of counts) {
        busy.set(queue, (busy.get(queue) ?? 0) + (state === 'active' ? count : 0));
      }
      this.reset();
      for (const [queue, count] of busy) this.labels(queue).set(count);
    },
  });
}

/** Wraps the store's operations in a latency histogram (label: operation). */
export function instrumentStore(store: Store, registry: Registry): void {
  const histogram = new SeriesHistogram({
    name: 'ojs_store_operation_duration_seconds',
    help: 'Latency of store operations.',
    labelNames: ['operation'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const target = store as unknown as Record<string, unknown>;
  for (const name of STORE_OPERATIONS) {
    const original = target[name];
    if (typeof original !== 'function') continue;
    const child = histogram.labels(name);
    const bound = (original as (...args: unknown[]) => Promise<unknown>).bind(store);
    // Replaced on the instance itself: private fields and getters keep their `this`.
    target[name] = (...args: unknown[]) => {
      const started = performance.now();
      const result = bound(...args);
      const done = () => child.observe((performance.now() - started) / 1000);
      result.then(done, done);
      return result;
    };
  }
}

/** The store operations timed by instrumentStore (the hot path and the background ones). */
const STORE_OPERATIONS = [
  'insertJobs',
  'claimJobs',
  'settleJobs',
  'extendLeases',
  'commit',
  'getJob',
  'promoteDueJobs',
  'findExpiredLeases',
  'listJobs',
  'countJobs',
  'countJobsByQueue',
  'listEvents',
  'pruneEvents',
  'pruneJobs',
  'ping',
] as const;

/** What the webhook metrics read of the webhooks service (webhooks/service.ts). */
export interface WebhookMetricsSource {
  readonly observers: Set<WebhookObserver>;
  readonly subscriptionCount: number;
}

/**
 * `ojs.webhook.*` (ext-webhooks §1.3): attempts by outcome, their
 * duration, retries, dead deliveries, and the subscriptions this process
 * knows of. Counted off the job path, as each attempt settles.
 */
export function registerWebhookMetrics(registry: Registry, webhooks: WebhookMetricsSource): void {
  const deliveries = new Counter({
    name: 'ojs_webhook_delivery_total',
    help: 'Webhook delivery attempts by outcome (delivered, retry, dead).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'ojs_webhook_delivery_duration_seconds',
    help: 'Time of one webhook delivery attempt, redirects included.',
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'ojs_webhook_retry_total',
    help: 'Webhook delivery attempts that will be retried.',
    registers: [registry],
  });
  const dead = new Counter({
    name: 'ojs_webhook_dead_delivery_total',
    help: 'Webhook deliveries that died (a final failure or a status that is not retried).',
    registers: [registry],
  });
  new Gauge({
    name: 'ojs_webhook_subscription_count',
    help: 'Webhook subscriptions (as of the last check).',
    registers: [registry],
    collect() {
      this.set(webhooks.subscriptionCount);
    },
  });
  const outcome = {
    delivered: deliveries.labels('delivered'),
    retry: deliveries.labels('retry'),
    dead: deliveries.labels('dead'),
  };
  webhooks.observers.add({
    attempted(delivery, result) {
      duration.observe(result.responseTimeMs / 1000);
      if (delivery.state === 'delivered') outcome.delivered.inc();
      else if (delivery.state === 'dead') {
        outcome.dead.inc();
        dead.inc();
      } else {
        outcome.retry.inc();
        retries.inc();
      }
    },
  });
}
