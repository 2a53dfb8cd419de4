/**
 * The comparison table: one row per figure, ours next to the anchor's
 * figure of the same phase measured in the same run, and their ratio
 * (ours / anchor, of the figure shown: for jobs/s higher is better, for
 * latency lower is better). SQLite rows compare with BullMQ (Redis),
 * PostgreSQL rows with graphile-worker with batching.
 */
import { type BacklogResult, QUIET_MS } from './backlog.ts';
import type { Anchor, Mode, StoreName } from './options.ts';

type Obj = Record<string, unknown>;

export interface Row {
  store: StoreName;
  mode: Mode | 'backlog';
  phase: string;
  unit: 'jobs/s' | 'ms' | 'MiB';
  ours: number | null;
  anchor: Anchor | null;
  anchor_value: number | null;
  /** ours / anchor_value. */
  ratio: number | null;
  detail: string;
  error?: string;
}

export const ANCHOR_OF: Record<StoreName, Anchor> = {
  sqlite: 'bullmq',
  'sqlite-normal': 'bullmq',
  postgres: 'graphile',
};

export const STORE_TITLE: Record<StoreName, string> = {
  sqlite: 'SQLite (synchronous=FULL)',
  'sqlite-normal': 'SQLite (synchronous=NORMAL)',
  postgres: 'PostgreSQL',
};

export const ANCHOR_TITLE: Record<Anchor, string> = {
  bullmq: 'BullMQ (Redis)',
  graphile: 'graphile-worker (batching)',
};

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

interface Figure {
  label: string;
  unit: Row['unit'];
  value: (phase: Obj) => number | null;
  detail?: (phase: Obj) => string;
}

const ms = (v: unknown) => (num(v) === null ? '?' : `${formatNumber(v as number)} ms`);
const latency = (key: string) => (phase: Obj) => {
  const l = phase[key] as Obj | undefined;
  return l ? `p50 ${ms(l.p50_ms)}, p99 ${ms(l.p99_ms)}` : '';
};

/** What the table shows of each anchor phase (fields of common.js's output). */
export const FIGURES: Record<string, Figure[]> = {
  enqueue_seq: [
    {
      label: 'enqueue_seq',
      unit: 'jobs/s',
      value: (p) => num(p.jobs_per_s),
      detail: (p) => `call ${latency('call')(p)}`,
    },
  ],
  enqueue_single: [{ label: 'enqueue_single', unit: 'jobs/s', value: (p) => num(p.jobs_per_s) }],
  drain_single: [
    {
      label: 'drain_single',
      unit: 'jobs/s',
      value: (p) => num(p.jobs_per_s_to_all_completed) ?? num(p.jobs_per_s),
    },
  ],
  enqueue_bulk: [{ label: 'enqueue_bulk', unit: 'jobs/s', value: (p) => num(p.jobs_per_s) }],
  drain_bulk: [
    {
      label: 'drain_bulk',
      unit: 'jobs/s',
      value: (p) => num(p.jobs_per_s_to_all_completed) ?? num(p.jobs_per_s),
    },
  ],
  latency_idle: [
    {
      label: 'latency_idle p50',
      unit: 'ms',
      value: (p) => num((p.enqueue_to_start as Obj)?.p50_ms),
    },
    {
      label: 'latency_idle p99',
      unit: 'ms',
      value: (p) => num((p.enqueue_to_start as Obj)?.p99_ms),
    },
  ],
  steady_e2e: [
    {
      label: 'steady_e2e',
      unit: 'jobs/s',
      value: (p) => num(p.e2e_jobs_per_s_to_all_completed) ?? num(p.e2e_jobs_per_s),
      detail: (p) =>
        `produce ${formatNumber(num(p.produce_jobs_per_s))}/s; loaded ${latency('enqueue_to_start')(p)}`,
    },
  ],
};

