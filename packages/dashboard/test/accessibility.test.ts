/**
 * Accessibility and layout in Chromium: every control of every view has an
 * accessible name, the keyboard reaches the views (skip link, navigation),
 * the theme toggle switches light and dark, and a phone-width screen needs
 * no sideways scrolling.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_KEY, browserFixture, openPage, signIn, skipReason } from './harness.ts';

const skip = skipReason();

/** Controls without an accessible name (label, aria-label, text), as "tag#id.class" strings. */
const UNNAMED = `(() => {
  const out = [];
  for (const el of document.querySelectorAll('input, select, textarea, button, a[href]')) {
    const named =
      (el.labels && el.labels.length > 0) ||
      el.getAttribute('aria-label') ||
      el.getAttribute('aria-labelledby') ||
      (el.textContent || '').trim() !== '';
    if (!named) out.push(el.tagName.toLowerCase() + '#' + el.id + '.' + el.className);
  }
  return out;
})()`;

describe('dashboard accessibility and layout', { skip, timeout: 120_000 }, () => {
  const fixture = browserFixture({ before, after });
  const { errors } = fixture;
  /** One tenant's job, so the Tenants view has a row (idempotent: one id). */
  const seedTenant = () =>
    fixture.ctx.engine.enqueue(
      { id: '019a0000-0000-7000-8000-0000000000a1', type: 'a11y.job', args: [] },
      { id: 'a11y-tenant' },
    );

  it('every control of every view has an accessible name', async () => {
    const page = await openPage(fixture.browser, errors);
    await page.goto(`${fixture.ctx.url}/ojs/admin/`);
    await page.getByLabel('API key').waitFor();
    assert.deepEqual(await page.evaluate(UNNAMED), [], 'sign-in');
    await signIn(page, fixture.ctx.url, ADMIN_KEY);
    const views: [string, string][] = [
      ['#/overview', 'figure.chart'],
      ['#/queues', 'tr[data-queue]'],
      ['#/jobs', 'tr[data-job]'],
      [`#/jobs/${fixture.seeded.ids.discarded}`, '.timeline li'],
      ['#/dead-letter', 'tr[data-job]'],
      // SQLite: the note that transactional enqueue needs PostgreSQL.
      ['#/outbox', 'p.notice'],
      ['#/cron', 'article[data-cron]'],
      ['#/workflows', 'tbody tr'],
      [`#/workflows/${fixture.seeded.workflowId}`, '.graph .node'],
      ['#/workers', 'tr[data-worker]'],
      ['#/tenants', 'tr[data-tenant]'],
    ];
    await seedTenant();
    for (const [hash, ready] of views) {
      await page.goto(`${fixture.ctx.url}/ojs/admin/${hash}`);
      await page.locator(ready).first().waitFor();
      assert.deepEqual(await page.evaluate(UNNAMED), [], hash);
      assert.equal(await page.locator('h1').count(), 1, `${hash}: one h1`);
    }
    await page.close();
  });

  it('the keyboard alone reaches a view: skip link, then the navigation', async () => {
    const page = await openPage(fixture.browser, errors);
    await signIn(page, fixture.ctx.url, ADMIN_KEY);
    await page.keyboard.press('Tab');
    const skipLink = page.getByRole('link', { name: 'Skip to content' });
    assert.ok(await skipLink.evaluate((el) => el === el.ownerDocument.activeElement));
    await page.keyboard.press('Tab'); // brand
    await page.keyboard.press('Tab'); // Overview
    await page.keyboard.press('Tab'); // Queues
    const focused = await page.evaluate('document.activeElement.textContent');
    assert.equal(focused, 'Queues');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Queues', level: 1 }).waitFor();
    assert.equal(
      await page.getByRole('link', { name: 'Queues' }).getAttribute('aria-current'),
      'page',
    );
    await page.close();
  });

  it('the theme toggle switches light and dark, and remembers it', async () => {
    const page = await fixture.browser.newPage({ colorScheme: 'light' });
    page.on('pageerror', (e) => errors.push(e.message));
    await signIn(page, fixture.ctx.url, ADMIN_KEY);
    const background = () => page.evaluate('getComputedStyle(document.body).backgroundColor');
    const light = await background();
    await page.getByRole('button', { name: /Switch to light/ }).click(); // system -> light
    await page.getByRole('button', { name: /Switch to dark/ }).click(); // light -> dark
    await page.locator('html[data-theme="dark"]').waitFor({ state: 'attached' });
    const dark = await background();
    assert.notEqual(dark, light);
    assert.equal(dark, 'rgb(13, 17, 23)');
    await page.reload();
    await page.locator('html[data-theme="dark"]').waitFor({ state: 'attached' });
    await page.close();
  });

  it('at phone width nothing scrolls sideways; wide tables scroll inside their box', async () => {
    await seedTenant().catch(() => undefined);
    const page = await fixture.browser.newPage({ viewport: { width: 390, height: 844 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await signIn(page, fixture.ctx.url, ADMIN_KEY);
    for (const [hash, ready] of [
      ['#/overview', 'figure.chart'],
      ['#/queues', 'tr[data-queue]'],
      ['#/jobs', 'tr[data-job]'],
      [`#/jobs/${fixture.seeded.ids.discarded}`, '.timeline li'],
      ['#/outbox', 'p.notice'],
      ['#/cron', 'article[data-cron]'],
      ['#/workers', 'tr[data-worker]'],
      ['#/tenants', 'tr[data-tenant]'],
    ] as const) {
      await page.goto(`${fixture.ctx.url}/ojs/admin/${hash}`);
      await page.locator(ready).first().waitFor();
      const [scroll, width] = (await page.evaluate(
        '[document.documentElement.scrollWidth, window.innerWidth]',
      )) as [number, number];
      assert.ok(scroll <= width, `${hash}: page ${scroll}px wide in a ${width}px window`);
    }
    await page.close();
  });
});
