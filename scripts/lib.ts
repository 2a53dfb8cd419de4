/**
 * Shared by the test and conformance scripts: start an `ojs serve` child
 * process on a free loopback port and wait for its "listening" line.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SHARED_SUITES =
  process.env.OJS_SHARED_SUITES ??
  fileURLToPath(new URL('../../shared/conformance/suites/', import.meta.url));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * The variables and Node flags of a `#!/usr/bin/env -S VAR=value node
 * --flag` line (the `ojs` bin's); none for any other first line.
 */
export function shebangCommand(line: string): { env: Record<string, string>; nodeArgs: string[] } {
  const words = /^#!\S*env\s+-S\s+(.*)$/.exec(line)?.[1]?.trim().split(/\s+/) ?? [];
  const node = words.indexOf('node');
  if (node === -1) return { env: {}, nodeArgs: [] };
  const env: Record<string, string> = {};
  for (const word of words.slice(0, node)) {
    const at = word.indexOf('=');
    if (at > 0) env[word.slice(0, at)] = word.slice(at + 1);
  }
  return { env, nodeArgs: words.slice(node + 1) };
}

/** The variables and Node flags `entry`'s first line runs it with (the `ojs` bin's shebang). */
export function entryCommand(entry: string): { env: Record<string, string>; nodeArgs: string[] } {
  const path = isAbsolute(entry) ? entry : join(ROOT, entry);
  return shebangCommand(readFileSync(path, 'utf8').split('\n', 1)[0]!);
}

export interface ServerProcess {
  url: string;
  /** `127.0.0.1:PORT` of the gRPC binding, when started with `grpc`. */
  grpcAddress?: string;
  child: ChildProcess;
  /** What the server wrote to stderr (shown when a run fails). */
  logs(): string;
  /** Whether the server exited before stop() was called. */
  crashed(): boolean;
  stop(): Promise<void>;
}

/**
 * `ojs serve --test-mode` on a free port. HTTP only unless `grpc` is set:
 * concurrent servers would all want the default gRPC port 9090, so the
 * gRPC binding gets a free port of its own too (`grpcAddress`). `entry`:
 * the `ojs` command to run (default the repository's TypeScript source; the
 * bench passes the installed package's built JavaScript).
 */
export async function startServerProcess(
  store: string,
  extraEnv: Record<string, string> = {},
  options: { grpc?: boolean; entry?: string } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const grpcPort = options.grpc ? await freePort() : undefined;
  const entry = options.entry ?? 'packages/cli/src/main.ts';
  // With the Node flags of the installed `ojs` command's first line
  // (decisions 0074, 0121), read from the entry itself. Not its variables:
  // `ojs serve` sets MALLOC_MMAP_THRESHOLD_ itself when started without it
  // (a re-exec, same pid; decision 0077), which its tests start it to see.
  const { nodeArgs } = entryCommand(entry);
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      entry,
      'serve',
      '--test-mode',
      '--port',
      String(port),
      '--store',
      store,
      ...(grpcPort === undefined ? ['--no-grpc'] : ['--grpc-port', String(grpcPort)]),
    ],
    { cwd: ROOT, env: { ...process.env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening on (\S+)/.exec(stdout);
      if (match) {
        // Log lines follow (JSON on stdout): drained, not kept.
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  let stopping = false;
  return {
    url,
    // Bound before the listening line is printed (ojs serve starts gRPC first).
    ...(grpcPort === undefined ? {} : { grpcAddress: `127.0.0.1:${grpcPort}` }),
    child,
    logs: () => stderr,
    // A child killed by a signal has no exit code, only its signal.
    crashed: () => !stopping && (child.exitCode !== null || child.signalCode !== null),
    stop: () =>
      new Promise((resolve) => {
        stopping = true;
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  timeoutMs?: number,
): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, ...env },
      // Its own process group, so a timeout stops everything it started.
      detached: timeoutMs !== undefined,
    });
    const stopGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // Already gone.
      }
    };
    // Out of the terminal's process group, Ctrl-C must be passed on, and this
    // process must then stop too (not go on to its next step).
    const onSignal = (signal: NodeJS.Signals) => {
      stopGroup(signal);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.kill(process.pid, signal);
    };
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            console.error(
              `\n${command} ${args.slice(0, 2).join(' ')} ...: still running after ${timeoutMs / 60_000} min; stopped (something hangs)`,
            );
            stopGroup('SIGKILL');
          }, timeoutMs);
    if (timeoutMs !== undefined) {
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    }
    child.once('exit', (code) => {
      clearTimeout(timer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(code ?? 1);
    });
  });
}

/** Like run(), but collects stdout and stderr instead of printing them. */
export function runCaptured(
  command: string,
  args: string[],
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

/** Runs `fn` with a connected pg client (pg comes with the store-postgres package). */
export async function withPostgres<T>(
  url: string,
  fn: (client: PgClient) => Promise<T>,
): Promise<T> {
  const pg = (await import('pg')) as unknown as {
    default: { Client: new (o: { connectionString: string }) => PgClient };
  };
  const client = new pg.default.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export function dropPostgresSchema(url: string, schema: string): Promise<unknown> {
  return withPostgres(url, (client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** A short task on its own Redis connection (one connection attempt). */
export async function withRedis<T>(
  url: string,
  fn: (redis: { ping(): Promise<string> }) => Promise<T>,
): Promise<T> {
  const { withConnection } = (await import('@ojs/store-redis')) as {
    withConnection: <R>(
      url: string,
      task: (redis: { ping(): Promise<string> }) => Promise<R>,
    ) => Promise<R>;
  };
  return withConnection(url, fn);
}

/** Deletes every key of a Redis store's prefix (`{prefix}:*`). */
export async function dropRedisPrefix(url: string, prefix: string): Promise<void> {
  const { dropPrefix } = (await import('@ojs/store-redis')) as {
    dropPrefix: (prefix: string, url: string) => Promise<number>;
  };
  await dropPrefix(prefix, url);
}
