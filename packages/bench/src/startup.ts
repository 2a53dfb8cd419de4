/**
 * The `startup` phase (decision 0095): the server users install, started
 * as `ojs serve` on a fresh SQLite file (its defaults: HTTP and gRPC,
 * synchronous=FULL), timed from spawn to the first 200 of
 * `GET /ojs/v1/health` (polled every 5 ms), then left idle ~2 s and its
 * RSS read from /proc/<pid>/status. The process is this Node running the
 * entry file directly (no `npx` shim), so the pid read is the server's,
 * with the variables and flags of the entry's shebang, as the bin runs it.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { entryCommand, freePort } from '../../../scripts/lib.ts';
import { type ProcMemory, readProcMemory } from './proc.ts';
import { track, untrack } from './procs.ts';

export const IDLE_MS = 2000;

export interface StartupRun {
  /** Spawn to the first 200 of GET /ojs/v1/health, ms. */
  start_ms: number | null;
  idle: ProcMemory;
  error?: string;
}

export interface StartupResult {
  entry: string;
  runs: StartupRun[];
  /** Medians of the runs that answered. */
  start_ms: number | null;
  idle_rss_mib: number | null;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

async function startOnce(
  entry: string,
  tmp: string,
  i: number,
  timeoutMs: number,
): Promise<StartupRun> {
  const file = join(tmp, `startup-${i}.db`);
  const [port, grpcPort] = [await freePort(), await freePort()];
  // As the installed `ojs` runs: its shebang's variables and Node flags
  // (decisions 0074, 0098), so the start is one process, not a re-exec.
  const command = entryCommand(entry);
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      ...command.nodeArgs,
      entry,
      'serve',
      '--port',
      String(port),
      '--grpc-port',
      String(grpcPort),
      '--store',
      `sqlite:${file}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...command.env } },
  );
  track(child.pid);
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-2000);
  });
  const run: StartupRun = { start_ms: null, idle: { rss_mib: null, peak_rss_mib: null } };
  try {
    const health = `http://127.0.0.1:${port}/ojs/v1/health`;
    while (performance.now() - t0 < timeoutMs) {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${stderr.trim()}`);
      if (await answers(health)) {
        run.start_ms = Math.round((performance.now() - t0) * 10) / 10;
        break;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    if (run.start_ms === null) throw new Error(`no answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, IDLE_MS));
    run.idle = readProcMemory(child.pid);
  } catch (error) {
    run.error = (error as Error).message;
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    if (child.exitCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    if (child.exitCode === null) await exited;
    clearTimeout(timer);
    untrack(child.pid);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
  }
  return run;
}

/** `runs` starts of `entry` one after the other; medians of those that answered. */
export async function runStartup(
  entry: string,
  tmp: string,
  runs: number,
  timeoutMs: number,
): Promise<StartupResult> {
  const out: StartupRun[] = [];
  for (let i = 0; i < runs; i++) out.push(await startOnce(entry, tmp, i, timeoutMs));
  const ok = out.filter((r) => r.start_ms !== null);
  return {
    entry,
    runs: out,
    start_ms: median(ok.map((r) => r.start_ms!)),
    idle_rss_mib: median(ok.flatMap((r) => (r.idle.rss_mib === null ? [] : [r.idle.rss_mib]))),
  };
}
