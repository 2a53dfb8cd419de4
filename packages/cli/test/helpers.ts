/**
 * The CLI tests' fixture: a live OJS server (SQLite in a temp folder, or a
 * store spec, port 0) and `ojs(...)`, which runs an operator command in-process against it
 * over HTTP with captured output (a terminal or a pipe, a confirmation
 * answer), as the binary would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningServer, startServer } from '@ojs/server';
import type { Io } from '../src/io.ts';
import { operatorMain } from '../src/operator.ts';

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
  /** Questions asked for confirmation. */
  asked: string[];
}

export interface RunOptions {
  /** Output on a terminal (tables cut to 100 columns, progress bars, live stats). */
  tty?: boolean;
  /** The operator's answer when asked to confirm; absent = no terminal to ask. */
  answer?: boolean;
  env?: Record<string, string>;
  signal?: AbortSignal;
}

export interface CliServer {
  server: RunningServer;
  url: string;
  ojs(args: string[], options?: RunOptions): Promise<Result>;
  /** `ojs ... --json`, parsed; fails the test on a non-zero exit. */
  json<T = Record<string, unknown>>(args: string[]): Promise<T>;
  /** A raw request to the server (to set up states the CLI does not create). */
  http(method: string, path: string, body?: unknown): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** `store`: a store spec (a PostgreSQL schema the test drops itself); default a temporary SQLite file. */
export async function startCliServer(
  options: { apiKeys?: string; store?: string } = {},
): Promise<CliServer> {
  const dir = mkdtempSync(join(tmpdir(), 'ojs-cli-test-'));
  const server = await startServer({
    port: 0,
    store: options.store ?? `sqlite:${join(dir, 'ojs.db')}`,
    sqliteSynchronous: 'NORMAL',
    testMode: true,
    // `ojs webhooks test` and the delivery log, against a receiver on loopback.
    webhooksAllowPrivate: true,
    webhooksAllowHttp: true,
    ...(options.apiKeys ? { apiKeys: options.apiKeys } : {}),
  });
  const ojs = async (args: string[], options: RunOptions = {}): Promise<Result> => {
    let stdout = '';
    let stderr = '';
    const asked: string[] = [];
    const io: Io = {
      stdout: { write: (t: string) => (stdout += t), isTTY: options.tty, columns: 100 },
      stderr: { write: (t: string) => (stderr += t), isTTY: options.tty },
      env: { OJS_URL: server.url, ...options.env },
      // No real waiting between `stats` refreshes in tests.
      sleep: async () => {},
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.answer === undefined
        ? {}
        : {
            confirm: async (question: string) => {
              asked.push(question);
              return options.answer!;
            },
          }),
    };
    const code = await operatorMain(args, io, '0.0.0-test');
    return { code, stdout, stderr, asked };
  };
  return {
    server,
    url: server.url,
    ojs,
    async json<T>(args: string[]) {
      const result = await ojs([...args, '--json']);
      if (result.code !== 0) {
        throw new Error(`ojs ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
      }
      return JSON.parse(result.stdout) as T;
    },
    async http(method, path, body) {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return (await response.json()) as Record<string, unknown>;
    },
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `n` jobs of `queue` that failed for good: enqueued with one attempt (and
 * `dead_letter` on exhaustion when asked), fetched and failed.
 */
export async function failedJobs(
  cli: CliServer,
  queue: string,
  n: number,
  deadLetter = false,
): Promise<string[]> {
  const jobs = Array.from({ length: n }, (_, i) => ({
    type: 'flaky.run',
    args: [i],
    options: {
      queue,
      retry: { max_attempts: 1, ...(deadLetter ? { on_exhaustion: 'dead_letter' } : {}) },
    },
  }));
  await cli.http('POST', '/ojs/v1/jobs/batch', { jobs });
  const ids: string[] = [];
  while (ids.length < n) {
    const { jobs: fetched } = (await cli.http('POST', '/ojs/v1/workers/fetch', {
      queues: [queue],
      count: 100,
    })) as { jobs: { id: string }[] };
    if (fetched.length === 0) throw new Error(`only ${ids.length} of ${n} jobs fetched`);
    for (const job of fetched) {
      await cli.http('POST', '/ojs/v1/workers/nack', {
        job_id: job.id,
        error: { code: 'handler_error', type: 'SmtpTimeout', message: 'smtp timed out' },
      });
      ids.push(job.id);
    }
  }
  return ids;
}
