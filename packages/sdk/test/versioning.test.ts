/**
 * Job versioning through the SDK: the client stamps `version`, each worker
 * declares a range per handler, and the server routes only admitted
 * versions to it; a version no running worker admits is held, not failed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OjsClient, OjsWorker } from '@ojs/sdk';
import { type RunningServer, startServer } from '@ojs/server';

describe('SDK job versioning', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ port: 0, store: ':memory:', testMode: true, logLevel: 'silent' });
  });
  after(() => server.close());

  it('routes each version to the worker whose range admits it, holding the rest', async () => {
    const client = new OjsClient({ url: server.url });
    const jobs = [];
    for (let i = 0; i < 12; i++) {
      jobs.push(
        await client.enqueue('invoice.generate', [i], {
          queue: 'ver',
          version: i % 2 ? '2.0' : '1.0',
        }),
      );
    }
    const handledBy = new Map<string, string>();
    const worker = (name: string, versions: string) => {
      const w = new OjsWorker({
        url: server.url,
        queues: ['ver'],
        concurrency: 4,
        exitOnSignal: false,
      });
      w.register(
        'invoice.generate',
        async (ctx) => {
          handledBy.set(ctx.job.id, `${name}:${String(ctx.job.version)}`);
        },
        { versions },
      );
      return w;
    };
    const v1 = worker('v1', '>=1.0 <2.0');
    await v1.start();
    for (const job of jobs.filter((j) => j!.version === '1.0')) {
      await client.waitForJob(job!.id, { states: ['completed'], timeoutMs: 10_000 });
    }
    // With only V1 running, every V2 job is held available (VER-005).
    for (const job of jobs.filter((j) => j!.version === '2.0')) {
      assert.equal((await client.getJob(job!.id)).state, 'available');
    }
    const v2 = worker('v2', '>=2.0');
    await v2.start();
    for (const job of jobs.filter((j) => j!.version === '2.0')) {
      await client.waitForJob(job!.id, { states: ['completed'], timeoutMs: 10_000 });
    }
    await Promise.all([v1.stop(), v2.stop()]);
    assert.equal(handledBy.size, 12);
    for (const label of handledBy.values()) {
      const [name, version] = label.split(':');
      assert.equal(name, version === '1.0' ? 'v1' : 'v2', label);
    }
  });
});
