/**
 * A server killed (SIGKILL) in the middle of delivering webhooks loses no
 * delivery: the events are in the log with their jobs, the fan-out's
 * cursor and the deliveries are in the store, and an attempt in flight is
 * claimed again when its lease lapses. `ojs serve` runs as a child process
 * and is restarted on the same store; the receiver ends up with every
 * delivery.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ServerProcess, startServerProcess } from '../../../scripts/lib.ts';
import { type StoreKind, storeKinds, tempStore } from './stores.ts';
import { startReceiver } from './webhook-receiver.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are read dynamically in assertions.
type Json = any;

const SECRET = 'whsec_crash_test_secret';
const JOBS = 600;
const ENV = {
  OJS_WEBHOOKS_ALLOW_PRIVATE: 'on',
  OJS_WEBHOOKS_ALLOW_HTTP: 'on',
  OJS_WEBHOOKS_RETRY_SCHEDULE: '0,20ms,20ms,20ms,20ms,20ms,20ms,20ms',
  OJS_LOG_LEVEL: 'silent',
};

async function post(
  server: ServerProcess,
  path: string,
  body: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

function kill(server: ServerProcess): Promise<void> {
  return new Promise((resolve) => {
    server.child.once('exit', () => resolve());
    server.child.kill('SIGKILL');
  });
}

for (const kind of await storeKinds()) {
  describe(`webhooks survive SIGKILL on ${kind}`, () => {
    it('the restarted server delivers every event, the ones in flight included', async (t) => {
      const { store, cleanup } = tempStore(kind as StoreKind);
      const receiver = await startReceiver(() => [SECRET]);
      let server = await startServerProcess(store, ENV);
      try {
        const created = await post(server, '/ojs/v1/webhooks/subscriptions', {
          url: receiver.url,
          events: ['job.enqueued'],
          secret: SECRET,
          timeout_ms: 5000,
        });
        assert.equal(created.status, 201);
        const jobIds = new Set<string>();
        for (let i = 0; i < JOBS; i += 200) {
          const jobs = Array.from({ length: 200 }, (_, k) => ({
            type: 'crash.test',
            args: [i + k],
          }));
          const res = await post(server, '/ojs/v1/jobs/batch', { jobs });
          assert.equal(res.status, 201);
          for (const job of res.body.jobs) jobIds.add(job.id);
        }
        await receiver.until(
          () => receiver.acknowledged.size >= 50,
          60_000,
          'the first deliveries',
        );
        await kill(server);
        const beforeRestart = receiver.acknowledged.size;
        assert.ok(beforeRestart < JOBS, `killed mid-run (${beforeRestart} of ${JOBS} delivered)`);
        t.diagnostic(`killed after ${beforeRestart} of ${JOBS} deliveries`);
        server = await startServerProcess(store, ENV);
        await receiver.until(
          () => receiver.acknowledged.size >= JOBS,
          90_000,
          `all ${JOBS} deliveries`,
        );
        const delivered = new Set(
          receiver.received.map((r) => JSON.parse(r.body).data.job_id as string),
        );
        assert.deepEqual([...delivered].sort(), [...jobIds].sort());
        assert.ok(receiver.received.every((r) => r.verified));
      } finally {
        await server.stop();
        await receiver.close();
        await cleanup();
      }
    });
  });
}
