/**
 * Several server processes on one shared store (PostgreSQL, Redis), each
 * running the fan-out and the delivery loop: every delivery is claimed
 * by one of them (a rev-guarded claim with a lease), so with a receiver
 * that always answers, each one is made exactly once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startServer } from '../src/serve.ts';
import { storeKinds, tempStore } from './stores.ts';
import { startReceiver } from './webhook-receiver.ts';

const SECRET = 'whsec_processes_secret';
const JOBS = 500;

for (const kind of (await storeKinds()).filter((k) => k !== 'sqlite')) {
  describe(`webhooks with two server processes on one ${kind} store`, () => {
    it('each delivery is made once', async () => {
      const { store, cleanup } = tempStore(kind);
      const receiver = await startReceiver(() => [SECRET]);
      const options = {
        store,
        port: 0,
        logLevel: 'silent' as const,
        webhooksAllowPrivate: true,
        webhooksAllowHttp: true,
      };
      const a = await startServer(options);
      const b = await startServer(options);
      try {
        await a.engine.webhooks.createSubscription(
          { url: receiver.url, events: ['job.enqueued'], secret: SECRET },
          undefined,
        );
        for (let i = 0; i < JOBS; i += 50) {
          const server = (i / 50) % 2 === 0 ? a : b;
          const bodies = Array.from({ length: 50 }, (_, k) => ({
            type: 'two.procs',
            args: [i + k],
          }));
          await server.engine.enqueueMany(bodies);
        }
        await receiver.until(
          () => receiver.acknowledged.size >= JOBS,
          60_000,
          `${JOBS} deliveries`,
        );
        const deadline = Date.now() + 30_000;
        let log = await a.engine.store.listWebhookDeliveries({ limit: 1000 });
        while (!log.every((d) => d.state === 'delivered') && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
          log = await a.engine.store.listWebhookDeliveries({ limit: 1000 });
        }
        assert.equal(log.length, JOBS);
        // One claim each (a second claim would count a second attempt), one request each.
        assert.ok(log.every((d) => d.state === 'delivered' && d.attempts === 1));
        const ids = receiver.received.map((r) => String(r.headers['x-ojs-delivery-id']));
        assert.equal(ids.length, JOBS);
        assert.equal(new Set(ids).size, JOBS);
      } finally {
        await Promise.all([a.close(), b.close()]);
        await receiver.close();
        await cleanup();
      }
    });

    it("a subscription made by one process gets every later event, while another process's view of the subscriptions is older", async () => {
      const { store, cleanup } = tempStore(kind);
      const first = await startReceiver(() => [SECRET]);
      const second = await startReceiver(() => [SECRET]);
      const options = {
        store,
        port: 0,
        logLevel: 'silent' as const,
        webhooksAllowPrivate: true,
        webhooksAllowHttp: true,
      };
      const a = await startServer(options);
      const b = await startServer(options);
      try {
        await a.engine.webhooks.createSubscription(
          { url: first.url, events: ['job.enqueued'], secret: SECRET },
          undefined,
        );
        // b runs its fan-out knowing one subscription...
        const deadline = Date.now() + 10_000;
        while (b.engine.webhooks.subscriptionCount !== 1 && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20));
        }
        assert.equal(b.engine.webhooks.subscriptionCount, 1);
        // ... when a makes a second one (and stops delivering), and the events come at once.
        await a.engine.webhooks.createSubscription(
          { url: second.url, events: ['job.enqueued'], secret: SECRET },
          undefined,
        );
        await a.engine.webhooks.stop();
        for (let i = 0; i < 10; i++) {
          await b.engine.enqueueMany(
            Array.from({ length: 20 }, (_, k) => ({ type: 'late.sub', args: [i * 20 + k] })),
          );
        }
        await second.until(
          () => second.acknowledged.size >= 200,
          60_000,
          'every event at the second subscription',
        );
        await first.until(
          () => first.acknowledged.size >= 200,
          60_000,
          'every event at the first subscription',
        );
      } finally {
        await Promise.all([a.close(), b.close()]);
        await first.close();
        await second.close();
        await cleanup();
      }
    });
  });
}
