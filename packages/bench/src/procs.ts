/**
 * Child processes of the bench, all bounded: each runs in its own process
 * group (so the worker process that common.js forks goes with it), is
 * killed by its group id when its time is up, and every group still alive
 * is killed when the bench exits or is interrupted. Only processes started
 * here are ever signalled.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { isPhaseMessage } from './phase-hook.ts';

/** The preload that reports common.js's phase boundaries (phase-probe.ts). */
const PHASE_PROBE = new URL('./phase-probe.ts', import.meta.url).href;

export type PhaseListener = (boundary: {
  pid: number;
  phase: string;
  edge: 'start' | 'end';
}) => Promise<void>;

const MAX_FORWARDED_LINES = 20;
const groups = new Set<number>();
const pids = new Set<number>();

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/** Remembers a (non-group) child pid to kill if the bench is interrupted. */
export function track(pid: number | undefined): void {
  if (pid !== undefined) pids.add(pid);
}
export function untrack(pid: number | undefined): void {
  if (pid !== undefined) pids.delete(pid);
}

let installed = false;
export function installCleanup(): void {
  if (installed) return;
  installed = true;
  const cleanup = () => {
    for (const pgid of groups) killGroup(pgid, 'SIGKILL');
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  process.on('exit', cleanup);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      process.stderr.write(`bench: ${signal}, stopping children\n`);
      cleanup();
      process.exit(130);
    });
  }
}

export interface ChildResult {
  code: number | null;
  /** The last stdout line that parses as a JSON object. */
  json: Record<string, unknown> | undefined;
  timedOut: boolean;
  stderr: string;
}

/**
 * Runs `node file` (this Node) in its own process group, forwards its stderr
 * with a prefix, and returns its last JSON line. After `hardTimeoutMs` the
 * whole group is killed. With `onPhase`, the script (a common.js producer)
 * runs with phase-probe.ts preloaded and waits at each phase boundary until
 * `onPhase` has returned.
 */
export function runNodeScript(
  file: string,
  options: {
    cwd: string;
    env: Record<string, string>;
    hardTimeoutMs: number;
    label: string;
    onPhase?: PhaseListener;
  },
): Promise<ChildResult> {
  return new Promise((resolve) => {
    const onPhase = options.onPhase;
    const child = spawn(process.execPath, onPhase ? ['--import', PHASE_PROBE, file] : [file], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: onPhase ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const pgid = child.pid!;
    groups.add(pgid);
    if (onPhase) {
      child.on('message', (m) => {
        if (!isPhaseMessage(m)) return;
        const { id, ...boundary } = m.ojsBenchPhase;
        onPhase(boundary)
          .catch((error: unknown) =>
            process.stderr.write(`  [${options.label}] phase reading: ${String(error)}\n`),
          )
          .finally(() => {
            if (child.connected) child.send({ ojsBenchPhaseAck: id });
          });
      });
    }
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    // Forwarded with a prefix, a bounded number of lines (a failing worker can log per job).
    let forwarded = 0;
    let suppressed = 0;
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stderr = (stderr + text).slice(-20_000);
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        if (forwarded++ < MAX_FORWARDED_LINES) {
          process.stderr.write(`  [${options.label}] ${line.slice(0, 400)}\n`);
        } else suppressed++;
      }
    });
    const timer = setTimeout(() => {
      timedOut = true;
      process.stderr.write(`  [${options.label}] hard time limit reached, killing it\n`);
      killGroup(pgid, 'SIGKILL');
    }, options.hardTimeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      if (suppressed > 0) {
        process.stderr.write(`  [${options.label}] (${suppressed} more stderr lines not shown)\n`);
      }
      // The forked worker of a producer that died early must not outlive it.
      killGroup(pgid, 'SIGKILL');
      groups.delete(pgid);
      let json: Record<string, unknown> | undefined;
      for (const line of stdout.split('\n').reverse()) {
        if (!line.trim().startsWith('{')) continue;
        try {
          json = JSON.parse(line) as Record<string, unknown>;
          break;
        } catch {
          // not JSON
        }
      }
      resolve({ code, json, timedOut, stderr });
    });
  });
}

/** Whether a Redis server answers PING at host:port (loopback only), within 2 s. */
export function redisReachable(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done(`no answer from Redis at ${host}:${port}`), 2000);
    socket.once('error', (error) => done(`Redis at ${host}:${port}: ${error.message}`));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) =>
      done(data.toString().startsWith('+PONG') ? undefined : `Redis answered ${data.toString()}`),
    );
  });
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}
