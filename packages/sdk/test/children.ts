/**
 * Worker child processes (fixtures/worker-child.ts) for the multi-process
 * and chaos tests: spawned with their configuration in the environment,
 * their JSON-line events collected as they arrive.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type Mode, waitFor } from './helpers.ts';

const CHILD = fileURLToPath(new URL('./fixtures/worker-child.ts', import.meta.url));

export interface Child {
  process: ChildProcess;
  events: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
  stderr: string[];
  waitEvent(
    predicate: (e: Record<string, unknown>) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
}

/** Where a child finds the server (HTTP) or its store (in-process). */
export interface ChildTarget {
  url: string;
  grpcAddress?: string;
  store: string;
  schema?: string;
}

export function spawnWorker(target: ChildTarget, mode: Mode, env: Record<string, string>): Child {
  const child = spawn(process.execPath, [CHILD], {
    env: {
      ...process.env,
      CHILD_MODE: mode,
      CHILD_URL: target.url,
      CHILD_GRPC: target.grpcAddress ?? '',
      CHILD_STORE: target.store,
      CHILD_PG_SCHEMA: target.schema ?? '',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: Array<Record<string, unknown>> = [];
  const stderr: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.trim() === '') return;
    try {
      events.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // The last line of a SIGKILLed child may be cut short.
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    // 'close', not 'exit': the child's last lines may still be in the pipe at exit.
    child.once('close', (code) => resolve(code)),
  );
  return {
    process: child,
    events,
    exited,
    stderr,
    waitEvent: (predicate, what, timeoutMs = 20_000) =>
      waitFor(() => events.find(predicate), {
        what: `${what} (stderr: ${stderr.join('').slice(-500)})`,
        timeoutMs,
      }),
  };
}
