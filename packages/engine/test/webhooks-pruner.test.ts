/**
 * The event log is the webhooks' outbox, so the event pruner must not
 * delete what the fan-out has not read: with subscriptions, it prunes
 * only while the fan-out reached the head of the log within the prune
 * interval; without any, always.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '@ojs/core';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';

const T0 = Date.UTC(2026, 0, 1);

describe('event pruning and the webhooks fan-out', () => {
  it('waits while a subscription exists and the fan-out has not reached the head lately', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.init();
    const clock = new ManualClock(T0);
    // Services not started: the fan-out moves only when the test says so.
    const engine = new Engine({ store, clock });
    try {
      assert.equal(await engine.webhooks.eventsConsumed(60_000), true, 'no subscription');
      await engine.webhooks.createSubscription(
        { url: 'https://example.com/hook', events: ['job.*'] },
        undefined,
      );
      // The first subscription starts the fan-out at the head of the log.
      assert.equal(await engine.webhooks.eventsConsumed(60_000), true);
      clock.advance(61_000);
      assert.equal(await engine.webhooks.eventsConsumed(60_000), false, 'the fan-out lags');
      const [sub] = await engine.webhooks.subscriptions.list(undefined);
      await engine.webhooks.deleteSubscription(sub!.id, undefined);
      assert.equal(await engine.webhooks.eventsConsumed(60_000), true, 'no subscription left');
    } finally {
      await store.close();
    }
  });
});
