/**
 * How fast the installed server starts and how small it idles (issue 30,
 * decision 0098): `@ojs/cli` packed and installed as npm installs it, then
 * `ojs serve` on a fresh SQLite file, several times. Per run:
 *
 *   first_answer_ms  from spawning `ojs` (the first exec, before its own
 *                    re-exec for the malloc tuning, decision 0077) to the
 *                    first 200 from GET /ojs/v1/health, polled every 2 ms
 *                    on a new connection each time
 *   cpu_ms           the server's CPU (utime + stime of every thread, across
 *                    the re-exec: /proc/<pid>/stat) at that first answer;
 *                    steadier than the wall time on a busy machine
 *   idle_rss_mib     VmRSS of the serving process after --idle-ms (default 5 s)
 *   idle_hwm_mib     its peak (VmHWM) by then
 *
 * The command runs as installed: the `ojs` bin through its shebang
 * (`env -S node --max-semi-space-size=16`), with the Node that runs this
 * script first on PATH.
 *
 *   node scripts/measure-startup.ts [--app DIR] [--runs N] [--idle-ms MS] [--cold] [--json] [-- serve args]
 *
 * `ojs` keeps Node's compile cache in the OS temporary folder; --cold gives
 * each run an empty one (NODE_COMPILE_CACHE), as the first start after an
 * install has.
 * --app DIR reuses an install (the folder with node_modules/.bin/ojs) instead
 * of packing and installing into a temporary folder. Serve arguments after
 * `--` are added (e.g. `-- --no-grpc --metrics off --no-dashboard`).
 * Linux only (it reads /proc).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from './lib.ts';
import { installApp, pack, SERVER_PACKAGES } from './packed.ts';

export interface StartupSample {
  first_answer_ms: number;
  cpu_ms: number;
  idle_rss_mib: number;
  idle_hwm_mib: number;
}

const CLOCK_TICKS_PER_S = 100;

/** utime + stime of a process in ms (every thread; kept across execve). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) in parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
}

function statusMib(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1]);
  return Math.round((kib / 1024) * 10) / 10;
}

/** One GET of the health endpoint on a new connection: its status, or 0 when refused. */
function health(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/ojs/v1/health', agent: false },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** One start of the installed `ojs serve` in `app`, measured, then stopped with SIGTERM. */
export async function measureStartup(
  app: string,
  options: { idleMs?: number; serveArgs?: string[]; coldCompileCache?: boolean } = {},
): Promise<StartupSample> {
  const port = await freePort();
  const grpcPort = await freePort();
  const data = mkdtempSync(join(tmpdir(), 'ojs-startup-'));
  const args = [
    'serve',
    '--port',
    String(port),
    '--store',
    `sqlite:${join(data, 'ojs.db')}`,
    ...(options.serveArgs ?? []),
  ];
  // gRPC on a free port unless turned off: 9090 may be taken by another server.
  if (!args.includes('--no-grpc') && !args.includes('--grpc-port')) {
    args.push('--grpc-port', String(grpcPort));
  }
  const env = {
    ...process.env,
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    OJS_API_KEYS: '',
    ...(options.coldCompileCache ? { NODE_COMPILE_CACHE: join(data, 'compile-cache') } : {}),
  };
  const started = performance.now();
  const child = spawn(join(app, 'node_modules/.bin/ojs'), args, {
    cwd: app,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  try {
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`ojs serve exited (${child.exitCode}): ${stderr}`);
      if ((await health(port)) === 200) break;
      if (performance.now() - started > 60_000) throw new Error(`no answer in 60 s: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const firstAnswerMs = performance.now() - started;
    const cpu = cpuMs(child.pid!);
    await new Promise((resolve) => setTimeout(resolve, options.idleMs ?? 5000));
    return {
      first_answer_ms: Math.round(firstAnswerMs),
      cpu_ms: Math.round(cpu),
      idle_rss_mib: statusMib(child.pid!, 'VmRSS'),
      idle_hwm_mib: statusMib(child.pid!, 'VmHWM'),
    };
  } finally {
    if (child.exitCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(data, { recursive: true, force: true });
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      app: { type: 'string' },
      runs: { type: 'string', default: '5' },
      'idle-ms': { type: 'string', default: '5000' },
      cold: { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  let app = values.app;
  let work: string | undefined;
  if (app === undefined) {
    work = mkdtempSync(join(tmpdir(), 'ojs-startup-install-'));
    const tarballs: string[] = [];
    for (const name of SERVER_PACKAGES) tarballs.push(await pack(name, work));
    app = await installApp(tarballs, work);
  }
  try {
    const samples: StartupSample[] = [];
    for (let i = 0; i < Number(values.runs); i++) {
      const sample = await measureStartup(app, {
        idleMs: Number(values['idle-ms']),
        serveArgs: positionals,
        coldCompileCache: values.cold,
      });
      samples.push(sample);
      if (!values.json) process.stderr.write(`run ${i + 1}: ${JSON.stringify(sample)}\n`);
    }
    const summary = Object.fromEntries(
      (Object.keys(samples[0]!) as (keyof StartupSample)[]).map((key) => [
        key,
        median(samples.map((s) => s[key])),
      ]),
    );
    process.stdout.write(
      values.json
        ? `${JSON.stringify({ median: summary, samples })}\n`
        : `median of ${samples.length}: ${JSON.stringify(summary)}\n`,
    );
  } finally {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`measure-startup: ${error instanceof Error ? error.stack : error}\n`);
    process.exitCode = 1;
  });
}
