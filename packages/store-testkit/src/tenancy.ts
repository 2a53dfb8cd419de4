/**
 * Multi-tenancy in the store (ext-multi-tenancy): a tenant's claim takes
 * only its jobs (`ClaimRequest.tenant`; `_default` = jobs naming none),
 * listings and counts filter by `JobFilter.tenant`, and a settlement or a
 * lease extension carrying another tenant changes nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SuiteContext } from './context.ts';
import { idsOf, insertOk, newJob, SECOND, T0 } from './fixtures.ts';

const tenant = (id: string | undefined, queue = 'mt') =>
  newJob({ type: 'mt.job', meta: id === undefined ? {} : { tenant_id: id }, options: { queue } });

export function tenancyTests(ctx: SuiteContext): void {
  describe('tenancy', () => {
    it("claims only the named tenant's jobs; _default is the jobs naming none; none claims all", async () => {
      const [a1, b1, d1, a2, b2] = await insertOk(ctx.store, [
        tenant('a'),
        tenant('b'),
        tenant(undefined),
        tenant('a'),
        tenant('b'),
      ]);
      const now = T0 + SECOND;
      const onlyA = await ctx.store.claimJobs({ queues: ['mt'], count: 10, tenant: 'a', now });
      assert.deepEqual(idsOf(onlyA), idsOf([a1!, a2!]));
      const onlyDefault = await ctx.store.claimJobs({
        queues: ['mt'],
        count: 10,
        tenant: '_default',
        now,
      });
      assert.deepEqual(idsOf(onlyDefault), idsOf([d1!]));
      const rest = await ctx.store.claimJobs({ queues: ['mt'], count: 10, now });
      assert.deepEqual(idsOf(rest), idsOf([b1!, b2!]));
    });

    it('holds a tenant to its max_concurrency (tenantConcurrency), others unaffected', async () => {
      await insertOk(ctx.store, [
        ...Array.from({ length: 5 }, () => tenant('c', 'cc')),
        tenant('d', 'cc'),
      ]);
      const now = T0 + SECOND;
      const limits = { c: 2 };
      const first = await ctx.store.claimJobs({
        queues: ['cc'],
        count: 10,
        workerId: 'w',
        tenantConcurrency: limits,
        now,
      });
      assert.equal(first.filter((j) => j.meta.tenant_id === 'c').length, 2);
      assert.equal(first.filter((j) => j.meta.tenant_id === 'd').length, 1);
      const none = await ctx.store.claimJobs({
        queues: ['cc'],
        count: 10,
        workerId: 'w',
        tenantConcurrency: limits,
        now,
      });
      assert.equal(none.length, 0, 'c is at its limit');
      const done = first.find((j) => j.meta.tenant_id === 'c')!;
      const [settled] = await ctx.store.settleJobs({
        items: [{ id: done.id, workerId: 'w', settlement: { kind: 'complete' } }],
        now,
      });
      assert.equal(settled!.status, 'settled');
      const next = await ctx.store.claimJobs({
        queues: ['cc'],
        count: 10,
        workerId: 'w',
        tenantConcurrency: limits,
        now,
      });
      assert.equal(next.length, 1, 'one slot freed');
      assert.equal(await ctx.store.countJobs({ tenant: 'c', states: ['active'] }), 2);
    });

    it('lists and counts by tenant', async () => {
      const [a1, , d1] = await insertOk(ctx.store, [
        tenant('a', 'l1'),
        tenant('b', 'l1'),
        tenant(undefined, 'l1'),
      ]);
      const page = await ctx.store.listJobs({ filter: { tenant: 'a' }, limit: 10, order: 'asc' });
      assert.deepEqual(idsOf(page), idsOf([a1!]));
      const byQueue = await ctx.store.listJobs({
        filter: { tenant: '_default', queues: ['l1'], states: ['available'] },
        limit: 10,
        order: 'asc',
      });
      assert.deepEqual(idsOf(byQueue), idsOf([d1!]));
      assert.equal(await ctx.store.countJobs({ tenant: 'b' }), 1);
      assert.equal(
        await ctx.store.countJobs({ tenant: 'b', queues: ['l1'], states: ['active'] }),
        0,
      );
      assert.equal(await ctx.store.countJobs({ tenant: 'nobody' }), 0);
    });

    it("refuses another tenant's settlement and lease extension", async () => {
      const [job] = await insertOk(ctx.store, [tenant('a', 's1')]);
      const now = T0 + SECOND;
      await ctx.store.claimJobs({ queues: ['s1'], count: 1, workerId: 'w', now });
      const [settled] = await ctx.store.settleJobs({
        items: [{ id: job!.id, workerId: 'w', tenant: 'b', settlement: { kind: 'complete' } }],
        now,
      });
      assert.notEqual(settled!.status, 'settled');
      const [lease] = await ctx.store.extendLeases(
        [{ id: job!.id, workerId: 'w', tenant: 'b' }],
        now,
      );
      assert.equal(lease!.status, 'not_held');
      const stored = await ctx.store.getJob(job!.id);
      assert.equal(stored!.state, 'active');
      const [own] = await ctx.store.settleJobs({
        items: [{ id: job!.id, workerId: 'w', tenant: 'a', settlement: { kind: 'complete' } }],
        now,
      });
      assert.equal(own!.status, 'settled');
    });
  });
}
