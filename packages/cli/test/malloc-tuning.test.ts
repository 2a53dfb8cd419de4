/**
 * `ojs serve` runs with glibc's mmap threshold fixed (decision 0077): the
 * pure decision, and a real server process whose own environment
 * (/proc/<pid>/environ) carries the variable while it answers under the
 * pid it was started with.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { type ServerProcess, startServerProcess } from '../../../scripts/lib.ts';
import { MMAP_THRESHOLD_BYTES, mallocTunedEnv } from '../src/malloc-tuning.ts';

const servers = new Set<ServerProcess>();
after(() => Promise.all([...servers].map((server) => server.stop())));

/** `ojs serve` (the repository's source) on an in-memory store and a free port. */
async function serve(env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess(':memory:', { OJS_LOG_LEVEL: 'silent', ...env });
  servers.add(server);
  return server;
}

const environOf = (pid: number) =>
  new Map(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );

/** Stopped by SIGTERM; its exit code. */
async function stopped(server: ServerProcess): Promise<number | null> {
  await server.stop();
  return server.child.exitCode;
}

describe('malloc tuning of ojs serve', () => {
  it('fixes the threshold on Linux unless the operator chose the allocator', () => {
    const tuned = mallocTunedEnv({ PATH: '/bin' }, 'linux', true);
    assert.deepEqual(tuned, { PATH: '/bin', MALLOC_MMAP_THRESHOLD_: String(MMAP_THRESHOLD_BYTES) });
    assert.equal(mallocTunedEnv({ MALLOC_MMAP_THRESHOLD_: '65536' }, 'linux', true), undefined);
    assert.equal(mallocTunedEnv({ LD_PRELOAD: 'libjemalloc.so.2' }, 'linux', true), undefined);
    assert.equal(mallocTunedEnv({}, 'darwin', true), undefined);
    assert.equal(mallocTunedEnv({}, 'linux', false), undefined);
  });

  it('the installed command sets the same threshold in its first line (no re-exec)', () => {
    const main = readFileSync(new URL('../src/main.ts', import.meta.url), 'utf8');
    const shebang = main.slice(0, main.indexOf('\n'));
    assert.match(shebang, /^#!\/usr\/bin\/env -S /);
    assert.match(shebang, new RegExp(` MALLOC_MMAP_THRESHOLD_=${MMAP_THRESHOLD_BYTES} node `));
    // Set there, the variable is the operator's as far as mallocTunedEnv can tell: no re-exec.
    assert.equal(
      mallocTunedEnv({ MALLOC_MMAP_THRESHOLD_: String(MMAP_THRESHOLD_BYTES) }, 'linux', true),
      undefined,
    );
  });

  const linuxOnly = { skip: process.platform !== 'linux' && 'Linux only (glibc)', timeout: 60_000 };

  it(
    'the server process carries the variable under its own pid and stops on SIGTERM',
    linuxOnly,
    async () => {
      // The runner's own environment must not carry it, or this proves nothing.
      assert.equal(process.env.MALLOC_MMAP_THRESHOLD_, undefined);
      const server = await serve({});
      const response = await fetch(`${server.url}/ojs/v1/health`);
      assert.equal(response.status, 200);
      await response.arrayBuffer();
      assert.equal(
        environOf(server.child.pid!).get('MALLOC_MMAP_THRESHOLD_'),
        String(MMAP_THRESHOLD_BYTES),
      );
      assert.equal(await stopped(server), 0);
    },
  );

  it("an operator's own value is kept", linuxOnly, async () => {
    const server = await serve({ MALLOC_MMAP_THRESHOLD_: '65536' });
    assert.equal(environOf(server.child.pid!).get('MALLOC_MMAP_THRESHOLD_'), '65536');
    assert.equal(await stopped(server), 0);
  });
});
