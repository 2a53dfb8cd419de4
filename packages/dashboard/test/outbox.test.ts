/**
 * The Outbox view in Chromium against a real server on PostgreSQL (a schema
 * of its own) that relays the outbox: an envelope the server refuses,
 * written with the SQL API, is listed with its error and the counts; the
 * state filter narrows the list; retry sends it through the relay again
 * (refused again: one more attempt) and delete removes it; a viewer sees
 * the rows without the actions. On SQLite the view says transactional
 * enqueue needs PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postgresProblem, tempStore, withPg } from '../../server/test/stores.ts';
import {
  ADMIN_KEY,
  type DashboardServer,
  launchBrowser,
  openPage,
  signIn,
  skipReason,
  startDashboardServer,
  VIEWER_KEY,
} from './harness.ts';

const skip = skipReason();
const noPostgres = skip ?? (await postgresProblem());

describe('dashboard outbox view in Chromium', { skip, timeout: 120_000 }, () => {
  let ctx: DashboardServer | undefined;
  let sqlite: DashboardServer;
  let cleanup: (() => Promise<void>) | undefined;
  let schema: string;
  let browser: Awaited<ReturnType<typeof launchBrowser>>['browser'];
  let close: () => Promise<void>;
  const errors: string[] = [];

  before(async () => {
    if (noPostgres === undefined) {
      const temp = tempStore('postgres');
      cleanup = temp.cleanup;
      schema = new URL(temp.store).searchParams.get('schema')!;
      ctx = await startDashboardServer({ store: temp.store });
    }
    sqlite = await startDashboardServer();
    const launched = await launchBrowser();
    browser = launched.browser;
    close = launched.close;
  });
  after(async () => {
    await close?.();
    await ctx?.close();
    await cleanup?.();
    await sqlite?.close();
    assert.deepEqual(errors, [], 'script errors in the page');
  });

  /** Commits rows through the SQL API, as an application's transaction would. */
  const commit = (...statements: string[]) =>
    withPg(async (client) => {
      await client.query('BEGIN');
      for (const statement of statements) await client.query(statement);
      await client.query('COMMIT');
    });

  it('lists a refused row with its error and counts; filter, retry and delete it', {
    skip: noPostgres,
  }, async () => {
    const { url } = ctx!;
    await commit(
      `SELECT "${schema}".enqueue('email.send', '["ada@example.com"]', '{"queue": "Bad Queue!"}')`,
      `SELECT "${schema}".enqueue_envelope('{"id": "dash-0001", "type": "report.build", "args": "monthly"}')`,
      `SELECT "${schema}".enqueue('email.send', '["grace@example.com"]', '{"queue": "mail"}')`,
    );
    const page = await openPage(browser, errors);
    page.on('dialog', (dialog) => void dialog.accept());
    await signIn(page, url, ADMIN_KEY);
    await page.getByRole('link', { name: 'Outbox' }).click();
    const rows = page.locator('tr[data-outbox-row]');
    // The valid row became a job; the two refused ones stay, invalid.
    await page.locator('[data-outbox-state="invalid"] strong').getByText('2').waitFor();
    await page.locator('[data-outbox-state="pending"] strong').getByText('0').waitFor();
    assert.equal(await rows.count(), 2);
    const refused = rows.filter({ hasText: 'dash-0001' });
    await refused
      .locator('td.error-cell')
      .getByText('invalid_payload: args must be a JSON array.')
      .waitFor();
    await refused.getByText('report.build', { exact: true }).waitFor();
    await rows
      .filter({ hasText: 'email.send' })
      .locator('td.error-cell')
      .getByText(/options\.queue 'Bad Queue!'/)
      .waitFor();
    await page.screenshot({
      path: process.env.OJS_SCREENSHOT ?? '/tmp/ojs-outbox-view.png',
      fullPage: true,
    });

    // The envelope, as the application wrote it.
    await refused.getByText('Envelope').click();
    await refused.locator('pre.json').getByText('"monthly"').waitFor();

    await page.getByLabel('State', { exact: true }).selectOption('pending');
    await page.getByText('No pending rows.').waitFor();
    await page.getByLabel('State', { exact: true }).selectOption('invalid');
    await refused.waitFor();
    assert.equal(await rows.count(), 2);
    assert.match(page.url(), /#\/outbox\?state=invalid$/);

    const rowId = await refused.getAttribute('data-outbox-row');
    await refused.getByRole('button', { name: `Retry outbox row ${rowId}` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Outbox row ${rowId} is pending` })
      .waitFor();
    // The relay refuses it again: invalid, a second attempt (the view reads it again by itself).
    await refused.locator('td.num').getByText('2', { exact: true }).waitFor();
    await refused.getByText('invalid', { exact: true }).waitFor();

    await refused.getByRole('button', { name: `Delete outbox row ${rowId}` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Outbox row ${rowId} deleted.` })
      .waitFor();
    await refused.waitFor({ state: 'detached' });
    await page.locator('[data-outbox-state="invalid"] strong').getByText('1').waitFor();
    const left = await withPg(async (client) => {
      const result = (await client.query(
        `SELECT envelope ->> 'type' AS type FROM "${schema}".outbox`,
      )) as { rows: { type: string }[] };
      return result.rows.map((row) => row.type);
    });
    assert.deepEqual(left, ['email.send']);
    await page.close();
  });

  it('a viewer sees the rows without the actions', { skip: noPostgres }, async () => {
    const { url } = ctx!;
    const page = await openPage(browser, errors);
    await signIn(page, url, VIEWER_KEY);
    await page.goto(`${url}/ojs/admin/#/outbox`);
    const row = page.locator('tr[data-outbox-row]').first();
    await row.getByText('email.send', { exact: true }).waitFor();
    assert.equal(await row.getByRole('button').count(), 0);
    await page.close();
  });

  it('at phone width the page does not scroll sideways', { skip: noPostgres }, async () => {
    const { url } = ctx!;
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await signIn(page, url, ADMIN_KEY);
    await page.goto(`${url}/ojs/admin/#/outbox`);
    await page.locator('tr[data-outbox-row]').first().waitFor();
    const [scroll, width] = (await page.evaluate(
      '[document.documentElement.scrollWidth, window.innerWidth]',
    )) as [number, number];
    assert.ok(scroll <= width, `page ${scroll}px wide in a ${width}px window`);
    await page.screenshot({ path: '/tmp/ojs-outbox-phone.png', fullPage: true });
    await page.close();
  });

  it('says transactional enqueue needs PostgreSQL on SQLite', async () => {
    const page = await openPage(browser, errors);
    await signIn(page, sqlite.url, ADMIN_KEY);
    await page.goto(`${sqlite.url}/ojs/admin/#/outbox`);
    await page
      .getByRole('status')
      .filter({ hasText: 'Transactional enqueue needs PostgreSQL: this server runs on the sqlite' })
      .waitFor();
    assert.equal(await page.getByRole('alert').count(), 0, 'not shown as an error');
    await page.close();
  });
});
