/**
 * The SDK worker's Prometheus metrics in the application's registry: exact
 * counts after a known workload, on every store and transport.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { MODES, startTestServer, type TestServer, testStores } from './helpers.ts';

for (const store of await testStores()) {
  for (const mode of MODES) {
    describe(`worker metrics (${mode}, ${store})`, () => {
      let server: TestServer;
      before(async () => {
        server = await startTestServer({ store });
      });
      after(() => server.close());

      it('counts started, completed, retried and failed jobs and their durations', async () => {
        const registry = new Registry();
        const queue = `wm-${mode}-${store}`;
        const client = server.client(mode);
        const worker = server.worker(mode, {
          queues: [queue],
          metrics: { registry },
          logLevel: 'silent',
        });
        worker.register('wm.ok', async () => 'ok');
        worker.register('wm.flaky', async (ctx) => {
          if (ctx.attempt === 1) throw new Error('first attempt fails');
          return 'ok';
        });
        worker.register('wm.broken', async () => {
          throw new Error('always fails');
        });
        const jobs = [
          ...(await Promise.all([1, 2, 3].map((i) => client.enqueue('wm.ok', [i], { queue })))),
          await client.enqueue('wm.flaky', [], {
            queue,
            retry: { maxAttempts: 2, initialInterval: 10, jitter: false },
          }),
          await client.enqueue('wm.broken', [], { queue, retry: { maxAttempts: 1 } }),
        ];
        await worker.start();
        try {
          for (const job of jobs) await client.waitForJob(job!.id, { intervalMs: 20 });
        } finally {
          await worker.stop({ timeoutMs: 0 });
        }
        const value = async (name: string, labels: Record<string, string>) => {
          // Histograms list their _count/_sum/_bucket samples under metricName.
          const samples = (await registry.getMetricsAsJSON()).flatMap((m) =>
            m.values.map((v) => ({
              ...v,
              name: (v as { metricName?: string }).metricName ?? m.name,
            })),
          );
          const match = samples.find(
            (v) =>
              v.name === name &&
              Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l),
          );
          return match?.value;
        };
        const of = (type: string) => ({ queue, type });
        assert.equal(await value('ojs_job_started_total', of('wm.ok')), 3);
        assert.equal(await value('ojs_job_completed_total', of('wm.ok')), 3);
        assert.equal(await value('ojs_job_started_total', of('wm.flaky')), 2);
        assert.equal(await value('ojs_job_retried_total', of('wm.flaky')), 1);
        assert.equal(await value('ojs_job_completed_total', of('wm.flaky')), 1);
        assert.equal(await value('ojs_job_failed_total', of('wm.broken')), 1);
        assert.equal(
          await value('ojs_job_duration_seconds_count', { ...of('wm.ok'), state: 'completed' }),
          3,
        );
        assert.equal(
          await value('ojs_job_duration_seconds_count', { ...of('wm.broken'), state: 'discarded' }),
          1,
        );
        assert.equal(await value('ojs_worker_active_jobs', {}), 0);
      });
    });
  }
}
