/** The bench's flag parsing and ratio arithmetic (no benchmark runs here). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PHASES, parseOptions, skipList, UsageError } from '../src/options.ts';
import { anchorPhaseRows } from '../src/report.ts';

describe('bench flags', () => {
  it('defaults: SQLite and PostgreSQL, every mode and phase, both anchors', () => {
    const o = parseOptions([]);
    assert.deepEqual(o.stores, ['sqlite', 'postgres']);
    assert.deepEqual(o.modes, ['http', 'in-process', 'raw', 'grpc']);
    assert.deepEqual(o.phases, [...PHASES]);
    assert.deepEqual(o.anchors, ['bullmq', 'graphile']);
    assert.equal(o.n, 20_000);
    assert.equal(o.backlog, 1_000_000);
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
    [['--stores', 'redis'], /unknown 'redis'/],
    [['--anchors', 'pgboss'], /unknown 'pgboss'/],
    [['--phases', 'drain_bulk'], /drain_bulk drains what enqueue_bulk left/],
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
});
