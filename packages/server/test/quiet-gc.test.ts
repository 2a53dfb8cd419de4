/**
 * The server gives the memory a burst grew back once it is quiet (core
 * startQuietGc, decision 0075): a real server process, a burst of three
 * 10,000-job batches, then the process's RSS, awaited until it falls (a
 * server that keeps its heap times the test out).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { entryCommand, ROOT } from '../../../scripts/lib.ts';
import { optionsFromEnv } from '../src/serve.ts';

const dir = mkdtempSync(join(tmpdir(), 'ojs-quiet-gc-'));
const children = new Set<ChildProcess>();
// Also when a test times out: no server outlives this file.
after(async () => {
  await Promise.all([...children].map(stop));
  rmSync(dir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  url: string;
}

function startServer(args: string[]): Promise<Started> {
  const child = spawn(
    process.execPath,
    [
      // The Node flags the installed `ojs` runs with (decisions 0074, 0121).
      ...entryCommand('packages/cli/src/main.ts').nodeArgs,
      'packages/cli/src/main.ts',
      'serve',
      '--port',
      '0',
      '--no-grpc',
      ...args,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      const listening = /listening on (\S+)/.exec(stdout);
      if (!listening) return;
      child.stdout!.off('data', onData);
      child.stdout!.resume();
      resolve({ child, url: listening[1]! });
    };
    child.stdout!.on('data', onData);
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const rssMiB = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

describe('quiet GC in the server', () => {
  it('OJS_QUIET_GC is an on/off switch; anything else is named', () => {
    assert.deepEqual(optionsFromEnv({ OJS_QUIET_GC: 'off' }), { quietGc: false });
    assert.deepEqual(optionsFromEnv({ OJS_QUIET_GC: 'on' }), { quietGc: true });
    assert.throws(
      () => optionsFromEnv({ OJS_QUIET_GC: 'sometimes' }),
      /OJS_QUIET_GC must be on or off/,
    );
  });

  it('after a burst, the quiet server gives its heap back', { timeout: 120_000 }, async () => {
    const server = await startServer(['--store', `sqlite:${join(dir, 'burst.db')}`]);
    try {
      let i = 0;
      const job = () => ({ type: 'burst.noop', args: [{ i: i++, to: 'user@example.com' }] });
      for (let batch = 0; batch < 3; batch++) {
        const response = await fetch(`${server.url}/ojs/v1/jobs/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/openjobspec+json' },
          body: JSON.stringify({ jobs: Array.from({ length: 10_000 }, job) }),
        });
        assert.equal(response.status, 201);
        await response.arrayBuffer();
      }
      const rssAfterBurst = rssMiB(server.child.pid!);
      // Quiet from here on: within a few seconds both threads give their heaps back.
      let rss = rssAfterBurst;
      while (rss > rssAfterBurst * 0.75) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        rss = rssMiB(server.child.pid!);
      }
      assert.ok(rss <= rssAfterBurst * 0.75, `RSS ${rssAfterBurst} -> ${rss} MiB`);
    } finally {
      await stop(server.child);
    }
  });

  it('--no-quiet-gc is a known flag', async () => {
    const server = await startServer(['--no-quiet-gc', '--store', `sqlite:${join(dir, 'off.db')}`]);
    await stop(server.child);
  });
});
