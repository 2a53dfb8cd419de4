/**
 * A reply lost after the statement reached the server: a TCP proxy between
 * the store and PostgreSQL cuts the connection as soon as the server
 * answers a chosen prepared statement. The statement may have committed or
 * not; the store must find out (never report a committed write as failed,
 * never apply it twice).
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it, test } from 'node:test';
import { type JobRecord, jobEvent, parseEnqueueRequest } from '@ojs/core';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, POSTGRES_URL, testSchema, unavailable } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

/** Forwards to PostgreSQL; `cut(name)` drops the next connection that runs statement `name`. */
async function startProxy(target: URL) {
  let armed: string | undefined;
  let cuts = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    let cutOnReply = false;
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      if (armed !== undefined && chunk.includes(armed)) {
        armed = undefined;
        cutOnReply = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (cutOnReply) {
        cuts++;
        close();
        return;
      }
      client.write(chunk);
    });
    client.on('error', close);
    upstream.on('error', close);
    client.on('close', close);
    upstream.on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    cut: (statement: string) => {
      armed = statement;
    },
    get cuts() {
      return cuts;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function newJob(n: number): JobRecord {
  return parseEnqueueRequest({ type: 'lost.reply', args: [n] }, T0, {
    visibilityTimeoutMs: 30_000,
  });
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL lost replies', { skip: reason }, () => {});
} else {
  describe('a reply lost after the statement was sent', () => {
    const schema = testSchema('lost');
    let proxy: Awaited<ReturnType<typeof startProxy>>;
    let store: PostgresStore;
    let direct: PostgresStore;

    before(async () => {
      proxy = await startProxy(new URL(POSTGRES_URL));
      direct = await openStore(schema);
      store = await openStore(schema, { connectionString: proxy.url, pool: { max: 3 } });
    });
    after(async () => {
      await Promise.all([store.close(), direct.close()]);
      await proxy.close();
      await dropSchema(schema);
    });

    it('a one-statement enqueue is reported inserted exactly once', async () => {
      for (let round = 0; round < 5; round++) {
        const job = newJob(round);
        // Prepare the statement on this connection first: later calls send only its name.
        proxy.cut('ojs_enqueue');
        const [result] = await store.insertJobs([job], [jobEvent('job.enqueued', job, {}, T0)], T0);
        assert.equal(result!.status, 'inserted');
        assert.equal(proxy.cuts, round + 1, 'the reply was cut');
        const stored = await direct.getJob(job.id);
        assert.equal(stored?.seq, (result as { job: JobRecord }).job.seq);
        const events = await direct.listEvents({ types: ['job.enqueued'], limit: 100 });
        assert.equal(events.filter((e) => e.subject === job.id).length, 1, 'one event');
      }
    });

    it('a settlement whose COMMIT reply is lost is reported settled', async () => {
      await direct.reset();
      const job = newJob(99);
      await direct.insertJobs([job], [], T0);
      const [claimed] = await direct.claimJobs({
        queues: ['default'],
        count: 1,
        workerId: 'w',
        now: T0,
      });
      proxy.cut('COMMIT');
      const [result] = await store.settleJobs({
        items: [
          {
            id: job.id,
            workerId: 'w',
            attempt: claimed!.attempt,
            settlement: { kind: 'complete' },
          },
        ],
        now: T0 + 1000,
      });
      assert.equal(result!.status, 'settled');
      assert.equal((await direct.getJob(job.id))?.state, 'completed');
      const events = await direct.listEvents({ types: ['job.completed'], limit: 10 });
      assert.equal(events.length, 1);
    });
  });
}
