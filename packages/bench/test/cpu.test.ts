/**
 * The pure parts of the CPU-per-job readings (decision 0095): /proc parsers,
 * the phase hook injected into common.js, the per-phase arithmetic, wrk's
 * output and the recorded ceiling. No benchmark runs here and nothing is timed.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { shebangCommand } from '../../../scripts/lib.ts';
import { cpuPerJob, phaseSeconds } from '../src/cpu.ts';
import { injectPhaseHook } from '../src/phase-hook.ts';
import { cpuSeconds, parseNetTcp, parseProcStat, parseProcStatus } from '../src/proc.ts';
import { cpuRow, startupRows, sumSpends, wrkRows } from '../src/report.ts';
import { median } from '../src/startup.ts';
import { cpuMsPerSecond, parseRecordedCeiling, parseWrkOutput, usPerRequest } from '../src/wrk.ts';

describe('/proc parsers', () => {
  it('stat: ppid and utime + stime in seconds, a command name with spaces and parentheses', () => {
    // Fields 14 and 15 (utime 250, stime 50 ticks of 1/100 s).
    const text =
      '4242 (node (MainThread) x) S 4200 4242 4200 0 -1 4194560 1 0 0 0 250 50 0 0 20 0 11 0 100 1000 200 18446744073709551615\n';
    assert.deepEqual(parseProcStat(text), {
      pid: 4242,
      comm: 'node (MainThread) x',
      ppid: 4200,
      cpu_s: 3,
    });
    assert.equal(parseProcStat('garbage'), null);
  });

  it('stat of this process reads a positive CPU time', () => {
    let x = 0;
    for (let i = 0; i < 1e6; i++) x += i;
    assert.ok(x > 0);
    assert.ok((cpuSeconds(process.pid) ?? -1) >= 0);
    assert.equal(cpuSeconds(null), null);
  });

  it('status: VmRSS and its peak VmHWM in MiB', () => {
    const text = 'Name:\tnode\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n';
    assert.deepEqual(parseProcStatus(text), { rss_mib: 100, peak_rss_mib: 200 });
    assert.deepEqual(parseProcStatus('Name:\tx\n'), { rss_mib: null, peak_rss_mib: null });
  });

  it('net/tcp: local and remote ports (hex) and the inode', () => {
    const text = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:D431 0100007F:1538 01 00000000:00000000 00:00000000 00000000     0        0 123456 1 0000000000000000 20 4 30 10 -1',
    ].join('\n');
    assert.deepEqual(parseNetTcp(text), [{ local_port: 54321, remote_port: 5432, inode: 123456 }]);
  });
});

describe('phase hook in common.js', () => {
  const producer = `
    const CFG = { SKIP: ['skipped'] };
    async function runProducer(log) {
      const results = {};
      const runPhase = async (name, fn) => {
        if (CFG.SKIP.includes(name)) return;
        try {
          results[name] = await fn();
        } catch (e) {
          results[name] = { error: String(e.message || e) };
        }
      };
      await runPhase('one', async () => { log.push('one body'); return 1; });
      await runPhase('skipped', async () => { log.push('skipped body'); return 2; });
      await runPhase('two', async () => { log.push('two body'); throw new Error('boom'); });
      return results;
    }
    return runProducer;`;

  it('awaits the hook around each phase that runs, outside its body, and keeps its result', async () => {
    const injected = injectPhaseHook(producer);
    assert.ok(injected);
    const log: string[] = [];
    const g = globalThis as { __ojsBenchPhase?: (p: string, e: string) => Promise<void> };
    g.__ojsBenchPhase = async (phase, edge) => {
      await new Promise((r) => setImmediate(r));
      log.push(`${edge} ${phase}`);
    };
    try {
      const runProducer = new Function(injected)() as (log: string[]) => Promise<object>;
      const results = await runProducer(log);
      assert.deepEqual(log, [
        'start one',
        'one body',
        'end one',
        'start two',
        'two body',
        'end two',
      ]);
      assert.deepEqual(results, { one: 1, two: { error: 'boom' } });
    } finally {
      delete g.__ojsBenchPhase;
    }
  });

  it('without the hook (the worker process) the phases run as before', async () => {
    const runProducer = new Function(injectPhaseHook(producer)!)() as (
      l: string[],
    ) => Promise<object>;
    const log: string[] = [];
    assert.deepEqual(await runProducer(log), { one: 1, two: { error: 'boom' } });
    assert.deepEqual(log, ['one body', 'two body']);
  });

  it('refuses a source without exactly one runPhase declaration', () => {
    assert.equal(injectPhaseHook('const x = 1;'), undefined);
  });

  it("matches the anchors' common.js in ../shared", (t) => {
    const file = fileURLToPath(
      new URL('../../../../shared/bench-anchors/common.js', import.meta.url),
    );
    if (!existsSync(file)) return t.skip(`${file} not found`);
    assert.ok(injectPhaseHook(readFileSync(file, 'utf8')));
  });
});

describe('CPU per job', () => {
  it('a phase spends its end reading minus its start reading, per role', () => {
    const spent = phaseSeconds([
      { phase: 'enqueue_single', edge: 'start', cpu: { producer: 1, server: 10 } },
      { phase: 'enqueue_single', edge: 'end', cpu: { producer: 3, server: 14, postgres: 0.5 } },
      { phase: 'drain_single', edge: 'start', cpu: { producer: 3, server: 14 } },
    ]);
    // A backend first seen during the phase counts from 0; an unfinished phase has no figure.
    assert.deepEqual(spent, { enqueue_single: { producer: 2, server: 4, postgres: 0.5 } });
  });

  it('µs per job by role and in total', () => {
    assert.deepEqual(cpuPerJob({ server: 1, worker: 0.5 }, 20_000), {
      roles: { worker: 25, server: 50 },
      total: 75,
    });
    assert.equal(cpuPerJob({ server: 1 }, 0), null);
    assert.equal(cpuPerJob({ server: 1 }, null), null);
  });

  it('the CPU row: totals, the ratio of the totals, the processes in the detail', () => {
    const row = cpuRow(
      'postgres',
      'http',
      'drain_bulk',
      { seconds: { producer: 0.1, worker: 1, server: 2, postgres: 1 }, jobs: 20_000 },
      { seconds: { producer: 0.1, worker: 1, postgres: 0.9 }, jobs: 20_000 },
    );
    assert.equal(row.ours, 205);
    assert.equal(row.anchor, 'graphile');
    assert.equal(row.anchor_value, 100);
    assert.equal(row.ratio, 2.05);
    assert.match(
      row.detail,
      /ours producer 5.0 \+ worker 50.0 \+ server 100 \+ PG backends 50.0 = 205;/,
    );
    assert.match(
      row.detail,
      /graphile-worker \(batching\) producer 5.0 \+ worker 50.0 \+ PG backends 45.0 = 100$/,
    );
  });

  it('all phases: seconds and jobs added up, phases without a reading left out', () => {
    assert.deepEqual(
      sumSpends([
        { seconds: { server: 1 }, jobs: 10 },
        { seconds: { server: 2, worker: 1 }, jobs: 20 },
        { seconds: undefined, jobs: 5 },
      ]),
      { seconds: { server: 3, worker: 1 }, jobs: 30 },
    );
    assert.deepEqual(sumSpends([]), { seconds: undefined, jobs: null });
  });
});

describe('wrk phase', () => {
  it('parses the JSON line of wrk-ojs.lua after wrk’s own output', () => {
    const stdout = `Running 5s test @ http://127.0.0.1:1\n  1 threads and 50 connections\n{"op":"fetch","requests":1000,"duration_s":5.000,"rps":200.0,"errors":0,"non2xx":3,"ok_rps":199.4,"lat_p50_ms":1.000,"lat_p99_ms":9.000,"ids":0}\n`;
    assert.equal(parseWrkOutput(stdout)?.non2xx, 3);
    assert.equal(parseWrkOutput('unable to connect'), null);
  });

  it('idle CPU in ms per second: 0.06 s over 2 s is 30 ms/s', () => {
    assert.equal(cpuMsPerSecond(0.06, 2000), 30);
    assert.equal(cpuMsPerSecond(0.06, 0), null);
  });

  it('server CPU per request', () => {
    assert.equal(usPerRequest(10, 13, 60_000), 50);
    assert.equal(usPerRequest(null, 13, 60_000), null);
    assert.equal(usPerRequest(10, 13, 0), null);
  });

  it('reads the one-process Redis line of the recorded ceiling', () => {
    const text = [
      '{"store":"redis","server_procs":1,"enqueue_c50":{"ok_rps":25074.0},"fetch_c50":{"ok_rps":25137.5},"ack_c50":{"ok_rps":25165.1}}',
      '{"store":"redis","server_procs":2,"enqueue_c50":{"ok_rps":1}}',
    ].join('\n');
    assert.deepEqual(parseRecordedCeiling(text, 'redis'), {
      store: 'redis',
      enqueue_ok_rps: 25074,
      fetch_ok_rps: 25137.5,
      ack_ok_rps: 25165.1,
    });
    assert.equal(parseRecordedCeiling(text, 'pg'), null);
  });

  it('rows: 2xx rate against the recorded figure, server CPU per request', () => {
    const rows = wrkRows(
      'sqlite',
      {
        seconds: 5,
        connections: 50,
        backlog_before_fetch: 200_000,
        server_idle_cpu_ms_per_s: 20,
        server_peak_rss_before_fill_mib: 150,
        server_peak_rss_mib: 250,
        ops: [
          {
            op: 'ack',
            seconds: 3,
            requests: 30_000,
            duration_s: 3,
            rps: 10_000,
            ok_rps: 10_000,
            non2xx: 0,
            errors: 0,
            lat_p50_ms: 1,
            lat_p99_ms: 2,
            ids: 30_010,
            ids_used_up: true,
            server_cpu_s: 1.5,
            server_cpu_us_per_request: 50,
          },
        ],
      },
      { file: 'f', store: 'redis', enqueue_ok_rps: 1, fetch_ok_rps: 1, ack_ok_rps: 20_000 },
    );
    assert.deepEqual(
      rows.map((r) => [r.phase, r.unit, r.ours, r.anchor, r.anchor_value, r.ratio]),
      [
        ['server CPU while idle', 'ms/s', 20, null, null, null],
        ['ack POST /workers/ack', 'req/s', 10_000, 'recorded', 20_000, 0.5],
        ['ack server CPU', 'µs/req', 50, null, null, null],
        ['server peak RSS (enqueue run)', 'MiB', 150, null, null, null],
      ],
    );
    assert.match(rows[1]!.detail, /ran out/);
  });
});

describe('startup phase', () => {
  it('medians', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 2, 3]), 2.5);
    assert.equal(median([]), null);
  });

  it("runs the entry as its shebang says (the ojs bin's variables and Node flags)", () => {
    assert.deepEqual(
      shebangCommand(
        '#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=16',
      ),
      { env: { MALLOC_MMAP_THRESHOLD_: '131072' }, nodeArgs: ['--max-semi-space-size=16'] },
    );
    assert.deepEqual(shebangCommand('#!/usr/bin/env node'), { env: {}, nodeArgs: [] });
    assert.deepEqual(shebangCommand('/**'), { env: {}, nodeArgs: [] });
  });

  it('rows say which server ran', () => {
    const rows = startupRows(
      {
        entry: 'e',
        start_ms: 300,
        idle_rss_mib: 90,
        runs: [{ start_ms: 300, idle: { rss_mib: 90, peak_rss_mib: 95 } }],
      },
      true,
    );
    assert.deepEqual(
      rows.map((r) => [r.unit, r.ours]),
      [
        ['ms', 300],
        ['MiB', 90],
      ],
    );
    assert.match(rows[0]!.detail, /not the installed build/);
  });
});
