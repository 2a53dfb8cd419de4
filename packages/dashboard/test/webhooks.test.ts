/**
 * The Webhooks view in Chromium against a real server and a receiver on
 * loopback: a subscription with its delivery log, a dead delivery (the
 * receiver answered 410) replayed from the page, a test event sent from
 * the page.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  ADMIN_KEY,
  type DashboardServer,
  launchBrowser,
  openPage,
  signIn,
  skipReason,
  startDashboardServer,
} from './harness.ts';

const skip = skipReason();

describe('dashboard webhooks view in Chromium', { skip, timeout: 120_000 }, () => {
  let ctx: DashboardServer;
  let close: () => Promise<void>;
  let browser: Awaited<ReturnType<typeof launchBrowser>>['browser'];
  const errors: string[] = [];
  let answer = 410;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(answer).end());
  });

  before(async () => {
    ctx = await startDashboardServer({ webhooksToLoopback: true });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const launched = await launchBrowser();
    browser = launched.browser;
    close = launched.close;
  });
  after(async () => {
    await close?.();
    receiver.close();
    await ctx?.close();
    assert.deepEqual(errors, [], 'script errors in the page');
  });

  it('lists a subscription with its deliveries; retry a dead one and send a test event', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const sub = await ctx.engine.webhooks.createSubscription(
      { url, events: ['job.enqueued'], filter: { queues: ['hooks'] } },
      undefined,
    );
    await ctx.engine.enqueue({ type: 'report.build', args: [], options: { queue: 'hooks' } });
    const page = await openPage(browser, errors);
    await signIn(page, ctx.url, ADMIN_KEY);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    const card = page.locator(`article[data-subscription="${sub.id}"]`);
    await card.getByText(url).waitFor();
    const row = card.locator('tr[data-delivery]').first();
    await row.getByText('dead').waitFor();
    await row.getByText('HTTP 410').waitFor();
    await page.screenshot({
      path: process.env.OJS_SCREENSHOT ?? '/tmp/ojs-webhooks-view.png',
      fullPage: true,
    });
    answer = 200;
    await row.getByRole('button', { name: /Retry delivery/ }).click();
    await row.getByText('delivered').waitFor();
    await row.getByText('HTTP 200').waitFor();
    await card.getByRole('button', { name: `Send a test event to ${url}` }).click();
    await page.getByRole('status').filter({ hasText: 'Test event delivered' }).waitFor();
    await page.close();
  });
});
