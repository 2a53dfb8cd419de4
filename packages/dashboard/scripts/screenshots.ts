/**
 * Screenshots of every view for the README (docs/screenshots/*.png): a
 * server with an hour of history (bulk-inserted), jobs in every state, a
 * cron, a workflow under way and three workers, photographed in headless
 * Chromium at laptop width (light and dark) and at phone width.
 *
 *   node packages/dashboard/scripts/screenshots.ts
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '@ojs/server';
import { SqliteStore } from '@ojs/store-sqlite';
import type { Page } from 'playwright-core';
import { ADMIN_KEY, launchBrowser, seedEveryState, signIn } from '../test/harness.ts';
import { bulkJob } from './bulk-jobs.ts';

const OUT = fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url));
const LAPTOP = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };

const dir = mkdtempSync(join(tmpdir(), 'ojs-screenshots-'));
const path = join(dir, 'ojs.db');
mkdirSync(OUT, { recursive: true });
try {
  // An hour of history: 3,600 jobs, one a second, over five queues.
  const store = new SqliteStore({ path, synchronous: 'NORMAL' });
  await store.init();
  const shape = {
    total: 3600,
    end: Date.now(),
    stepMs: 1000,
    queues: ['mail', 'reports', 'images', 'billing', 'media'],
    types: ['email.send', 'report.build', 'image.resize', 'invoice.charge', 'video.encode'],
  };
  await store.insertJobs(
    Array.from({ length: shape.total }, (_, i) => bulkJob(i, shape)),
    [],
    shape.end,
  );
  await store.close();

  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    store: `sqlite:${path}`,
    apiKeys: `admin:${ADMIN_KEY}`,
  });
  const { browser, close } = await launchBrowser();
  try {
    const engine = server.engine;
    const seeded = await seedEveryState(engine);
    // The workflow under way: its first step done, the next two running.
    const [first] = await engine.fetch({ queues: ['flows'], count: 1, workerId: 'worker-2' });
    await engine.ack({ jobId: first!.id, workerId: 'worker-2', attempt: first!.attempt });
    const running = await engine.fetch({ queues: ['flows'], count: 1, workerId: 'worker-2' });
    for (const id of ['worker-2', 'worker-3']) {
      await engine.heartbeat({
        workerId: id,
        jobIds: id === 'worker-2' ? running.map((j) => j.id) : [],
        workerState: 'running',
      });
    }
    await engine.cron.register({
      name: 'hourly-digest',
      expression: '0 * * * *',
      timezone: 'America/New_York',
      job_template: { type: 'email.digest', args: [], options: { queue: 'mail' } },
    });
    // Fair scheduling: two pools, and a minute's dispatches through them.
    await engine.scheduling.putPool('media-pool', {
      strategy: 'weighted',
      queues: { images: { weight: 5 }, reports: { weight: 2 }, media: { weight: 1 } },
      starvation_guard: { enabled: true, min_dispatch_ratio: 0.1 },
    });
    await engine.scheduling.putPool('mail-pool', {
      strategy: 'round-robin',
      queues: ['mail', 'notifications'],
      isolated: true,
    });
    for (const queue of ['images', 'reports', 'media', 'mail', 'notifications']) {
      await engine.enqueueMany(
        Array.from({ length: 20 }, () => ({ type: 'demo.task', args: [], options: { queue } })),
      );
    }
    await engine.fetch({ queues: [], pool: 'media-pool', count: 16, workerId: 'worker-3' });
    await engine.fetch({ queues: [], pool: 'mail-pool', count: 6, workerId: 'worker-4' });
    await engine.setQueuePaused('billing', true);
    await engine.queueSettings.configure('images', {
      concurrency: 4,
      rate_limit: { limit: 100, period: 'PT1M' },
    });

    const shoot = async (
      name: string,
      hash: string,
      ready: string,
      options: { viewport?: typeof LAPTOP; dark?: boolean; full?: boolean } = {},
    ) => {
      // bypassCSP: the wait below evaluates a string, which the dashboard's CSP forbids.
      const page: Page = await browser.newPage({
        viewport: options.viewport ?? LAPTOP,
        colorScheme: options.dark ? 'dark' : 'light',
        bypassCSP: true,
      });
      page.setDefaultTimeout(20_000);
      await signIn(page, server.url, ADMIN_KEY);
      await page.goto(`${server.url}/ojs/admin/${hash}`);
      await page.waitForSelector(ready);
      // Everything loaded: no loading placeholder, no total still counting.
      await page.waitForFunction(
        "!document.querySelector('[aria-busy=true]') && !document.body.textContent.includes('counting…')",
      );
      await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: options.full ?? false });
      await page.close();
      process.stderr.write(`${name}.png\n`);
    };

    const login = await browser.newPage({ viewport: LAPTOP, colorScheme: 'light' });
    await login.goto(`${server.url}/ojs/admin/`);
    await login.getByLabel('API key').waitFor();
    await login.screenshot({ path: join(OUT, 'login.png') });
    await login.close();

    await shoot('overview', '#/overview', 'figure.chart rect', { full: true });
    await shoot('overview-dark', '#/overview', 'figure.chart rect', { dark: true, full: true });
    await shoot('queues', '#/queues', 'tr[data-queue]');
    await shoot('jobs', '#/jobs', 'tr[data-job]');
    await shoot('job-detail', `#/jobs/${seeded.ids.discarded}`, '.timeline li', { full: true });
    await shoot('job-detail-dark', `#/jobs/${seeded.ids.discarded}`, '.timeline li', {
      dark: true,
      full: true,
    });
    await shoot('dead-letter', '#/dead-letter', 'tr[data-job]');
    await shoot('cron', '#/cron', 'article[data-cron] .fires li');
    await shoot('workflows', '#/workflows', 'tbody tr');
    await shoot('workflow-graph', `#/workflows/${seeded.workflowId}`, '.graph .node');
    await shoot('workers', '#/workers', 'tr[data-worker]');
    await shoot('scheduling', '#/scheduling', 'tr[data-pool]', { full: true });
    await shoot('phone-overview', '#/overview', 'figure.chart rect', {
      viewport: PHONE,
      full: true,
    });
    await shoot('phone-jobs', '#/jobs', 'tr[data-job]', { viewport: PHONE, dark: true });
  } finally {
    await close();
    await server.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
