/**
 * @ojs/cli as a user installs it: every workspace package it needs packed
 * (`npm pack`, which builds dist/) and installed together in a folder
 * outside the repository. The installed `ojs serve` runs a server (SQLite,
 * Node 24, HTTP and gRPC); the installed operator commands talk to it from Node 18, 20 and
 * 24; `ojs serve` on an older Node says which Node it needs.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { installServer, nodeBinary, run, typeScriptSources } from '../../../scripts/packed.ts';

describe('@ojs/cli packed, installed outside the repository', () => {
  let work: string;
  let app: string;
  let ojs: string;
  let server: ChildProcess;
  let url: string;
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'ojs-cli-tarball-'));
    ({ app, entry: ojs } = await installServer(work));
    server = spawn(
      await nodeBinary(24),
      [
        join(app, 'node_modules/.bin/ojs'),
        'serve',
        '--port',
        '0',
        '--store',
        `sqlite:${join(app, 'ojs.db')}`,
      ],
      { cwd: app, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OJS_API_KEYS: '' } },
    );
    url = await new Promise<string>((resolve, reject) => {
      let output = '';
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]!);
      };
      server.stdout!.on('data', onData);
      server.stderr!.on('data', onData);
      server.once('exit', (code) => reject(new Error(`ojs serve exited (${code}):\n${output}`)));
    });
  });
  after(async () => {
    if (server.exitCode === null) {
      const exited = once(server, 'exit');
      server.kill('SIGTERM');
      await exited;
    }
    rmSync(work, { recursive: true, force: true });
  });

  it('installs an ojs binary built to JavaScript (no TypeScript sources)', async () => {
    const manifest = JSON.parse(
      readFileSync(join(app, 'node_modules/@ojs/cli/package.json'), 'utf8'),
    ) as { bin: Record<string, string>; private?: boolean };
    assert.deepEqual(manifest.bin, { ojs: './dist/main.js' });
    assert.equal(manifest.private, undefined);
    assert.deepEqual(await typeScriptSources(join(app, 'node_modules/@ojs')), []);
  });

  for (const major of [18, 20, 24]) {
    it(`operator commands on Node ${major} against the installed server`, {
      timeout: 300_000,
    }, async () => {
      const node = await nodeBinary(major);
      const version = await run(node, [ojs, '--version']);
      assert.match(version.stdout, /^ojs \d+\.\d+\.\d+\n$/);
      const enqueued = await run(node, [
        ojs,
        'enqueue',
        'packed.cli',
        String(major),
        '--queue',
        `n${major}`,
        '--url',
        url,
        '--json',
      ]);
      const job = JSON.parse(enqueued.stdout) as { id: string; args: unknown[] };
      assert.deepEqual(job.args, [major]);
      const listed = await run(node, [ojs, 'jobs', 'list', '--queue', `n${major}`, '--url', url]);
      assert.match(
        listed.stdout,
        new RegExp(`^${job.id} +packed\\.cli +n${major} +available`, 'm'),
      );
      const cancelled = await run(node, [
        ojs,
        'jobs',
        'cancel',
        '--queue',
        `n${major}`,
        '--yes',
        '--url',
        url,
      ]);
      assert.equal(cancelled.stdout, 'cancelled 1 of 1 matched job\n');
    });
  }

  it('ojs serve on Node 20 names the Node it needs', { timeout: 300_000 }, async () => {
    const node = await nodeBinary(20);
    const failed = await run(node, [ojs, 'serve', '--port', '0']).then(
      () => assert.fail('serve started on Node 20'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /ojs serve needs Node >= 22\.13 \(this is v20\./);
  });
});
