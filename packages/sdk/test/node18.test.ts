/**
 * The SDK's promise of Node >= 18: build it with tsc (the package's `build`
 * script) and run a producer and a worker from the built JavaScript on
 * Node 18 (the `node@18` package from the npm registry) against a real server.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type RunningServer, startServer } from '@ojs/server';

const run = promisify(execFile);
const SDK_DIR = fileURLToPath(new URL('..', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const SCRIPT = `
const { OjsClient, OjsWorker } = await import(process.argv[2]);
const url = process.argv[3];
const client = new OjsClient({ url });
const job = await client.enqueue('node18.check', [21], { queue: 'node18' });
const worker = new OjsWorker({ url, queues: ['node18'], concurrency: 2, exitOnSignal: false, pollWaitMs: 200 });
worker.register('node18.check', async (ctx) => ({ doubled: ctx.args[0] * 2 }));
await worker.start();
const done = await client.waitForJob(job.id, { states: ['completed'], timeoutMs: 10000 });
await worker.stop();
console.log(JSON.stringify({ node: process.version, state: done.state, result: done.result }));
`;

describe('SDK on Node 18 (built output)', () => {
  let server: RunningServer;
  let dir: string;
  before(async () => {
    server = await startServer({ port: 0, store: ':memory:', testMode: true, logLevel: 'silent' });
    dir = mkdtempSync(join(tmpdir(), 'ojs-sdk-node18-'));
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('builds, and a producer and a worker run on Node 18', async () => {
    const out = join(dir, 'dist');
    await run(process.execPath, [
      join(ROOT, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(SDK_DIR, 'tsconfig.build.json'),
      '--outDir',
      out,
    ]);
    // The package is ESM ("type": "module"); the copy outside it needs the same marker.
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    writeFileSync(join(dir, 'check.mjs'), SCRIPT);
    let stdout: string;
    try {
      ({ stdout } = await run(
        'npx',
        ['-y', 'node@18', join(dir, 'check.mjs'), join(out, 'index.js'), server.url],
        {
          timeout: 120_000,
        },
      ));
    } catch (error) {
      // Without the registry, Node 18 cannot be fetched: say so, and fail in CI.
      if (process.env.CI === 'true') throw error;
      process.stdout.write(
        `# skipping the Node 18 run: ${(error as Error).message} ${(error as { stderr?: string }).stderr ?? ''}\n`,
      );
      return;
    }
    const line = stdout
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{"node"'))
      .at(-1)!;
    const result = JSON.parse(line) as { node: string; state: string; result: { doubled: number } };
    assert.match(result.node, /^v18\./);
    assert.equal(result.state, 'completed');
    assert.deepEqual(result.result, { doubled: 42 });
  });
});
