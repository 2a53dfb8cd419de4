/** The bench's flag parsing and ratio arithmetic (no benchmark runs here). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BacklogResult } from '../src/backlog.ts';
import { PHASES, parseOptions, skipList, UsageError } from '../src/options.ts';
import { anchorPhaseRows, backlogRows } from '../src/report.ts';

describe('bench flags', () => {
  it('defaults: SQLite and PostgreSQL, every mode and phase, both anchors', () => {
    const o = parseOptions([]);
    assert.deepEqual(o.stores, ['sqlite', 'postgres']);
    assert.deepEqual(o.modes, ['http', 'in-process', 'raw', 'grpc']);
    assert.deepEqual(o.phases, [...PHASES]);
    assert.deepEqual(o.anchors, ['bullmq', 'graphile']);
    assert.equal(o.n, 20_000);
    assert.equal(o.backlog, 1_000_000);
    assert.equal(o.redisBacklog, 200_000);
  });

  it('Redis: --stores redis or --store redis, its own backlog depth', () => {
    assert.deepEqual(parseOptions(['--stores', 'redis']).stores, ['redis']);
    assert.deepEqual(parseOptions(['--store', 'redis']).stores, ['redis']);
    assert.deepEqual(parseOptions(['--store', 'sqlite,redis']).stores, ['sqlite', 'redis']);
    assert.equal(parseOptions(['--redis-backlog', '100_000']).redisBacklog, 100_000);
  });

  it('reads numbers, lists and anchors', () => {
    const o = parseOptions([
      '--n',
      '2000',
      '--backlog',
      '20_000',
      '--stores',
      'postgres',
      '--phases',
      'enqueue_bulk,drain_bulk,backlog',
      '--anchors',
      'graphile',
    ]);
    assert.equal(o.n, 2000);
    assert.equal(o.backlog, 20_000);
    assert.deepEqual(o.stores, ['postgres']);
    assert.deepEqual(o.phases, ['enqueue_bulk', 'drain_bulk', 'backlog']);
    assert.deepEqual(o.anchors, ['graphile']);
    assert.deepEqual(parseOptions(['--anchors', 'off']).anchors, []);
    assert.equal(parseOptions([]).observability, true);
    assert.equal(parseOptions(['--observability', 'off']).observability, false);
    assert.throws(() => parseOptions(['--observability', 'no']), UsageError);
    assert.equal(parseOptions([]).server, 'packed');
    assert.equal(parseOptions(['--server', 'source']).server, 'source');
    assert.deepEqual(skipList(o.phases), [
      'enqueue_seq',
      'enqueue_single',
      'drain_single',
      'latency_idle',
      'steady_e2e',
    ]);
  });

  for (const [argv, message] of [
    [['--bogus'], /Unknown option '--bogus'/],
    [['stray'], /positional/],
    [['--n', '12k'], /not an integer/],
    [['--n', '0'], /out of range/],
    [['--backlog', '100'], /out of range/],
    [['--stores', 'mysql'], /--stores: unknown 'mysql'/],
    [['--store', 'mysql'], /--store: unknown 'mysql'/],
    [['--store', 'redis', '--stores', 'sqlite'], /give one of them/],
    [['--redis-backlog', '100'], /out of range/],
    [['--anchors', 'pgboss'], /unknown 'pgboss'/],
    [['--phases', 'drain_bulk'], /drain_bulk drains what enqueue_bulk left/],
    [
      ['--phases', 'enqueue_single,enqueue_bulk,drain_bulk'],
      /drain_bulk would also drain the backlog .* add drain_single/,
    ],
    [['--phases', ''], /empty list/],
    [['--server', 'built'], /--server: unknown 'built' \(one of packed, source\)/],
  ] as const) {
    it(`rejects ${argv.join(' ')}`, () => {
      assert.throws(
        () => parseOptions([...argv]),
        (e: unknown) => e instanceof UsageError && message.test(e.message),
      );
    });
  }
});

describe('bench ratios', () => {
  it('ours / anchor of the same figure; drains use the all-completed rate', () => {
    const ours = {
      results: {
        drain_bulk: { jobs_per_s: 1200, jobs_per_s_to_all_completed: 1000 },
        latency_idle: { enqueue_to_start: { p50_ms: 2, p99_ms: 8 } },
      },
    };
    const anchor = {
      results: {
        drain_bulk: { jobs_per_s: 5000, jobs_per_s_to_all_completed: 4000 },
        latency_idle: { enqueue_to_start: { p50_ms: 1, p99_ms: 4 } },
      },
    };
    const rows = anchorPhaseRows('sqlite', 'http', ours, anchor, ['drain_bulk', 'latency_idle']);
    assert.deepEqual(
      rows.map((r) => [r.phase, r.ours, r.anchor, r.anchor_value, r.ratio]),
      [
        ['drain_bulk', 1000, 'bullmq', 4000, 0.25],
        ['latency_idle p50', 2, 'bullmq', 1, 2],
        ['latency_idle p99', 8, 'bullmq', 4, 2],
      ],
    );
  });

  it('a failed phase has no ratio and carries its error', () => {
    const rows = anchorPhaseRows(
      'postgres',
      'http',
      { results: { drain_single: { error: 'PHASE_TIMEOUT' } } },
      { results: { drain_single: { jobs_per_s: 3000 } } },
      ['drain_single'],
    );
    assert.equal(rows[0]!.ours, null);
    assert.equal(rows[0]!.ratio, null);
    assert.equal(rows[0]!.anchor, 'graphile');
    assert.equal(rows[0]!.error, 'PHASE_TIMEOUT');
  });

  it('Redis backlog: memory per queued job scaled to 1,000,000, BullMQ as the anchor', () => {
    const mem = { rss_mib: 100, peak_rss_mib: 100 };
    const claim = { depth: 1000, jobs: 10, jobs_per_s: 1, round_p50_ms: 1, round_p99_ms: 1 };
    const reading = (used: number, jobs: number) => ({
      used_memory: used,
      keys: { keys: 1, bytes: jobs, groups: { 'job hashes': { keys: 1, bytes: jobs } } },
    });
    const b: BacklogResult = {
      backlog: 11_000,
      sample: 10,
      memory_at_start: mem,
      small: claim,
      memory_at_small: mem,
      fill: { jobs: 10_000, batch: 1000, jobs_per_s: 1 },
      queued_after_fill: 11_000,
      memory_at_backlog: mem,
      memory_at_backlog_quiet: mem,
      large: { ...claim, depth: 11_000 },
      memory_after_large: mem,
      redis_memory: {
        at_start: reading(0, 0),
        at_small: reading(1_000_000, 1_000_000),
        at_backlog: reading(21_000_000, 21_000_000),
        at_backlog_quiet: reading(21_000_000, 21_000_000),
        after_large: reading(21_000_000, 21_000_000),
      },
    };
    const bull = {
      queue: 'q',
      backlog: 10_000,
      batch: 1000,
      fill_jobs_per_s: 1,
      queued_after_fill: 10_000,
      memory_before: reading(5_000_000, 0),
      memory_at_backlog: reading(4_000_000, 4_000_000),
      used_memory_after_removal: null,
    };
    const rows = backlogRows('redis', b, undefined, bull);
    const keys = rows.find((r) => r.phase.startsWith('Redis memory per 1,000,000'))!;
    // 2,000 vs 400 bytes per job; 1,000,000 jobs of 2,000 B = 1,907.3 MiB.
    assert.equal(keys.ours, 1907.3);
    assert.equal(keys.anchor_value, 381.5);
    assert.equal(keys.ratio, 5);
    const used = rows.find((r) => r.phase.startsWith('Redis used_memory'))!;
    // BullMQ's used_memory went down (other clients): no ratio.
    assert.equal(used.ours, 1907.3);
    assert.equal(used.ratio, null);
    assert.match(used.detail, /other clients/);
  });
});
