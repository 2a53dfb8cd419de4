/**
 * @ojs/sdk as a user gets it from npm: `npm pack` (which builds dist/),
 * installed in a folder outside the repository, then a client + worker
 * round trip against a live server from ESM (`import`) and CommonJS
 * (`require`) on Node 18, 20 and 24, and the published types compiled by a
 * consumer under `nodenext` resolution (both formats). The test modes
 * (`testing`) run the engine, an optional peer: without it they say what
 * to install (or, before Node 22.13, that node:sqlite is missing), and with
 * @ojs/engine and @ojs/store-sqlite installed beside the SDK they run jobs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type RunningServer, startServer } from '@ojs/server';
import { ROOT } from '../../../scripts/lib.ts';
import { installApp, nodeBinary, pack, run, typeScriptSources } from '../../../scripts/packed.ts';

const ROUND_TRIP = (load: string) => `
${load}
async function main() {
  const [url, queue] = process.argv.slice(2);
  const client = new OjsClient({ url });
  // Only the SDK is installed: the test modes must refuse with a reason, not crash on import.
  testing.fake();
  const testMode = await client.enqueue('packed.double', [1]).then(() => 'ran', (e) => e.message);
  testing.restore();
  const job = await client.enqueue('packed.double', [21], { queue });
  const worker = new OjsWorker({ url, queues: [queue], concurrency: 2, handleSignals: false });
  worker.register('packed.double', async (ctx) => ({ doubled: ctx.args[0] * 2 }));
  await worker.start();
  const done = await client.waitForJob(job.id, { states: ['completed'], timeoutMs: 15000 });
  await worker.stop();
  console.log(JSON.stringify({ node: process.version, state: done.state, result: done.result, testMode }));
}
`;

const ESM = `${ROUND_TRIP("import { OjsClient, OjsWorker, testing } from '@ojs/sdk';")}await main();\n`;
const CJS = `${ROUND_TRIP("const { OjsClient, OjsWorker, testing } = require('@ojs/sdk');")}main().catch((e) => { console.error(e); process.exit(1); });\n`;

/** The test modes with their peers installed: a job enqueued, drained, asserted. */
const TEST_MODE = (load: string) => `
${load}
async function main() {
  const t = testing.fake();
  t.register('packed.square', async (ctx) => ctx.args[0] ** 2);
  const job = await new OjsClient({ url: 'http://127.0.0.1:9' }).enqueue('packed.square', [7]);
  const drained = await t.drain();
  const [done] = t.assertCompleted('packed.square');
  testing.restore();
  console.log(JSON.stringify({ drained, same: done.id === job.id, result: done.result }));
}
`;

const TYPED = `import { OjsClient, type Job, ValidationError } from '@ojs/sdk';
import { testing } from '@ojs/sdk/testing';
type Jobs = { 'email.send': [to: string] };
const client = new OjsClient<Jobs>({ url: 'http://127.0.0.1:8080' });
const pending: Promise<Job<[to: string]> | null> = client.enqueue('email.send', ['ada@example.com']);
// @ts-expect-error: args are typed from the job map
client.enqueue('email.send', [42]);
export { pending, testing, ValidationError };
`;

describe('@ojs/sdk packed, installed outside the repository', () => {
  let server: RunningServer;
  let work: string;
  let app: string;
  before(async () => {
    server = await startServer({ port: 0, store: ':memory:', testMode: true });
    work = mkdtempSync(join(tmpdir(), 'ojs-sdk-tarball-'));
    const tarball = await pack('@ojs/sdk', work);
    app = await installApp([tarball], work);
    writeFileSync(join(app, 'round-trip.mjs'), ESM);
    writeFileSync(join(app, 'round-trip.cjs'), CJS);
  });
  after(async () => {
    await server.close();
    rmSync(work, { recursive: true, force: true });
  });

  for (const major of [18, 20, 24]) {
    it(`client + worker round trip on Node ${major}, ESM and CommonJS`, {
      timeout: 300_000,
    }, async () => {
      const node = await nodeBinary(major);
      for (const script of ['round-trip.mjs', 'round-trip.cjs']) {
        const { stdout } = await run(
          node,
          [script, server.url, `packed-${major}-${script.slice(-3)}`],
          {
            cwd: app,
            timeout: 60_000,
          },
        );
        const line = stdout.trim().split('\n').at(-1)!;
        const result = JSON.parse(line) as {
          node: string;
          state: string;
          result: unknown;
          testMode: string;
        };
        assert.match(result.node, new RegExp(`^v${major}\\.`), script);
        assert.equal(result.state, 'completed', script);
        assert.deepEqual(result.result, { doubled: 42 }, script);
        assert.match(
          result.testMode,
          major >= 24 ? /npm install --save-dev @ojs\/engine @ojs\/store-sqlite/ : /Node >= 22\.13/,
          script,
        );
      }
    });
  }

  it('test modes run the engine once @ojs/engine and @ojs/store-sqlite are installed', {
    timeout: 300_000,
  }, async () => {
    const tarballs = [await pack('@ojs/sdk', work)];
    for (const peer of ['@ojs/core', '@ojs/engine', '@ojs/store-sqlite']) {
      tarballs.push(await pack(peer, work));
    }
    const withPeers = await installApp(tarballs, work);
    writeFileSync(
      join(withPeers, 'test-mode.mjs'),
      `${TEST_MODE("import { OjsClient, testing } from '@ojs/sdk';")}await main();\n`,
    );
    writeFileSync(
      join(withPeers, 'test-mode.cjs'),
      `${TEST_MODE("const { OjsClient, testing } = require('@ojs/sdk');")}main().catch((e) => { console.error(e); process.exit(1); });\n`,
    );
    for (const script of ['test-mode.mjs', 'test-mode.cjs']) {
      const { stdout } = await run(process.execPath, [script], { cwd: withPeers, timeout: 60_000 });
      assert.deepEqual(
        JSON.parse(stdout.trim().split('\n').at(-1)!),
        { drained: { processed: 1, completed: 1, failed: 0 }, same: true, result: 49 },
        script,
      );
    }
  });

  it('ships types that a consumer compiles, as ESM and as CommonJS', async () => {
    writeFileSync(join(app, 'consumer.mts'), TYPED);
    writeFileSync(join(app, 'consumer.cts'), TYPED);
    await run(
      process.execPath,
      [
        join(ROOT, 'node_modules/typescript/bin/tsc'),
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--typeRoots',
        join(ROOT, 'node_modules/@types'),
        '--types',
        'node',
        'consumer.mts',
        'consumer.cts',
      ],
      { cwd: app },
    ).catch((error: { stdout?: string }) => {
      assert.fail(`tsc failed:\n${error.stdout}`);
    });
  });

  it('publishes dist/ only, with no TypeScript sources and no in-process entry', async () => {
    const manifest = JSON.parse(
      (await run('cat', [join(app, 'node_modules/@ojs/sdk/package.json')])).stdout,
    ) as { exports: Record<string, unknown>; private?: boolean; scripts?: unknown };
    assert.equal(manifest.private, undefined);
    assert.equal(manifest.scripts, undefined);
    assert.deepEqual(Object.keys(manifest.exports), [
      '.',
      './testing',
      './grpc',
      './proto-wire',
      './proto/*',
      './package.json',
    ]);
    // The gRPC transport is ESM only (it finds proto/ through import.meta).
    assert.deepEqual(Object.keys(manifest.exports['./grpc'] as object), ['import']);
    assert.deepEqual(await typeScriptSources(join(app, 'node_modules/@ojs/sdk')), []);
  });
});
