/**
 * A PUSH wakes the fetches waiting in its server process as often as it
 * must, and no more (decision 0129). A wake when the PUSH is answered, a
 * WAL sync or flush after its commit, comes when the fetch that took the
 * job is gone: whoever waits then (a worker's next long poll) claimed for
 * nothing, beside the next enqueue.
 * - PostgreSQL: as often as the store announces the job, once at COMMIT
 *   and once more when its own NOTIFY comes back over LISTEN.
 * - SQLite: once, when the engine issues the insert (pipelinedWrites), so
 *   that a waiting fetch's claim joins the insert's group commit.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import { type LiveServer, postgresProblem, startLiveServer } from './stores.ts';

const MEDIA = { 'content-type': 'application/openjobspec+json' };

function push(server: LiveServer, queue: string): Promise<Response> {
  return fetch(`${server.url}/ojs/v1/jobs`, {
    method: 'POST',
    headers: MEDIA,
    body: JSON.stringify({ type: 'wake.test', args: [], options: { queue } }),
  });
}

/**
 * Runs `body` while a fetch of another queue waits in `server` (it waits
 * through the PUSHes and gets nothing), once that fetch is waiting.
 */
async function whileAFetchWaits(server: LiveServer, body: () => Promise<void>): Promise<void> {
  const gone = new AbortController();
  const waiting = fetch(`${server.url}/ojs/v1/workers/fetch`, {
    method: 'POST',
    headers: MEDIA,
    body: JSON.stringify({ queues: ['wake-idle'], worker_id: 'wake-w1', wait_ms: 30_000 }),
    signal: gone.signal,
  }).catch((error: unknown) => error);
  try {
    while (server.engine.notifier.waiting === 0) await new Promise((r) => setImmediate(r));
    await body();
  } finally {
    gone.abort();
  }
  assert.equal(((await waiting) as Error).name, 'AbortError');
}

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
      await whileAFetchWaits(server, async () => {
        const store0 = storeWakes;
        const engine0 = server.engine.notifier.generation;
        assert.equal((await push(server, 'wake-busy')).status, 201);
        // At COMMIT (before the answer), then its NOTIFY: a signal, not a sleep.
        while (storeWakes - store0 < 2) await new Promise((r) => setTimeout(r, 5));
        assert.equal(storeWakes - store0, 2);
        assert.equal(
          server.engine.notifier.generation - engine0,
          storeWakes - store0,
          'no wake beyond the store announcements',
        );
      });
    });
  });
}

describe('PUSH wake-ups on SQLite', () => {
  let server: LiveServer;

  before(async () => {
    // A waiting fetch does not re-check the store by itself during the test.
    server = await startLiveServer('sqlite', {
      fetchRecheckMs: 3_600_000,
      sqliteSynchronous: 'FULL',
    });
  });
  after(() => server.close());

  it('wakes waiting fetches once, when the insert is issued', async () => {
    assert.equal(server.engine.store.pipelinedWrites, true);
    await whileAFetchWaits(server, async () => {
      for (const round of [1, 2, 3]) {
        while (server.engine.notifier.waiting === 0) await new Promise((r) => setImmediate(r));
        const before = server.engine.notifier.generation;
        assert.equal((await push(server, 'wake-busy')).status, 201);
        // Answered after its WAL sync: every wake of this PUSH has happened.
        assert.equal(server.engine.notifier.generation - before, 1, `PUSH ${round}`);
      }
    });
  });

  it('a fetch that starts waiting during a PUSH still gets its job', async () => {
    const pushed = push(server, 'wake-race');
    const fetched = await fetch(`${server.url}/ojs/v1/workers/fetch`, {
      method: 'POST',
      headers: MEDIA,
      body: JSON.stringify({ queues: ['wake-race'], worker_id: 'wake-w2', wait_ms: 10_000 }),
    });
    assert.equal((await pushed).status, 201);
    assert.equal(fetched.status, 200);
    const body = (await fetched.json()) as { jobs: { queue: string }[] };
    assert.equal(body.jobs.length, 1);
    assert.equal(body.jobs[0]!.queue, 'wake-race');
  });
});
