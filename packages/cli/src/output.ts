/**
 * Output of the operator commands: aligned tables for people, JSON
 * (`--json`) for scripts, and a progress bar on stderr for long bulk
 * actions (only on a terminal, so pipes and logs stay clean).
 */
import { QUEUE_COUNT_STATES } from '@ojs/sdk';
import type { Output } from './io.ts';

export type Row = Record<string, unknown>;
export type Columns = [key: string, header: string][];

/** The columns of a job-count table (`queues list`, `queues stats`, `stats`): one per state. */
export const countColumns = (): Columns => QUEUE_COUNT_STATES.map((s) => [s, s.toUpperCase()]);

/** A cell as text: dates shortened, objects as compact JSON, absent as '-'. */
export function cell(value: unknown): string {
  if (value === undefined || value === null || value === '') return '-';
  if (typeof value === 'string') {
    // RFC 3339 timestamps: second precision is enough in a table.
    return /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(value)
      ? value.replace(/\.\d+/, '').replace('T', ' ')
      : value;
  }
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Rows as an aligned table; the last column is cut to the terminal's width. */
export function table(rows: Row[], columns: Columns, width?: number): string {
  const cells = rows.map((row) => columns.map(([key]) => cell(row[key]).replaceAll('\n', ' ')));
  const widths = columns.map(([, header], i) =>
    Math.max(header.length, ...cells.map((r) => r[i]!.length)),
  );
  const line = (values: string[]) => {
    const text = values
      .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ');
    return width !== undefined && text.length > width ? `${text.slice(0, width - 1)}…` : text;
  };
  return `${[line(columns.map(([, h]) => h)), ...cells.map(line)].join('\n')}\n`;
}

/** `key: value` lines of one record (a job, a queue). */
export function details(record: Row, keys?: string[]): string {
  const entries = (keys ?? Object.keys(record))
    .filter((key) => record[key] !== undefined)
    .map((key) => [key, cell(record[key])] as const);
  const pad = Math.max(0, ...entries.map(([key]) => key.length));
  return `${entries.map(([key, value]) => `${`${key}:`.padEnd(pad + 1)} ${value}`).join('\n')}\n`;
}

export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** A progress bar redrawn in place on a terminal; silent elsewhere. */
export class Progress {
  readonly #out: Output;
  readonly #label: string;
  readonly #total: number;
  #drawn = false;

  constructor(out: Output, label: string, total: number) {
    this.#out = out;
    this.#label = label;
    this.#total = total;
  }

  update(done: number): void {
    if (!this.#out.isTTY || this.#total <= 0) return;
    const ratio = Math.min(1, done / this.#total);
    const width = 30;
    const filled = Math.round(ratio * width);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
    this.#out.write(`\r${this.#label} ${bar} ${done}/${this.#total} (${Math.round(ratio * 100)}%)`);
    this.#drawn = true;
  }

  end(): void {
    if (this.#drawn) this.#out.write('\n');
  }
}
