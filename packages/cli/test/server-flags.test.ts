/**
 * The Node flags the server runs with (decisions 0074, 0121) are written
 * once, in the `ojs` bin's first line: `npm start` carries the same, and
 * the launcher of the tests, conformance runs and bench reads them from
 * the entry it starts, so a server measured there is the one users run.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import {
  entryCommand,
  ROOT,
  type ServerProcess,
  startServerProcess,
} from '../../../scripts/lib.ts';

const servers = new Set<ServerProcess>();
after(() => Promise.all([...servers].map((server) => server.stop())));

const MAIN = 'packages/cli/src/main.ts';

describe("the server's Node flags", () => {
  it("the bin's first line sets the young generation and the old generation's growth", () => {
    const { nodeArgs } = entryCommand(MAIN);
    // 16 MiB semi-spaces (0074); the old generation grows to twice its size
    // after a full GC before the next one, not up to four times (0121).
    assert.ok(nodeArgs.includes('--max-semi-space-size=16'), nodeArgs.join(' '));
    assert.ok(nodeArgs.includes('--heap-growing-percent=100'), nodeArgs.join(' '));
  });

  it('npm start runs the server with the same flags', () => {
    const start = (
      JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: { start: string } }
    ).scripts.start;
    const words = start.split(/\s+/);
    const flags = words.slice(words.indexOf('node') + 1, words.indexOf(MAIN));
    assert.deepEqual(flags, entryCommand(MAIN).nodeArgs);
  });

  it('a server the launcher starts runs with them, under its own pid', {
    skip: process.platform !== 'linux' && 'reads /proc',
    timeout: 60_000,
  }, async () => {
    const server = await startServerProcess(':memory:', { OJS_LOG_LEVEL: 'silent' });
    servers.add(server);
    const response = await fetch(`${server.url}/ojs/v1/health`);
    assert.equal(response.status, 200);
    await response.arrayBuffer();
    // After `ojs serve`'s own re-exec (decision 0077) too: the same pid, the same flags.
    const argv = readFileSync(`/proc/${server.child.pid}/cmdline`, 'utf8').split('\0');
    const flags = argv.slice(
      1,
      argv.findIndex((arg) => arg.endsWith(MAIN)),
    );
    assert.deepEqual(flags, entryCommand(MAIN).nodeArgs);
    await server.stop();
  });
});
