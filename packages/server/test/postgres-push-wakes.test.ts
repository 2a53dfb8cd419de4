/**
 * A PUSH on PostgreSQL wakes the fetches waiting in its server process
 * exactly as often as the store announces its job: once at COMMIT, once
 * more when its own NOTIFY comes back over LISTEN (decision 0129). The
 * engine adds no wake of its own when the PUSH is answered, a WAL flush
 * later: by then the fetch that took the job is gone, and a fetch waiting
 * then (a worker's next long poll) claimed for nothing, beside the next
 * enqueue.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import { type LiveServer, postgresProblem, startLiveServer } from './stores.ts';

const MEDIA = { 'content-type': 'application/openjobspec+json' };

const problem = await postgresProblem();
if (problem !== undefined) {
  test('PUSH wake-ups on PostgreSQL', { skip: problem }, () => {});
} else {
  describe('PUSH wake-ups on PostgreSQL', () => {
    let server: LiveServer;
    let storeWakes = 0;

    before(async () => {
      // A waiting fetch does not re-check the store by itself during the test.
      server = await startLiveServer('postgres', { fetchRecheckMs: 3_600_000 });
      const store = server.engine.store as typeof server.engine.store & {
        listening(): Promise<void>;
      };
      store.onJobsAvailable?.(() => storeWakes++);
      await store.listening();
    });
    after(() => server.close());

    it('wakes waiting fetches on the store announcements only', async () => {
      assert.equal(server.engine.store.wakesOnInsert, true);
      const gone = new AbortController();
      // A fetch of another queue: it waits through the PUSH and gets nothing.
      const waiting = fetch(`${server.url}/ojs/v1/workers/fetch`, {
        method: 'POST',
        headers: MEDIA,
        body: JSON.stringify({ queues: ['wake-idle'], worker_id: 'wake-w1', wait_ms: 30_000 }),
        signal: gone.signal,
      }).catch((error: unknown) => error);
      try {
        while (server.engine.notifier.waiting === 0) await new Promise((r) => setImmediate(r));
        const store0 = storeWakes;
        const engine0 = server.engine.notifier.generation;

        const pushed = await fetch(`${server.url}/ojs/v1/jobs`, {
          method: 'POST',
          headers: MEDIA,
          body: JSON.stringify({ type: 'wake.test', args: [], options: { queue: 'wake-busy' } }),
        });
        assert.equal(pushed.status, 201);
        // At COMMIT (before the answer), then its NOTIFY: a signal, not a sleep.
        while (storeWakes - store0 < 2) await new Promise((r) => setTimeout(r, 5));
        assert.equal(storeWakes - store0, 2);
        assert.equal(
          server.engine.notifier.generation - engine0,
          storeWakes - store0,
          'no wake beyond the store announcements',
        );
      } finally {
        gone.abort();
      }
      assert.equal(((await waiting) as Error).name, 'AbortError');
    });
  });
}
