/**
 * client.subscribe(): live events as an async iterator, over HTTP (Server-
 * Sent Events, reconnecting with Last-Event-ID) and in-process (the engine's
 * event log), on every store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NotFoundError, type OjsEvent } from '../src/index.ts';
import { MODES, startTestServer, type TestServer, testStores } from './helpers.ts';

/** Collects `count` events from an iterator, then stops it (the tests' timeout bounds it). */
async function take(events: AsyncIterable<OjsEvent>, count: number): Promise<OjsEvent[]> {
  const seen: OjsEvent[] = [];
  for await (const event of events) {
    seen.push(event);
    if (seen.length === count) break;
  }
  return seen;
}

for (const store of await testStores()) {
  for (const mode of MODES) {
    describe(`client.subscribe (${mode}, ${store})`, { timeout: 30_000 }, () => {
      let server: TestServer;
      before(async () => {
        server = await startTestServer({ store });
      });
      after(() => server.close());

      it("streams a queue's events live, in order, after a given event", async () => {
        const client = server.client(mode);
        const queue = `sub-${mode}-${store}`;
        await client.enqueue('sub.other', [], { queue }); // the queue exists
        // Start after the newest event so far: no race with the stream's opening.
        const { cursor } = await client.events({ queues: [queue] });
        const worker = server.worker(mode, { queues: [queue], logLevel: 'silent' });
        worker.register('sub.other', async () => 'ok');
        worker.register('sub.job', async () => 'ok');
        const received = take(client.subscribe({ queue, after: cursor ?? undefined }), 5);
        const job = await client.enqueue('sub.job', [1], { queue });
        await worker.start();
        const events = await received;
        await worker.stop({ timeoutMs: 0 });
        assert.deepEqual(
          events.filter((e) => e.subject === job!.id).map((e) => e.type),
          ['job.enqueued', 'job.started', 'job.completed'],
        );
        assert.ok(events.every((e) => e.data?.queue === queue));
      });

      it('follows one job from its current state to its end, then ends by itself', async () => {
        const client = server.client(mode);
        const queue = `subjob-${mode}-${store}`;
        const job = await client.enqueue('sub.job', [2], { queue });
        const iterator = client.subscribe({ jobId: job!.id });
        const worker = server.worker(mode, { queues: [queue], logLevel: 'silent' });
        worker.register('sub.job', async () => 'ok');
        const collected = (async () => {
          const seen: OjsEvent[] = [];
          for await (const event of iterator) {
            seen.push(event);
            if (seen.length === 1) await worker.start();
          }
          return seen;
        })();
        const seen = await collected;
        await worker.stop({ timeoutMs: 0 });
        assert.deepEqual(
          seen.map((e) => e.type),
          ['job.state_changed', 'job.started', 'job.completed'],
        );
        assert.equal(seen[0]!.data?.to, 'available');
        assert.ok(seen.every((e) => e.subject === job!.id));
        // A finished job: its state, and the stream ends.
        const again = await take(client.subscribe({ jobId: job!.id }), 1);
        assert.equal(again[0]!.data?.to, 'completed');
      });

      it('a job that finishes before the consumer reads on still ends its stream', async () => {
        const client = server.client(mode);
        const queue = `subfast-${mode}-${store}`;
        const job = await client.enqueue('sub.job', [3], { queue });
        const iterator = client.subscribe({ jobId: job!.id })[Symbol.asyncIterator]();
        const first = await iterator.next();
        assert.equal(first.value?.data?.to, 'available');
        // The whole run happens while the stream is paused after its snapshot.
        const worker = server.worker(mode, { queues: [queue], logLevel: 'silent' });
        worker.register('sub.job', async () => 'ok');
        const completed = new Promise<void>((resolve) =>
          worker.on('jobCompleted', () => resolve()),
        );
        await worker.start();
        await completed;
        await worker.stop({ timeoutMs: 0 });
        const rest: string[] = [];
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
          rest.push(next.value.type);
        }
        assert.deepEqual(rest, ['job.started', 'job.completed']);
      });

      it('an unknown job or queue is a NotFoundError', async () => {
        const client = server.client(mode);
        for (const query of [
          { jobId: '019a0000-0000-7000-8000-000000000000' },
          { queue: 'never-seen-queue' },
        ]) {
          await assert.rejects(
            (async () => {
              for await (const _ of client.subscribe(query)) break;
            })(),
            (error: Error) => error instanceof NotFoundError,
          );
        }
      });
    });
  }
}
