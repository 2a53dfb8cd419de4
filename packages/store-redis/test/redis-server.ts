/**
 * A redis-server of a test's own, on a free loopback port with its own
 * directory: the tests that stop, freeze, SIGKILL or restart Redis never
 * touch the shared one. Started and stopped by its pid; a restart keeps the
 * port, the directory and the arguments, so AOF files written before a
 * crash are read back. Readiness is Redis's own "Ready to accept
 * connections" line, exits are the child's exit event: nothing sleeps.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../../scripts/lib.ts';

export interface RedisServer {
  readonly port: number;
  readonly dir: string;
  readonly url: string;
  /** The running process's pid (undefined while stopped). */
  readonly pid: number | undefined;
  /** Everything the processes wrote (shown when a start fails). */
  logs(): string;
  /** Starts (again) on the same port, directory and arguments; resolves when Redis accepts connections. */
  start(): Promise<void>;
  /** Sends the signal to this process and resolves when it has exited. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Freezes (SIGSTOP) or thaws (SIGCONT) the process: its connections stay open. */
  freeze(): void;
  thaw(): void;
  /** Kills the process if it runs and removes the directory. */
  dispose(): Promise<void>;
}

const START_TIMEOUT_MS = 20_000;

let available: boolean | undefined;

/** Whether a redis-server binary is on PATH (tests skip with a reason otherwise, fail under CI). */
export function redisServerMissing(): string | undefined {
  available ??= spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
  if (available) return undefined;
  const reason = 'redis-server is not installed (apt-get install redis-server)';
  if (process.env.CI === 'true')
    throw new Error(`${reason} (CI=true: failing instead of skipping)`);
  console.log(`# skipping: ${reason}`);
  return reason;
}

/** A new redis-server (not started yet unless `start` is awaited); extra arguments as redis-server takes them. */
export async function redisServer(args: string[] = []): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'ojs-redis-'));
  let child: ChildProcess | undefined;
  let output = '';
  const argv = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--logfile',
    '',
    ...args,
  ];

  const exited = (proc: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) resolve();
      else proc.once('exit', () => resolve());
    });

  const server: RedisServer = {
    port,
    dir,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child !== undefined && child.exitCode === null && child.signalCode === null
        ? child.pid
        : undefined;
    },
    logs: () => output,
    start() {
      if (server.pid !== undefined) return Promise.reject(new Error('redis-server already runs'));
      const proc = spawn('redis-server', argv, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      return new Promise<void>((resolve, reject) => {
        let seen = '';
        const timer = setTimeout(() => {
          proc.kill('SIGKILL');
          reject(new Error(`redis-server did not get ready in ${START_TIMEOUT_MS} ms:\n${output}`));
        }, START_TIMEOUT_MS);
        const onData = (chunk: Buffer) => {
          const text = chunk.toString();
          output += text;
          seen += text;
          if (seen.includes('Ready to accept connections')) {
            clearTimeout(timer);
            resolve();
          }
        };
        proc.stdout!.on('data', onData);
        proc.stderr!.on('data', onData);
        proc.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(
            new Error(`redis-server exited (${code ?? signal}) before it was ready:\n${output}`),
          );
        });
        proc.once('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
      });
    },
    async kill(signal) {
      const proc = child;
      if (proc === undefined || server.pid === undefined) return;
      // A frozen process would not act on SIGTERM.
      if (signal === 'SIGTERM') proc.kill('SIGCONT');
      proc.kill(signal);
      await exited(proc);
    },
    freeze() {
      child?.kill('SIGSTOP');
    },
    thaw() {
      child?.kill('SIGCONT');
    },
    async dispose() {
      await server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}
