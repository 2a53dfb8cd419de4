/**
 * The webhook delivery log (ext-webhooks): idempotent inserts, due
 * deliveries by time (pending and due, or delivering with a lapsed lease),
 * the rev-guarded write that claims, settles and replays, and the log's
 * filtered pages newest first.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  claimWebhookDelivery,
  makeEvent,
  newWebhookDelivery,
  replayWebhookDelivery,
  settleWebhookDelivery,
  WEBHOOK_RETRY_SCHEDULE,
  type WebhookDelivery,
  type WebhookSubscription,
} from '@ojs/core';
import type { SuiteContext } from './context.ts';
import { SECOND, T0 } from './fixtures.ts';

function subscription(id: string, tenant?: string): WebhookSubscription {
  const sub: WebhookSubscription = {
    id,
    url: 'https://example.com/hook',
    events: ['*'],
    filter: null,
    metadata: null,
    active: true,
    secret: 'whsec_0123456789abcdef',
    timeout_ms: 30_000,
    created_at: new Date(T0).toISOString(),
    updated_at: new Date(T0).toISOString(),
  };
  if (tenant !== undefined) sub.tenant_id = tenant;
  return sub;
}

function deliveries(count: number, sub: WebhookSubscription, at = T0): WebhookDelivery[] {
  return Array.from({ length: count }, (_, i) =>
    newWebhookDelivery(
      makeEvent('job.completed', `job-${i}`, { queue: 'q', job_id: `job-${i}` }, at + i),
      sub,
      8,
      at + i,
    ),
  );
}

export function webhookTests(ctx: SuiteContext): void {
  describe('webhook deliveries', () => {
    it('inserts each (event, subscription) once: a second insert of the same id is a no-op', async () => {
      const batch = deliveries(3, subscription('sub_a'));
      assert.equal(await ctx.store.insertWebhookDeliveries(batch), 3);
      const again = batch.map((d) => ({ ...d, attempts: 5 }));
      assert.equal(await ctx.store.insertWebhookDeliveries(again), 0);
      const stored = await ctx.store.getWebhookDelivery(batch[0]!.id);
      assert.deepEqual(stored, batch[0]);
      assert.equal(await ctx.store.getWebhookDelivery('whd_missing'), null);
    });

    it('lists due deliveries soonest first, and only those due', async () => {
      const batch = deliveries(3, subscription('sub_a'));
      await ctx.store.insertWebhookDeliveries(batch.reverse());
      assert.deepEqual(
        (await ctx.store.dueWebhookDeliveries(T0 + 1, 10)).map((d) => d.id),
        [batch[2]!.id, batch[1]!.id],
      );
      assert.equal((await ctx.store.dueWebhookDeliveries(T0 + 5, 1)).length, 1);
    });

    it('claims with a guarded write: of two claims on one rev exactly one lands', async () => {
      const [d] = deliveries(1, subscription('sub_a'));
      await ctx.store.insertWebhookDeliveries([d!]);
      const mine = claimWebhookDelivery(d!, 'p1', 10 * SECOND, T0);
      const theirs = claimWebhookDelivery(d!, 'p2', 10 * SECOND, T0);
      const results = await Promise.all([
        ctx.store.updateWebhookDelivery(mine, d!.rev),
        ctx.store.updateWebhookDelivery(theirs, d!.rev),
      ]);
      assert.deepEqual(results.sort(), [false, true]);
      // Claimed: not due until its lease lapses, then due again.
      assert.equal((await ctx.store.dueWebhookDeliveries(T0 + SECOND, 10)).length, 0);
      const lapsed = await ctx.store.dueWebhookDeliveries(T0 + 10 * SECOND, 10);
      assert.equal(lapsed.length, 1);
      assert.equal(lapsed[0]!.state, 'delivering');
      assert.equal(lapsed[0]!.attempts, 1);
    });

    it('settles only for the latest claim; a retry is due at its next attempt; delivered and dead leave the queue', async () => {
      const [d, e] = deliveries(2, subscription('sub_a'));
      await ctx.store.insertWebhookDeliveries([d!, e!]);
      const first = claimWebhookDelivery(d!, 'p1', SECOND, T0);
      assert.ok(await ctx.store.updateWebhookDelivery(first, d!.rev));
      // The lease lapsed and p2 claimed again: p1's settlement must not land.
      const second = claimWebhookDelivery(first, 'p2', SECOND, T0 + 2 * SECOND);
      assert.ok(await ctx.store.updateWebhookDelivery(second, first.rev));
      const late = settleWebhookDelivery(
        first,
        { statusCode: 200, responseTimeMs: 3 },
        WEBHOOK_RETRY_SCHEDULE,
        T0 + 3 * SECOND,
      );
      assert.equal(await ctx.store.updateWebhookDelivery(late, first.rev), false);
      const retry = settleWebhookDelivery(
        second,
        { statusCode: 503, responseTimeMs: 3 },
        WEBHOOK_RETRY_SCHEDULE,
        T0 + 3 * SECOND,
      );
      assert.ok(await ctx.store.updateWebhookDelivery(retry, second.rev));
      assert.equal((await ctx.store.getWebhookDelivery(d!.id))!.state, 'pending');
      const dueAt = T0 + 3 * SECOND + WEBHOOK_RETRY_SCHEDULE[2]!;
      assert.deepEqual(
        (await ctx.store.dueWebhookDeliveries(dueAt - 1, 10)).map((x) => x.id),
        [e!.id],
      );
      assert.deepEqual(
        (await ctx.store.dueWebhookDeliveries(dueAt, 10)).map((x) => x.id).sort(),
        [d!.id, e!.id].sort(),
      );
      // e: claimed and answered 410: dead, kept, out of the queue; then replayed.
      const claimed = claimWebhookDelivery(e!, 'p1', SECOND, T0);
      assert.ok(await ctx.store.updateWebhookDelivery(claimed, e!.rev));
      const dead = settleWebhookDelivery(
        claimed,
        { statusCode: 410, responseTimeMs: 1 },
        WEBHOOK_RETRY_SCHEDULE,
        T0,
      );
      assert.ok(await ctx.store.updateWebhookDelivery(dead, claimed.rev));
      assert.deepEqual(
        (await ctx.store.dueWebhookDeliveries(dueAt, 10)).map((x) => x.id),
        [d!.id],
      );
      const stored = await ctx.store.getWebhookDelivery(e!.id);
      assert.equal(stored!.state, 'dead');
      assert.equal(stored!.last_status_code, 410);
      const replay = replayWebhookDelivery(stored!, 8, T0 + 5 * SECOND);
      assert.ok(await ctx.store.updateWebhookDelivery(replay, stored!.rev));
      assert.equal((await ctx.store.dueWebhookDeliveries(T0 + 5 * SECOND, 10)).length, 1);
    });

    it('lists the log newest first, filtered by subscription, state and tenant, in pages', async () => {
      await ctx.store.insertWebhookDeliveries(deliveries(3, subscription('sub_a')));
      await ctx.store.insertWebhookDeliveries(
        deliveries(2, subscription('sub_b', 'acme'), T0 + 100),
      );
      const all = await ctx.store.listWebhookDeliveries({ limit: 10 });
      assert.equal(all.length, 5);
      assert.deepEqual(
        all.map((d) => d.subscription_id),
        ['sub_b', 'sub_b', 'sub_a', 'sub_a', 'sub_a'],
      );
      const a = await ctx.store.listWebhookDeliveries({ subscriptionId: 'sub_a', limit: 2 });
      assert.equal(a.length, 2);
      const rest = await ctx.store.listWebhookDeliveries({
        subscriptionId: 'sub_a',
        after: a[1]!.id,
        limit: 10,
      });
      assert.deepEqual(
        rest.map((d) => d.id),
        [all[4]!.id],
      );
      assert.deepEqual(
        (await ctx.store.listWebhookDeliveries({ tenantId: 'acme', limit: 10 })).map((d) => d.id),
        [all[0]!.id, all[1]!.id],
      );
      assert.equal((await ctx.store.listWebhookDeliveries({ state: 'dead', limit: 10 })).length, 0);
      assert.equal(
        (await ctx.store.listWebhookDeliveries({ state: 'pending', limit: 10 })).length,
        5,
      );
    });

    it('prunes delivered and dead deliveries settled before their cut-offs, at most `limit`', async () => {
      const [a, b, c, d] = deliveries(4, subscription('sub_a'));
      await ctx.store.insertWebhookDeliveries([a!, b!, c!, d!]);
      const settle = async (x: WebhookDelivery, status: number, at: number) => {
        const claimed = claimWebhookDelivery(x, 'p', SECOND, at);
        assert.ok(await ctx.store.updateWebhookDelivery(claimed, x.rev));
        const done = settleWebhookDelivery(
          claimed,
          { statusCode: status, responseTimeMs: 1 },
          WEBHOOK_RETRY_SCHEDULE,
          at,
        );
        assert.ok(await ctx.store.updateWebhookDelivery(done, claimed.rev));
      };
      await settle(a!, 200, T0 + SECOND);
      await settle(b!, 200, T0 + 3 * SECOND);
      await settle(c!, 410, T0 + SECOND);
      // d stays pending: never pruned.
      const cut = { delivered: T0 + 2 * SECOND, dead: T0 };
      assert.equal(await ctx.store.pruneWebhookDeliveries(cut, 10), 1);
      assert.equal(await ctx.store.getWebhookDelivery(a!.id), null);
      assert.notEqual(await ctx.store.getWebhookDelivery(b!.id), null);
      assert.equal(
        await ctx.store.pruneWebhookDeliveries(
          { delivered: T0 + 4 * SECOND, dead: T0 + 4 * SECOND },
          1,
        ),
        1,
      );
      assert.equal(
        await ctx.store.pruneWebhookDeliveries(
          { delivered: T0 + 4 * SECOND, dead: T0 + 4 * SECOND },
          10,
        ),
        1,
      );
      assert.deepEqual(
        (await ctx.store.listWebhookDeliveries({ limit: 10 })).map((x) => x.id),
        [d!.id],
      );
      assert.deepEqual(
        (await ctx.store.dueWebhookDeliveries(T0 + 10 * SECOND, 10)).map((x) => x.id),
        [d!.id],
      );
    });

    it('reset empties the delivery log', async () => {
      await ctx.store.insertWebhookDeliveries(deliveries(2, subscription('sub_a')));
      await ctx.store.reset();
      assert.equal((await ctx.store.listWebhookDeliveries({ limit: 10 })).length, 0);
      assert.equal((await ctx.store.dueWebhookDeliveries(T0 + SECOND, 10)).length, 0);
    });
  });
}
