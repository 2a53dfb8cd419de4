/**
 * Coalesced pushes over HTTP against a real server: the enqueues made in one
 * turn travel in one POST endpoints.push_many, and each call still resolves
 * or rejects as its own push would; a lone push, a manifest without the
 * endpoint, a 404 on it or `coalescePushes: false` use POST /ojs/v1/jobs; a
 * request whose answer was lost is repeated without creating anything twice
 * or failing a push that landed. In-process, the pushes of one turn go to
 * the engine in one `enqueueMany`, with the same per-push answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuplicateJobError, OjsClient } from '@ojs/sdk';
import { InProcessTransport } from '@ojs/sdk/in-process';
import { startTestServer, type TestServer, testStores } from './helpers.ts';

const MANY = '/ojs/v1/jobs/many';
const SINGLE = '/ojs/v1/jobs';

/** A fetch over the real one that logs request paths; `route` may answer instead. */
function proxied(
  log: string[],
  route: (url: URL, init: RequestInit) => Promise<Response | undefined> = async () => undefined,
): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(String(input));
    log.push(url.pathname);
    return (await route(url, init)) ?? fetch(input, init);
  }) as typeof fetch;
}

for (const store of await testStores()) {
  describe(`coalesced pushes (${store})`, () => {
    let server: TestServer;
    let n = 0;
    const queue = () => `pm-${++n}`;
    const count = (log: string[], path: string) => log.filter((p) => p === path).length;
    /** Ids of the jobs stored in `q`, from the server. */
    const storedIds = async (q: string) => {
      const events = await server.engine.listEvents({
        types: ['job.enqueued'],
        queues: [q],
        limit: 10_000,
      });
      return events.map((e) => String(e.subject ?? (e.data as { job_id?: string }).job_id));
    };

    before(async () => {
      server = await startTestServer({ store });
    });
    after(() => server.close());

    it('concurrent enqueues share one request and each gets its own job', async () => {
      const q = queue();
      const log: string[] = [];
      const client = new OjsClient({ url: server.url, fetch: proxied(log) });
      const jobs = await Promise.all(
        Array.from({ length: 50 }, (_, i) => client.enqueue('pm.job', [i], { queue: q })),
      );
      assert.deepEqual(
        jobs.map((j) => j?.args[0]),
        Array.from({ length: 50 }, (_, i) => i),
        'each call resolved with its own job',
      );
      assert.equal(count(log, MANY), 1, log.join(' '));
      assert.equal(count(log, SINGLE), 0);
      const stored = await storedIds(q);
      assert.deepEqual([...stored].sort(), jobs.map((j) => j!.id).sort());
    });

    it('a refused push rejects on its own; the others of its request are stored', async () => {
      const q = queue();
      const log: string[] = [];
      const client = new OjsClient({ url: server.url, fetch: proxied(log) });
      const unique = { keys: ['type' as const], onConflict: 'reject' as const };
      const [first, second, third] = await Promise.allSettled([
        client.enqueue('pm.unique', [1], { queue: q, unique }),
        client.enqueue('pm.unique', [2], { queue: q, unique }),
        client.enqueue('pm.job', [3], { queue: q }),
      ]);
      assert.equal(count(log, MANY), 1, log.join(' '));
      // The two unique pushes race (concurrent calls have no order): one wins.
      const [won, lost] = first.status === 'fulfilled' ? [first, second] : [second, first];
      assert.equal(won.status, 'fulfilled');
      assert.equal(lost.status, 'rejected');
      assert.ok(
        (lost as PromiseRejectedResult).reason instanceof DuplicateJobError,
        String((lost as PromiseRejectedResult).reason),
      );
      assert.equal(third.status, 'fulfilled');
      const ids = [won, third].map((r) => (r as PromiseFulfilledResult<{ id: string }>).value.id);
      assert.deepEqual((await storedIds(q)).sort(), ids.sort());
    });

    it('a lone enqueue is a plain POST /ojs/v1/jobs', async () => {
      const log: string[] = [];
      const client = new OjsClient({ url: server.url, fetch: proxied(log) });
      await client.enqueue('pm.job', [1], { queue: queue() });
      assert.deepEqual(log, [SINGLE]);
    });

    it('coalescePushes: false sends every push on its own', async () => {
      const log: string[] = [];
      const client = new OjsClient({
        url: server.url,
        fetch: proxied(log),
        coalescePushes: false,
      });
      const q = queue();
      await Promise.all([1, 2, 3].map((i) => client.enqueue('pm.job', [i], { queue: q })));
      assert.deepEqual(log, [SINGLE, SINGLE, SINGLE]);
    });

    it('a manifest without endpoints.push_many gets single pushes', async () => {
      const log: string[] = [];
      const client = new OjsClient({
        url: server.url,
        fetch: proxied(log, async (url, init) => {
          if (url.pathname !== '/ojs/manifest') return undefined;
          const manifest = (await (await fetch(url, init)).json()) as { endpoints: object };
          manifest.endpoints = {};
          return Response.json(manifest);
        }),
      });
      const q = queue();
      const jobs = await Promise.all(
        [1, 2, 3, 4].map((i) => client.enqueue('pm.job', [i], { queue: q })),
      );
      assert.equal(count(log, MANY), 0);
      assert.equal(count(log, SINGLE), 4);
      assert.equal((await storedIds(q)).length, 4);
      assert.equal(new Set(jobs.map((j) => j!.id)).size, 4);
    });

    it('a 404 on the endpoint switches to single pushes for good', async () => {
      const log: string[] = [];
      const client = new OjsClient({
        url: server.url,
        fetch: proxied(log, async (url) =>
          url.pathname === MANY
            ? Response.json({ message: `Route POST:${MANY} not found` }, { status: 404 })
            : undefined,
        ),
      });
      const q = queue();
      for (let round = 0; round < 2; round++) {
        await Promise.all([1, 2, 3].map((i) => client.enqueue('pm.job', [round, i], { queue: q })));
      }
      assert.equal(count(log, MANY), 1, 'tried once');
      assert.equal(count(log, SINGLE), 6);
      assert.equal((await storedIds(q)).length, 6);
    });

    it('a request whose answer was lost is repeated: each push resolves once, nothing twice', async () => {
      const log: string[] = [];
      let lost = false;
      const client = new OjsClient({
        url: server.url,
        retry: { initialDelayMs: 1, maxDelayMs: 5 },
        fetch: proxied(log, async (url, init) => {
          if (url.pathname !== MANY || lost) return undefined;
          lost = true;
          await fetch(url, init); // it lands...
          throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }); // ...the answer does not
        }),
      });
      const q = queue();
      const jobs = await Promise.all(
        Array.from({ length: 10 }, (_, i) => client.enqueue('pm.job', [i], { queue: q })),
      );
      assert.ok(lost);
      assert.equal(count(log, MANY), 2, log.join(' '));
      assert.deepEqual(
        jobs.map((j) => j?.args[0]),
        Array.from({ length: 10 }, (_, i) => i),
      );
      const stored = await storedIds(q);
      assert.equal(stored.length, 10, 'each job stored once');
      assert.deepEqual([...stored].sort(), jobs.map((j) => j!.id).sort());
    });

    /** An in-process client over the server's engine, counting the engine's enqueue calls. */
    function inProcess(options: { coalescePushes?: boolean } = {}) {
      const engine = server.engine;
      const calls = { one: 0, many: 0 };
      const transport = new InProcessTransport(
        new Proxy(engine, {
          get(target, name, receiver) {
            const value = Reflect.get(target, name, receiver);
            if (typeof value !== 'function') return value;
            const counter = name === 'enqueue' ? 'one' : name === 'enqueueMany' ? 'many' : null;
            return (...args: unknown[]) => {
              if (counter !== null) calls[counter]++;
              return value.apply(target, args);
            };
          },
        }),
        options,
      );
      return { client: new OjsClient({ transport }), calls };
    }

    it('in-process: concurrent enqueues go to the engine in one enqueueMany, each answered on its own', async () => {
      const { client, calls } = inProcess();
      const q = queue();
      const unique = { keys: ['type' as const], onConflict: 'reject' as const };
      const results = await Promise.allSettled([
        ...Array.from({ length: 20 }, (_, i) => client.enqueue('pm.job', [i], { queue: q })),
        client.enqueue('pm.unique-in-process', [1], { queue: q, unique }),
        client.enqueue('pm.unique-in-process', [2], { queue: q, unique }),
      ]);
      assert.deepEqual(calls, { one: 0, many: 1 });
      const jobs = results.slice(0, 20).map((r) => {
        assert.equal(r.status, 'fulfilled');
        return (r as PromiseFulfilledResult<{ id: string; args: unknown[] } | null>).value!;
      });
      assert.deepEqual(
        jobs.map((j) => j.args[0]),
        Array.from({ length: 20 }, (_, i) => i),
        'each call resolved with its own job',
      );
      // In one group, the first of two conflicting unique pushes wins, as if sent one after the other.
      const [first, second] = results.slice(20);
      assert.equal(first!.status, 'fulfilled');
      assert.equal(second!.status, 'rejected');
      assert.ok(
        (second as PromiseRejectedResult).reason instanceof DuplicateJobError,
        String((second as PromiseRejectedResult).reason),
      );
      const won = (first as PromiseFulfilledResult<{ id: string }>).value.id;
      assert.deepEqual((await storedIds(q)).sort(), [...jobs.map((j) => j.id), won].sort());
    });

    it('in-process: a lone push, or coalescePushes: false, goes through engine.enqueue', async () => {
      const lone = inProcess();
      await lone.client.enqueue('pm.job', [1], { queue: queue() });
      assert.deepEqual(lone.calls, { one: 1, many: 0 });
      const off = inProcess({ coalescePushes: false });
      const q = queue();
      await Promise.all([1, 2, 3].map((i) => off.client.enqueue('pm.job', [i], { queue: q })));
      assert.deepEqual(off.calls, { one: 3, many: 0 });
      assert.equal((await storedIds(q)).length, 3);
    });
  });
}
