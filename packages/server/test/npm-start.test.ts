/**
 * `npm start` must not leave an orphan: npm forwards SIGTERM/SIGINT to its
 * child and waits for it, and the script `exec`s node so that the child is
 * the server itself (a shell in between would die without passing the
 * signal on). The server shuts down gracefully, so npm exits 0, and the
 * port is closed by the time npm has exited.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** Resolves with the error code of a GET that cannot connect, or 'connected'. */
function probe(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request(`${url}/ojs/v1/health`, (res) => {
      res.resume();
      resolve('connected');
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    req.end();
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  describe(`npm start, then ${signal} to npm`, () => {
    it('stops the server too (no orphan), exit code 0', { timeout: 60_000 }, async () => {
      const npm = spawn('npm', ['start', '--', '--port', '0', '--store', ':memory:'], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, OJS_API_KEYS: '', OJS_STORE: '' },
      });
      let output = '';
      const url = await new Promise<string>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          const match = /listening on (http:\/\/\S+)/.exec(output);
          if (match) resolve(match[1]!);
        };
        npm.stdout.on('data', onData);
        npm.stderr.on('data', onData);
        npm.once('exit', (code) => reject(new Error(`npm exited (${code}) first:\n${output}`)));
      });
      assert.equal(await probe(url), 'connected');
      const exited = once(npm, 'exit');
      npm.kill(signal);
      const [code] = await exited;
      assert.equal(code, 0, output);
      assert.match(output, new RegExp(`${signal} received, shutting down`));
      // npm waited for its child: the server's port is already closed.
      assert.equal(await probe(url), 'ECONNREFUSED');
    });
  });
}
