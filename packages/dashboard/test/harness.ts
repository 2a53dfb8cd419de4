/**
 * Fixture of the dashboard's browser tests: a real `ojs serve` (SQLite in a
 * temporary directory, port 0, API keys) with jobs seeded in every state,
 * and Debian's Chromium driven by playwright-core. Nothing downloads a
 * browser: without /usr/bin/chromium the tests skip with the reason, except
 * with CI=true, where that is a failure.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '@ojs/engine';
import { type RunningServer, startServer } from '@ojs/server';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.OJS_CHROMIUM ?? '/usr/bin/chromium';
export const ADMIN_KEY = 'admin-key-0123456789abcdef';
export const VIEWER_KEY = 'viewer-key-0123456789abcdef';
export const PRODUCER_KEY = 'producer-key-0123456789abcdef';

/** Why the browser tests cannot run here, or undefined when they can. */
export function skipReason(): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  const reason = `${CHROMIUM} not found (apt-get install -y chromium)`;
  if (process.env.CI === 'true') throw new Error(`CI=true and ${reason}`);
  process.stderr.write(`skipping dashboard browser tests: ${reason}\n`);
  return reason;
}

/**
 * Chromium with the team's flags. playwright starts every launch with a
 * fresh temporary profile of its own (it refuses --user-data-dir here).
 */
export async function launchBrowser(): Promise<{ browser: Browser; close(): Promise<void> }> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30_000,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

export interface DashboardServer {
  server: RunningServer;
  engine: Engine;
  url: string;
  close(): Promise<void>;
}

/** `store`: a store spec (a PostgreSQL schema the test drops itself); default a temporary SQLite file. */
export async function startDashboardServer(
  options: {
    dashboard?: boolean;
    apiKeys?: string | null;
    webhooksToLoopback?: boolean;
    store?: string;
  } = {},
): Promise<DashboardServer> {
  const dir = mkdtempSync(join(tmpdir(), 'ojs-dashboard-'));
  const apiKeys =
    options.apiKeys === null
      ? undefined
      : (options.apiKeys ?? `admin:${ADMIN_KEY},viewer:${VIEWER_KEY},producer:${PRODUCER_KEY}`);
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    store: options.store ?? `sqlite:${join(dir, 'ojs.db')}`,
    apiKeys,
    dashboard: options.dashboard ?? true,
    // Worker ACKs/NACKs in these tests come from the engine directly.
    sqliteSynchronous: 'NORMAL',
    // Webhooks to a receiver on this machine (http: on loopback).
    ...(options.webhooksToLoopback ? { webhooksAllowPrivate: true, webhooksAllowHttp: true } : {}),
  });
  return {
    server,
    engine: server.engine,
    url: server.url,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A page with bounded waits, failing the test on any page error. */
export async function openPage(browser: Browser, errors: string[]): Promise<Page> {
  const page = await browser.newPage();
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (error) => errors.push(error.message));
  return page;
}

export async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/ojs/admin/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Views' }).waitFor();
}

export interface Seeded {
  ids: Record<string, string>;
  workflowId: string;
  worker: string;
}

/** A seed job; priority 100 so FETCH claims it before any other job of its queue. */
const job = (type: string, queue: string, options: Record<string, unknown> = {}) => ({
  type,
  args: [{ to: 'ada@example.com', n: 1 }],
  options: { queue, priority: 100, ...options },
});

/**
 * One job in each of the eight states (one dead-lettered with a backtrace),
 * a cron, a graph workflow, and a worker holding the active job.
 */
