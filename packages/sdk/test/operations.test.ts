/**
 * Progress and the admin API from the SDK against a real server, on every
 * store: ctx.progress() from a handler (HTTP and in-process), client.admin
 * listings with cursors, bulk actions, queue configuration, workers and
 * dead letters (HTTP; the in-process transport has no admin API).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OjsClient, UnsupportedFeatureError, uuidv7 } from '@ojs/sdk';
import { MODES, startTestServer, type TestServer, testStores } from './helpers.ts';

for (const store of await testStores()) {
  describe(`operations (${store})`, () => {
    let server: TestServer;
    let client: OjsClient;
    const queue = () => `ops-${uuidv7().slice(-12)}`;
    before(async () => {
      server = await startTestServer({ store });
      client = server.client('http');
    });
    after(() => server.close());

    for (const mode of MODES) {
      it(`ctx.progress() stores progress on the job (${mode})`, async () => {
        const q = queue();
        const w = server.worker(mode, { queues: [q] });
        let release!: () => void;
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        let reported!: () => void;
        const progressed = new Promise<void>((resolve) => {
          reported = resolve;
        });
        w.register('long.job', async (ctx) => {
          await ctx.progress(0.25, 'a quarter');
          await ctx.progress(0.5, 'half', { rows: 50 });
          reported();
          await held;
          return 'done';
        });
        const job = await server.client(mode).enqueue('long.job', [], { queue: q });
        await w.start();
        await progressed;
        const mid = await server.client(mode).getProgress(job!.id);
        assert.deepEqual(
          [mid.state, mid.progress, mid.message, mid.data],
          ['active', 0.5, 'half', { rows: 50 }],
        );
        release();
        const done = await client.waitForJob(job!.id, { intervalMs: 20 });
        assert.equal(done.state, 'completed');
        assert.equal((await client.getProgress(job!.id)).progress, 1, 'ACK reads as 1.0');
        await w.stop();
      });
    }

    it('client.admin lists with cursors, acts in bulk, configures queues and sees workers', async () => {
      const q = queue();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push((await client.enqueue('adm.job', [i], { queue: q }))!.id);
      const first = await client.admin.listJobs({ queue: q, limit: 2 });
      assert.equal(first.total, 5);
      assert.deepEqual(
        first.jobs.map((j) => j.id),
        [ids[4], ids[3]],
      );
      const all: string[] = [];
      for await (const job of client.admin.jobs({ queue: q, limit: 2, order: 'asc' }))
        all.push(job.id);
      assert.deepEqual(all, ids);

      const cancelled = await client.admin.bulk('cancel', { queue: q, state: 'available' });
      assert.deepEqual([cancelled.matched, cancelled.succeeded, cancelled.failed], [5, 5, 0]);
      const retried = await client.admin.bulk('retry', { queue: q });
      assert.equal(retried.succeeded, 5);
      const detail = await client.admin.job(ids[0]!);
      assert.equal(detail.state, 'available');

      const config = await client.admin.configureQueue(q, {
        concurrency: 3,
        retention: { completed: 'PT1H' },
        backpressure: { max_depth: 5 },
      });
      assert.equal(config.concurrency, 3);
      assert.deepEqual((await client.admin.queueState(q)).blocked_by, []);
      // Without transport retries: a 429 would otherwise be retried after Retry-After.
      const once = new OjsClient({ url: server.url, retry: false });
      await assert.rejects(once.enqueue('adm.job', [], { queue: q }), (error: Error) => {
        assert.equal((error as { code?: string }).code, 'queue_full');
        return true;
      });
      const queues = await client.admin.queues();
      const listed = queues.find((item) => item.name === q) as { counts: { available: number } };
      assert.equal(listed.counts.available, 5);

      const w = server.worker('http', { queues: [queue()], heartbeatIntervalMs: 50 });
      w.register('idle.job', async () => {});
      await w.start();
      const seen = async () =>
        (await client.admin.workers()).items.find((x) => x.id === w.workerId);
      for (let i = 0; i < 200 && (await seen()) === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(await seen(), 'the worker is listed after a heartbeat');
      await client.admin.directWorker(w.workerId, 'quiet');
      for (let i = 0; i < 200 && w.state !== 'quiet'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(w.state, 'quiet', 'the worker obeys the quiet directive');
      await w.stop();
    });

    it('the in-process transport has no admin API', async () => {
      const local = server.client('in-process');
      await assert.rejects(local.admin.stats(), UnsupportedFeatureError);
    });
  });
}
