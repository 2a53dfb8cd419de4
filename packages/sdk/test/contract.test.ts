/**
 * One behavioural contract (contract-suite.ts), four ways in: the test
 * helpers, the in-process transport, HTTP and gRPC against a live server,
 * on every store testStores() gives. Identical assertions, so test mode and
 * production cannot drift apart again (decision 0087).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OjsClient, testing } from '@ojs/sdk';
import { CONTRACT, type ContractTarget } from './contract-suite.ts';
import { type Mode, startTestServer, type TestServer, testStores, waitFor } from './helpers.ts';

describe('contract (test helpers: testing.run fake)', () => {
  // Pointed at nothing: the test mode must intercept every call.
  const client = new OjsClient({ url: 'http://127.0.0.1:9', retry: false });
  for (const contract of CONTRACT) {
    it(contract.name, () =>
      testing.run('fake', async (t) => {
        const target: ContractTarget = {
          client,
          queue: (name) => name,
          async work(queues, handlers, done) {
            for (const [type, handler] of Object.entries(handlers)) t.register(type, handler);
            for (const queue of queues) await t.drain({ queue, withScheduled: true });
            assert.equal(await done(), true, 'drain() left the case unfinished');
          },
        };
        await contract.run(target);
      }),
    );
  }
});

const LIVE: Mode[] = ['in-process', 'http', 'grpc'];

for (const store of await testStores()) {
  describe(`contract (${store})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ store });
    });
    after(() => server.close());

    for (const mode of LIVE) {
      for (const [index, contract] of CONTRACT.entries()) {
        it(`${mode}: ${contract.name}`, async () => {
          // Queues of this case and mode alone: cases share the server's store.
          const prefix = `${mode}-${index}`;
          const target: ContractTarget = {
            client: server.client(mode),
            queue: (name) => `${prefix}-${name}`,
            async work(queues, handlers, done) {
              const worker = server.worker(mode, { queues, concurrency: 4 });
              for (const [type, handler] of Object.entries(handlers)) {
                worker.register(type, handler);
              }
              await worker.start();
              try {
                await waitFor(done, { timeoutMs: 20_000, what: `${contract.name} (${mode})` });
              } finally {
                await worker.stop();
              }
            },
          };
          await contract.run(target);
        });
      }
    }
  });
}
