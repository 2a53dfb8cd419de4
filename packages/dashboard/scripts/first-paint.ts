/**
 * First paint of every dashboard view with 1,000,000 jobs in the store
 * (issue 14 acceptance: under 1 s each). Seeds a temporary SQLite file
 * through the store's bulk insert (bulk-jobs.ts: 10 queues, 20 types, the
 * states of a busy system, one job every 20 ms up to now), starts `ojs serve`
 * on it, and loads each view in headless Chromium `--runs` times:
 *
 *   - fcp: the browser's first-contentful-paint (the shell),
 *   - data: navigation start -> the view's data on screen (its table rows,
 *     chart or graph), the figure the acceptance is about. Each load starts
 *     once the previous one is complete (its listing total included).
 *
 *   node packages/dashboard/scripts/first-paint.ts [--jobs 1000000] [--runs 5]
 *
 * A script, not a test: speed is measured, never asserted in `npm test`.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startServer } from '@ojs/server';
import { SqliteStore } from '@ojs/store-sqlite';
import { ADMIN_KEY, launchBrowser, seedEveryState, signIn } from '../test/harness.ts';
import { bulkJob } from './bulk-jobs.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '5' },
  },
  strict: true,
});
const JOBS = Number(values.jobs);
const RUNS = Number(values.runs);
if (!Number.isInteger(JOBS) || JOBS < 1000 || !Number.isInteger(RUNS) || RUNS < 1) {
  throw new Error('--jobs must be an integer >= 1000 and --runs >= 1.');
}
const BATCH = 5000;
/** The newest job is created now; one every 20 ms before it (1M jobs: the last 5.6 hours). */
const END = Date.now();
const STEP_MS = 20;

const SHAPE = {
  total: JOBS,
  end: END,
  stepMs: STEP_MS,
  queues: Array.from({ length: 10 }, (_, q) => `queue-${q}`),
  types: Array.from({ length: 20 }, (_, t) => `app.type${t}`),
};

const dir = mkdtempSync(join(tmpdir(), 'ojs-first-paint-'));
const path = join(dir, 'ojs.db');
try {
  const seedStart = performance.now();
  const store = new SqliteStore({ path, synchronous: 'NORMAL' });
  await store.init();
  for (let i = 0; i < JOBS; i += BATCH) {
    const jobs = Array.from({ length: Math.min(BATCH, JOBS - i) }, (_, k) => bulkJob(i + k, SHAPE));
    await store.insertJobs(jobs, [], END);
  }
  await store.close();
  const seedS = Math.round((performance.now() - seedStart) / 100) / 10;
  process.stderr.write(
    `seeded ${JOBS} jobs in ${seedS} s (${Math.round(statSync(path).size / 1048576)} MiB)\n`,
  );

  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    store: `sqlite:${path}`,
    apiKeys: `admin:${ADMIN_KEY}`,
    sqliteSynchronous: 'NORMAL',
  });
  const { browser, close } = await launchBrowser();
  try {
    const seededExtra = await seedEveryState(server.engine);
    const views: [name: string, hash: string, ready: string][] = [
      ['overview', '#/overview', 'figure.chart rect, [data-testid="total-completed"]'],
      ['queues', '#/queues', 'tr[data-queue]'],
      ['jobs', '#/jobs', 'tr[data-job]'],
      ['jobs (state+queue filter)', '#/jobs?state=discarded&queue=queue-7', 'tr[data-job]'],
      ['jobs (error type filter)', '#/jobs?error_type=Timeout', 'tr[data-job]'],
      ['job detail', `#/jobs/${seededExtra.ids.discarded}`, '.timeline li'],
      ['dead letter', '#/dead-letter', 'tr[data-job]'],
      ['cron', '#/cron', 'article[data-cron] .fires li'],
      ['workflows', '#/workflows', 'tbody tr'],
      ['workflow graph', `#/workflows/${seededExtra.workflowId}`, '.graph .node'],
      ['workers', '#/workers', 'tr[data-worker]'],
    ];
    // bypassCSP: the waits below evaluate strings, which the dashboard's CSP forbids.
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
    page.setDefaultTimeout(30_000);
    await signIn(page, server.url, ADMIN_KEY);
    const results = [];
    for (const [name, hash, ready] of views) {
      const fcp: number[] = [];
      const data: number[] = [];
      for (let run = 0; run <= RUNS; run++) {
        await page.goto('about:blank');
        await page.goto(`${server.url}/ojs/admin/${hash}`);
        await page.waitForSelector(ready);
        const [paint, shown] = await page.evaluate(() => [
          performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1,
          performance.now(),
        ]);
        // Each load starts on an idle server: a listing's total (asked after
        // its rows) must not still occupy the store when the next load begins.
        await page.waitForFunction("!document.body.textContent.includes('counting…')");
        if (run === 0) continue; // warm-up: the first load fills the caches
        fcp.push(paint!);
        data.push(shown!);
      }
      const stat = (xs: number[]) => {
        const sorted = [...xs].sort((a, b) => a - b);
        return {
          median: Math.round(sorted[Math.floor(sorted.length / 2)]!),
          max: Math.round(sorted.at(-1)!),
        };
      };
      results.push({ view: name, fcp_ms: stat(fcp), data_ms: stat(data) });
      process.stderr.write(`${name}: data median ${stat(data).median} ms\n`);
    }
    process.stdout.write(
      `${JSON.stringify({ jobs: JOBS, seed_s: seedS, runs: RUNS, results }, null, 2)}\n`,
    );
  } finally {
    await close();
    await server.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
