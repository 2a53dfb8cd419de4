/**
 * The `ojs` binary itself (packages/cli/src/main.ts as a process): version,
 * help per command, exit codes, and the mistakes it must point out rather
 * than act on (a port that is not a number, a mistyped flag, an unknown
 * store scheme), plus an operator command run end to end.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type CliServer, startCliServer } from './helpers.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

function ojs(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      {
        env: { ...process.env, OJS_URL: '', OJS_STORE: '', OJS_PORT: '', ...env },
        timeout: 30_000,
      },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: number }).code ?? 1) : 0;
        resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
      },
    );
  });
}

describe('the ojs binary', () => {
  let cli: CliServer;
  before(async () => {
    cli = await startCliServer();
  });
  after(() => cli.close());

  it('--version, -V and version print the package version', async () => {
    for (const flag of ['--version', '-V', 'version']) {
      const result = await ojs([flag]);
      assert.equal(result.code, 0);
      assert.equal(result.stdout, `ojs ${VERSION}\n`);
    }
  });

  it('help lists the operator commands; serve --help is serve only', async () => {
    const help = await ojs(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^ {2}jobs +list \| get \| retry \| cancel \| delete/m);
    assert.match(help.stdout, /^ {2}completion +/m);
    const serve = await ojs(['serve', '--help']);
    assert.equal(serve.code, 0);
    assert.match(serve.stdout, /^Usage: ojs serve \[options\]/);
    assert.match(serve.stdout, /postgres:\/\/USER@HOST:PORT\/DB/);
    assert.doesNotMatch(serve.stdout, /conformance/);
    const jobs = await ojs(['jobs', 'list', '--help']);
    assert.equal(jobs.code, 0);
    assert.match(jobs.stdout, /^Usage: ojs jobs list \[options\]/);
    assert.match(jobs.stdout, /--state <states>/);
  });

  it('serve --port abc: a clear error, exit 1, nothing started', async () => {
    const result = await ojs(['serve', '--port', 'abc', '--store', ':memory:']);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, "ojs: --port must be a port number 0..65535 (got 'abc').\n");
    const env = await ojs(['serve', '--store', ':memory:'], { OJS_PORT: '80x' });
    assert.match(env.stderr, /OJS_PORT must be a port number/);
  });

  it('serve with a mistyped flag names the likely one, exit 2', async () => {
    const result = await ojs(['serve', '--prot', '9000']);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /Unknown option '--prot' \(did you mean --port\?\); see ojs serve --help/,
    );
  });

  it('serve --store with an unknown scheme is refused with the supported list', async () => {
    const result = await ojs([
      'serve',
      '--port',
      '0',
      '--store',
      'postgress://postgres@127.0.0.1/test',
    ]);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /Unknown store scheme 'postgress:'.*did you mean 'postgres:'\?.*Supported:/,
    );
  });

  it('stats --watch refreshes until Ctrl-C, then exits 0', { timeout: 30_000 }, async () => {
    const child = spawn(
      process.execPath,
      [MAIN, 'stats', '--watch', '--interval', '1', '--url', cli.url],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        // Two refreshes seen: it is live.
        if ((output.match(/OJS server/g) ?? []).length >= 2) resolve();
      });
    });
    const exited = once(child, 'exit');
    child.kill('SIGINT');
    const [code] = await exited;
    assert.equal(code, 0);
  });

  it('codec keygen prints a new base64 AES-256 key', async () => {
    const a = await ojs(['codec', 'keygen']);
    const b = await ojs(['codec', 'keygen']);
    assert.equal(a.code, 0);
    assert.equal(Buffer.from(a.stdout.trim(), 'base64').length, 32);
    assert.notEqual(a.stdout, b.stdout);
    assert.equal((await ojs(['codec'])).code, 2);
  });

  it('serve --enqueue-hook: a bad spec refuses to start; a built-in refuses jobs', {
    timeout: 30_000,
  }, async () => {
    const bad = await ojs([
      'serve',
      '--port',
      '0',
      '--store',
      ':memory:',
      '--enqueue-hook',
      'nope',
    ]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /Unknown enqueue hook 'nope'/);
    const child = spawn(
      process.execPath,
      [
        MAIN,
        'serve',
        '--port',
        '0',
        '--store',
        ':memory:',
        '--no-grpc',
        '--no-dashboard',
        '--log-level',
        'silent',
        '--enqueue-hook',
        'required_meta:tenant_id',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      let output = '';
      const url = await new Promise<string>((resolve) => {
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const match = /listening on (http:\/\/\S+)/.exec(output);
          if (match) resolve(match[1]!);
        });
      });
      const post = (meta: object) =>
        fetch(`${url}/ojs/v1/jobs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'a.b', args: [], meta }),
        });
      const refused = await post({});
      assert.equal(refused.status, 422);
      assert.match(
        ((await refused.json()) as { error: { message: string } }).error.message,
        /tenant_id/,
      );
      assert.equal((await post({ tenant_id: 'acme' })).status, 201);
    } finally {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('an unknown command: usage, exit 2', async () => {
    const result = await ojs(['jbos']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^ojs: unknown command 'jbos'/);
  });

  it('operator commands end to end: --url, OJS_URL, exit 1 when unreachable', async () => {
    const enqueued = await ojs(['enqueue', 'bin.job', '1', '--url', cli.url, '--json']);
    assert.equal(enqueued.code, 0, enqueued.stderr);
    const id = (JSON.parse(enqueued.stdout) as { id: string }).id;
    const listed = await ojs(['jobs', 'list', '--type', 'bin.job'], { OJS_URL: cli.url });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${id} +bin\\.job +default +available`, 'm'));
    const down = await ojs(['jobs', 'list', '--url', 'http://127.0.0.1:1']);
    assert.equal(down.code, 1);
    assert.match(
      down.stderr,
      /^ojs: cannot reach the OJS server: .*ECONNREFUSED.*\n {5}\(set --url or OJS_URL\)/,
    );
  });
});
