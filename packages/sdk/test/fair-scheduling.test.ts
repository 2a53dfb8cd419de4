/**
 * Fair scheduling and worker drain through the SDK, on every store: the
 * admin methods for pools and scheduling stats (HTTP), a worker with the
 * `pool` option running the jobs of its isolated pool, and a quiet beat
 * ending fetches, over HTTP, in-process and gRPC.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type OjsClient, uuidv7 } from '@ojs/sdk';
import { PROCESS_MODES, startTestServer, type TestServer, testStores } from './helpers.ts';

for (const store of await testStores()) {
  describe(`fair scheduling through the SDK (${store})`, () => {
    let server: TestServer;
    let client: OjsClient;
    before(async () => {
      server = await startTestServer({ store });
      client = server.client('http');
    });
    after(() => server.close());

    it('client.admin sets, lists and deletes pools and reads scheduling stats', async () => {
      const set = await client.admin.setPool('sdk-pool', {
        strategy: 'weighted',
        queues: { 'sdk-a': { weight: 3 }, 'sdk-b': { weight: 1 } },
      });
      assert.deepEqual(set, {
        name: 'sdk-pool',
        queues: ['sdk-a', 'sdk-b'],
        strategy: 'weighted',
        weights: { 'sdk-a': 3, 'sdk-b': 1 },
      });
      assert.deepEqual(await client.admin.pool('sdk-pool'), set);
      const listed = (await client.admin.pools()).find((p) => p.name === 'sdk-pool');
      assert.equal(listed?.active_workers, 0);
      const stats = await client.admin.schedulingStats();
      assert.equal(stats.window, 'PT1M');
      assert.ok(Array.isArray(stats.queues));
      await client.admin.deletePool('sdk-pool');
      assert.equal(
        (await client.admin.pools()).find((p) => p.name === 'sdk-pool'),
        undefined,
      );
    });

    for (const mode of PROCESS_MODES) {
      it(`a worker with a pool runs its isolated pool's jobs; a quiet beat ends its fetches (${mode})`, async () => {
        const tag = uuidv7().slice(-8);
        const pool = `iso-${tag}`;
        const queue = `iso-q-${tag}`;
        await client.admin.setPool(pool, { queues: [queue], isolated: true });
        const job = await server.client(mode).enqueue('iso.job', [], { queue });
        // A worker outside the pool does not get it.
        const transport = server.client(mode).transport;
        const outsider = await transport.fetchJobs({
          queues: [queue],
          count: 1,
          worker_id: `out-${tag}`,
        });
        assert.equal(outsider.length, 0);
        const worker = server.worker(mode, { pool, workerId: `in-${tag}` });
        worker.register('iso.job', async () => 'ok');
        await worker.start();
        const done = await client.waitForJob(job!.id, { intervalMs: 20 });
        assert.equal(done.state, 'completed');
        await worker.stop();
        // A quiet beat: the server hands that worker nothing more.
        await server.client(mode).enqueue('iso.job', [], { queue: `plain-${tag}` });
        const id = `quiet-${tag}`;
        await transport.heartbeat({
          worker_id: id,
          state: 'quiet',
          active_jobs: [],
          active_job_ids: [],
        });
        const quiet = await transport.fetchJobs({
          queues: [`plain-${tag}`],
          count: 1,
          worker_id: id,
        });
        assert.equal(quiet.length, 0);
      });
    }
  });
}
