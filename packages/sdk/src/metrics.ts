/**
 * Prometheus metrics of an SDK worker (http-binding §16.3), in a registry
 * the application owns and serves: `new OjsWorker({ metrics: { registry } })`
 * with a prom-client `Registry`. prom-client is an optional peer
 * dependency, loaded only when metrics are asked for; the names are the
 * server's (decision 0052), seen from the worker:
 * `ojs_job_started_total`, `ojs_job_completed_total`,
 * `ojs_job_failed_total` (the job was discarded), `ojs_job_retried_total`,
 * `ojs_job_requeued_total`, `ojs_job_duration_seconds{queue,type,state}`
 * (handler time) and `ojs_worker_active_jobs`.
 */
import type { Job } from './types.ts';

/** The worker events the metrics listen to (worker.ts WorkerEvents). */
export interface MetricsSource {
  readonly workerId: string;
  /** Jobs the worker holds now (read at scrape time). */
  readonly activeJobIds: string[];
  on(event: 'jobStarted', listener: (event: { job: Job }) => void): unknown;
  on(event: 'jobCompleted', listener: (event: { job: Job; durationMs: number }) => void): unknown;
  on(
    event: 'jobFailed',
    listener: (event: { job: Job; durationMs: number; response?: Record<string, unknown> }) => void,
  ): unknown;
  on(event: 'jobRequeued', listener: (event: { job: Job }) => void): unknown;
}

export interface WorkerMetricsOptions {
  /** A prom-client Registry: the metrics are registered in it. */
  registry: unknown;
}

const DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];

interface Labelled<T> {
  labels(...values: string[]): T;
}
interface PromClient {
  Counter: new (config: Record<string, unknown>) => Labelled<{ inc(): void }>;
  Histogram: new (config: Record<string, unknown>) => Labelled<{ observe(value: number): void }>;
  Gauge: new (config: Record<string, unknown>) => unknown;
}

/** Registers the worker's metrics and keeps them from its events. */
export async function attachWorkerMetrics(
  worker: MetricsSource,
  options: WorkerMetricsOptions,
): Promise<void> {
  let prom: PromClient;
  try {
    const name = 'prom-client';
    prom = (await import(name)) as PromClient;
  } catch (error) {
    throw new Error(`Worker metrics need the prom-client package: ${(error as Error).message}`);
  }
  const registers = [options.registry];
  const counter = (name: string, help: string) =>
    new prom.Counter({ name, help, labelNames: ['queue', 'type'], registers });
  const started = counter('ojs_job_started_total', 'Jobs this worker started.');
  const completed = counter('ojs_job_completed_total', 'Jobs this worker completed.');
  const failed = counter('ojs_job_failed_total', 'Jobs discarded after failing on this worker.');
  const retried = counter(
    'ojs_job_retried_total',
    'Failed attempts on this worker that will be retried.',
  );
  const requeued = counter('ojs_job_requeued_total', 'Jobs handed back at shutdown.');
  const duration = new prom.Histogram({
    name: 'ojs_job_duration_seconds',
    help: 'Handler time of an attempt on this worker.',
    labelNames: ['queue', 'type', 'state'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  new prom.Gauge({
    name: 'ojs_worker_active_jobs',
    help: 'Jobs this worker holds now (running, prefetched or being reported).',
    registers,
    collect(this: { set(value: number): void }) {
      this.set(worker.activeJobIds.length);
    },
  });
  worker.on('jobStarted', ({ job }) => {
    started.labels(job.queue, job.type).inc();
  });
  worker.on('jobCompleted', ({ job, durationMs }) => {
    completed.labels(job.queue, job.type).inc();
    duration.labels(job.queue, job.type, 'completed').observe(durationMs / 1000);
  });
  worker.on('jobFailed', ({ job, durationMs, response }) => {
    const state = typeof response?.state === 'string' ? response.state : 'retryable';
    (state === 'discarded' ? failed : retried).labels(job.queue, job.type).inc();
    duration.labels(job.queue, job.type, state).observe(durationMs / 1000);
  });
  worker.on('jobRequeued', ({ job }) => {
    requeued.labels(job.queue, job.type).inc();
  });
}