export function formatNumber(v: number | null): string {
  if (v === null) return '-';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function phaseOf(result: Obj | undefined, phase: string): Obj | undefined {
  return (result?.results as Obj | undefined)?.[phase] as Obj | undefined;
}

/** Rows of one run of our adapter (one store, one mode). */
export function anchorPhaseRows(
  store: StoreName,
  mode: Mode,
  ours: Obj | undefined,
  anchorResult: Obj | undefined,
  phases: readonly string[],
  runError?: string,
): Row[] {
  const anchor = ANCHOR_OF[store];
  const rows: Row[] = [];
  for (const phase of phases) {
    for (const figure of FIGURES[phase] ?? []) {
      const mine = phaseOf(ours, phase);
      const theirs = phaseOf(anchorResult, phase);
      const value = mine && !mine.error ? figure.value(mine) : null;
      const anchorValue = theirs && !theirs.error ? figure.value(theirs) : null;
      const error =
        runError ?? (mine?.error as string | undefined) ?? (mine ? undefined : 'no result');
      rows.push({
        store,
        mode,
        phase: figure.label,
        unit: figure.unit,
        ours: value,
        anchor: anchorResult ? anchor : null,
        anchor_value: anchorValue,
        ratio: value !== null && anchorValue ? value / anchorValue : null,
        detail: mine && !mine.error && figure.detail ? figure.detail(mine) : '',
        ...(value === null && error !== undefined ? { error } : {}),
      });
    }
  }
  return rows;
}

export function backlogRows(store: StoreName, b: BacklogResult | undefined, error?: string): Row[] {
  const base = { store, mode: 'backlog' as const, anchor: null, anchor_value: null, ratio: null };
  if (b === undefined) {
    return [
      {
        ...base,
        phase: 'backlog',
        unit: 'jobs/s',
        ours: null,
        detail: '',
        error: error ?? 'no result',
      },
    ];
  }
  const depth = (n: number) => n.toLocaleString('en-US');
  const claim = (r: BacklogResult['small']) =>
    `round (fetch 50 + ack/batch) p50 ${ms(r.round_p50_ms)}, p99 ${ms(r.round_p99_ms)}; ${depth(r.jobs)} jobs`;
  const rel = b.small.jobs_per_s > 0 ? b.large.jobs_per_s / b.small.jobs_per_s : null;
  return [
    {
      ...base,
      phase: `claim+ack @${depth(b.small.depth)} queued`,
      unit: 'jobs/s',
      ours: b.small.jobs > 0 ? b.small.jobs_per_s : null,
      detail: claim(b.small),
      ...(b.small.error ? { error: b.small.error } : {}),
    },
    {
      ...base,
      phase: `claim+ack @${depth(b.large.depth)} queued`,
      unit: 'jobs/s',
      ours: b.large.jobs > 0 ? b.large.jobs_per_s : null,
      detail: `${claim(b.large)}; ${rel === null ? '-' : `${rel.toFixed(2)}x`} of the rate @${depth(b.small.depth)}`,
      ...(b.large.error ? { error: b.large.error } : {}),
    },
    {
      ...base,
      phase: 'fill (batch 10,000)',
      unit: 'jobs/s',
      ours: b.fill.jobs_per_s,
      detail: `${depth(b.fill.jobs)} jobs; queue stats: ${b.queued_after_fill === null ? '?' : depth(b.queued_after_fill)} available`,
      ...(b.fill.error ? { error: b.fill.error } : {}),
    },
    {
      ...base,
      phase: `server RSS @${depth(b.small.depth)} queued`,
      unit: 'MiB',
      ours: b.memory_at_small.rss_mib,
      detail: `at start ${formatNumber(b.memory_at_start.rss_mib)} MiB`,
    },
    {
      ...base,
      phase: `server RSS @${depth(b.large.depth)} queued`,
      unit: 'MiB',
      ours: b.memory_at_backlog.rss_mib,
      detail: `peak so far ${formatNumber(b.memory_at_backlog.peak_rss_mib)} MiB; after claim+ack ${formatNumber(b.memory_after_large.rss_mib)} MiB`,
    },
    {
      ...base,
      phase: `server RSS @${depth(b.large.depth)} queued, ${QUIET_MS / 1000} s idle`,
      unit: 'MiB',
      ours: b.memory_at_backlog_quiet.rss_mib,
      detail: 'read again after the fill with no request in between',
    },
  ];
}

function pad(s: string, width: number, right = false): string {
  return right ? s.padStart(width) : s.padEnd(width);
}

export function renderTable(rows: Row[]): string {
  const lines: string[] = [];
  const stores = [...new Set(rows.map((r) => r.store))];
  for (const store of stores) {
    const mine = rows.filter((r) => r.store === store);
    const anchor = ANCHOR_OF[store];
    const cells = mine.map((r) => [
      r.mode,
      r.phase,
      r.unit,
      r.ours === null ? (r.error ? 'error' : '-') : formatNumber(r.ours),
      r.mode === 'backlog' ? '' : formatNumber(r.anchor_value),
      r.ratio === null ? '' : `${r.ratio.toFixed(2)}x`,
      r.error ? `error: ${r.error}${r.detail ? `; ${r.detail}` : ''}` : r.detail,
    ]);
    const header = ['mode', 'phase', 'unit', 'ours', ANCHOR_TITLE[anchor], 'ours/anchor', 'detail'];
    const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
    const right = [false, false, false, true, true, true, false];
    const format = (c: string[]) =>
      c
        .map((v, i) => pad(v, i === c.length - 1 ? 0 : widths[i]!, right[i]))
        .join('  ')
        .trimEnd();
    lines.push(
      '',
      `${STORE_TITLE[store]}  (ratio: ours / ${ANCHOR_TITLE[anchor]}; jobs/s: higher is better, ms: lower is better)`,
    );
    lines.push(format(header));
    lines.push(format(widths.map((w) => '-'.repeat(w))));
    let lastMode = '';
    for (const [i, c] of cells.entries()) {
      const mode = mine[i]!.mode;
      lines.push(format([mode === lastMode ? '' : c[0]!, ...c.slice(1)]));
      lastMode = mode;
    }
  }
  return lines.join('\n');
}