export async function seedEveryState(engine: Engine): Promise<Seeded> {
  const ids: Record<string, string> = {};
  const enqueue = async (body: Record<string, unknown>) => {
    const result = await engine.enqueue(body);
    if (!('job' in result)) throw new Error(`seed job not enqueued: ${JSON.stringify(result)}`);
    return result.job.id;
  };
  const worker = 'worker-1';
  const takeAndSettle = async (
    queue: string,
    settle: (id: string, attempt: number) => Promise<unknown>,
  ) => {
    const [claimed] = await engine.fetch({ queues: [queue], count: 1, workerId: worker });
    await settle(claimed!.id, claimed!.attempt);
    return claimed!.id;
  };

  await enqueue(job('email.send', 'mail', { retry: { max_attempts: 1 } }));
  ids.completed = await takeAndSettle('mail', (id, attempt) =>
    engine.ack({ jobId: id, result: { delivered: true }, workerId: worker, attempt }),
  );
  await enqueue(
    job('report.build', 'reports', { retry: { max_attempts: 1, on_exhaustion: 'dead_letter' } }),
  );
  ids.discarded = await takeAndSettle('reports', (id, attempt) =>
    engine.nack({
      jobId: id,
      workerId: worker,
      attempt,
      error: {
        type: 'SmtpTimeout',
        message: 'upstream timed out after 30 s',
        backtrace: ['at send (mailer.ts:42)', 'at run (worker.ts:7)'],
      },
    }),
  );
  await enqueue(
    job('image.resize', 'images', {
      retry: { max_attempts: 5, initial_interval: 'PT1H', max_interval: 'PT1H' },
    }),
  );
  ids.retryable = await takeAndSettle('images', (id, attempt) =>
    engine.nack({
      jobId: id,
      workerId: worker,
      attempt,
      error: { type: 'Busy', message: 'try later', retryable: true },
    }),
  );
  ids.active = await enqueue(job('video.encode', 'media'));
  await engine.fetch({ queues: ['media'], count: 1, workerId: worker });
  await engine.heartbeat({ workerId: worker, jobIds: [ids.active], workerState: 'running' });
  ids.available = await enqueue(job('email.send', 'mail'));
  ids.scheduled = await enqueue(
    job('email.digest', 'mail', { scheduled_at: new Date(Date.now() + 3_600_000).toISOString() }),
  );
  ids.pending = await enqueue(job('invoice.approve', 'billing', { pending: true }));
  ids.cancelled = await enqueue(job('email.send', 'mail'));
  await engine.cancel(ids.cancelled);

  await engine.cron.register({
    name: 'nightly-report',
    expression: '0 2 * * *',
    timezone: 'Europe/Paris',
    job_template: { type: 'report.build', args: [], options: { queue: 'reports' } },
  });
  const workflow = await engine.createWorkflow({
    name: 'onboarding',
    steps: [
      { id: 'fetch', type: 'user.fetch', args: [], options: { queue: 'flows' } },
      {
        id: 'email',
        type: 'email.send',
        args: [],
        depends_on: ['fetch'],
        options: { queue: 'flows' },
      },
      { id: 'crm', type: 'crm.sync', args: [], depends_on: ['fetch'], options: { queue: 'flows' } },
      {
        id: 'done',
        type: 'user.activate',
        args: [],
        depends_on: ['email', 'crm'],
        options: { queue: 'flows' },
      },
    ],
  });
  return { ids, workflowId: workflow.id, worker };
}

/**
 * The fixture of a browser test file: in before(), a server with jobs in
 * every state and a browser; in after(), both closed and no script error
 * seen by any page (pages opened through openPage(browser, errors)).
 */
export interface BrowserFixture {
  ctx: DashboardServer;
  browser: Browser;
  seeded: Seeded;
  errors: string[];
}

export function browserFixture(hooks: {
  before: (fn: () => Promise<void>) => void;
  after: (fn: () => Promise<void>) => void;
}): BrowserFixture {
  const fixture = { errors: [] as string[] } as BrowserFixture;
  let closeBrowser: (() => Promise<void>) | undefined;
  hooks.before(async () => {
    fixture.ctx = await startDashboardServer();
    fixture.seeded = await seedEveryState(fixture.ctx.engine);
    const launched = await launchBrowser();
    fixture.browser = launched.browser;
    closeBrowser = launched.close;
  });
  hooks.after(async () => {
    await closeBrowser?.();
    await fixture.ctx?.close();
    if (fixture.errors.length > 0) {
      throw new Error(`script errors in the page: ${fixture.errors.join('; ')}`);
    }
  });
  return fixture;
}
