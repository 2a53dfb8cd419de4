/** Small building blocks shared by the views. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError } from './api.ts';
import { useCanAct } from './hooks.ts';
import { navigate } from './router.ts';

import { type Counts, JOB_STATES } from './states.ts';

export { type Counts, JOB_STATES };

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state}`}>{state}</span>;
}

const number = new Intl.NumberFormat();
export const fmt = (n: number | null | undefined) => (n == null ? '–' : number.format(n));

/** "3 min ago" with the exact time on hover and for screen readers' title. */
export function Time({ at, zone }: { at: string | null | undefined; zone?: string }) {
  if (!at) return <span class="muted">–</span>;
  const date = new Date(at);
  return (
    <time dateTime={at} title={date.toISOString()}>
      {zone ? inZone(date, zone) : relative(date)}
    </time>
  );
}

export function inZone(date: Date, zone: string): string {
  return new Intl.DateTimeFormat(undefined, {
    timeZone: zone,
    dateStyle: 'medium',
    timeStyle: 'medium',
  }).format(date);
}

export function relative(date: Date, now = Date.now()): string {
  const seconds = Math.round((date.getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  if (abs < 60) return rtf.format(seconds, 'second');
  if (abs < 3600) return rtf.format(Math.round(seconds / 60), 'minute');
  if (abs < 86_400) return rtf.format(Math.round(seconds / 3600), 'hour');
  return rtf.format(Math.round(seconds / 86_400), 'day');
}

export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" title={label}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

export function ErrorBox({ error }: { error: Error | undefined }) {
  if (error === undefined) return null;
  const detail = error instanceof ApiError ? `${error.code}: ` : '';
  return (
    <p class="error" role="alert">
      {detail}
      {error.message}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-busy="true">
      Loading {what}…
    </p>
  );
}

/** A view's heading and its toolbar. */
export function Header({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="view-header">
      <h1>{title}</h1>
      {children ? <div class="toolbar">{children}</div> : null}
    </div>
  );
}

/**
 * A button that runs an API action: disabled while it runs, the outcome
 * announced, hidden for a read-only key (the server refuses it anyway).
 */
export function Action(props: {
  label: string;
  run: () => Promise<unknown>;
  confirm?: string;
  danger?: boolean;
  done?: (result: unknown) => void;
  ariaLabel?: string;
  disabled?: boolean;
}) {
  const canAct = useCanAct();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  if (!canAct) return null;
  const onClick = async () => {
    if (props.confirm && !confirm(props.confirm)) return;
    setBusy(true);
    setError(undefined);
    try {
      const result = await props.run();
      props.done?.(result);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button
        type="button"
        class={props.danger ? 'danger' : undefined}
        disabled={busy || props.disabled}
        aria-label={props.ariaLabel}
        onClick={onClick}
      >
        {props.label}
      </button>
      {error ? (
        <span class="error inline" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  );
}

export interface Bar {
  label: string;
  title: string;
  values: number[];
}

/**
 * A bar chart in SVG (stacked when a bar has several values). The same
 * figures are in a visually hidden table for screen readers.
 */
export function BarChart(props: {
  title: string;
  bars: Bar[];
  series: { name: string; className: string }[];
  unit?: string;
  max?: number;
}) {
  const { bars, series } = props;
  const height = 120;
  const width = 600;
  const top = Math.max(props.max ?? 0, ...bars.map((b) => b.values.reduce((a, v) => a + v, 0)), 1);
  const slot = width / Math.max(bars.length, 1);
  const gap = Math.min(4, slot * 0.2);
  return (
    <figure class="chart">
      <figcaption>
        {props.title}
        <span class="legend">
          {series.map((s) => (
            <span key={s.name}>
              <i class={`swatch ${s.className}`} aria-hidden="true" />
              {s.name}
            </span>
          ))}
        </span>
      </figcaption>
      <span class="tick top">
        {fmt(top)}
        {props.unit ?? ''}
      </span>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`${props.title}; the figures follow in a table`}
      >
        <line x1="0" y1={height} x2={width} y2={height} class="axis" />

        {bars.map((bar, i) => {
          let y = height;
          return (
            <g key={bar.label}>
              <title>{bar.title}</title>
              {bar.values.map((value, s) => {
                const h = (value / top) * (height - 14);
                y -= h;
                return (
                  <rect
                    key={series[s]!.name}
                    x={i * slot + gap / 2}
                    y={y}
                    width={slot - gap}
                    height={h}
                    class={series[s]!.className}
                  />
                );
              })}
            </g>
          );
        })}
      </svg>
      {bars.length > 0 ? (
        <span class="ticks" aria-hidden="true">
          <span>{bars[0]!.label}</span>
          <span>{bars[bars.length - 1]!.label}</span>
        </span>
      ) : null}
      <div class="sr-only">
        <table>
          <caption>{props.title}</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              {series.map((s) => (
                <th key={s.name} scope="col">
                  {s.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {bars.map((bar) => (
              <tr key={bar.label}>
                <th scope="row">{bar.title}</th>
                {bar.values.map((v, s) => (
                  <td key={series[s]!.name}>{v}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}

/** Counts per state as one stacked horizontal bar, with the numbers beside it. */
export function DepthBar({ counts, label }: { counts: Counts; label: string }) {
  const total = JOB_STATES.reduce((a, s) => a + counts[s], 0);
  return (
    <div class="depth" role="img" aria-label={`${label}: ${depthText(counts)}`}>
      {JOB_STATES.map((s) =>
        counts[s] > 0 ? (
          <span
            key={s}
            class={`seg state-${s}`}
            style={{
              flexGrow: counts[s],
              flexBasis: `${Math.max(2, (counts[s] / Math.max(total, 1)) * 100)}%`,
            }}
            title={`${s}: ${fmt(counts[s])}`}
          />
        ) : null,
      )}
      {total === 0 ? <span class="muted small">empty</span> : null}
    </div>
  );
}

export const depthText = (counts: Counts) =>
  JOB_STATES.filter((s) => counts[s] > 0)
    .map((s) => `${s} ${fmt(counts[s])}`)
    .join(', ') || 'no jobs';

/**
 * Previous / next over keyset cursors: a stack of the cursors that led here.
 * `labels`: the two buttons' words, for a listing that is oldest first.
 */
export function Pager(props: {
  cursors: string[];
  next: string | undefined;
  go: (cursors: string[]) => void;
  shown: number;
  total: { value: number | undefined; onDemand: boolean; count(): void };
  labels?: [previous: string, next: string];
}) {
  const { cursors, next, go } = props;
  const [previousLabel, nextLabel] = props.labels ?? ['← Newer', 'Older →'];
  return (
    <nav class="pager" aria-label="Pages">
      <button
        type="button"
        disabled={cursors.length === 0}
        onClick={() => go(cursors.slice(0, -1))}
      >
        {previousLabel}
      </button>
      <span class="muted">
        page {cursors.length + 1}
        {props.total.value !== undefined
          ? ` · ${fmt(props.total.value)} matching`
          : props.total.onDemand
            ? null
            : ' · counting…'}
      </span>
      {props.total.onDemand ? (
        <button
          type="button"
          onClick={props.total.count}
          title="Reads every job: slow on a large store"
        >
          Count matches
        </button>
      ) : null}
      <button type="button" disabled={next === undefined} onClick={() => go([...cursors, next!])}>
        {nextLabel}
      </button>
    </nav>
  );
}

/** "Find by id": goes to `#/<section>/<id>`. */
export function SearchById(props: { section: string; label: string }) {
  const [id, setId] = useState('');
  const inputId = `${props.section}-id-search`;
  return (
    <form
      class="search"
      aria-label={props.label}
      onSubmit={(e) => {
        e.preventDefault();
        if (id.trim() !== '') navigate(`${props.section}/${encodeURIComponent(id.trim())}`);
      }}
    >
      <label for={inputId} class="sr-only">
        {props.label}
      </label>
      <input
        id={inputId}
        placeholder={props.label}
        value={id}
        onInput={(e) => setId((e.target as HTMLInputElement).value)}
      />
      <button type="submit">Find</button>
    </form>
  );
}

/** The outcome of the last action, announced politely. */
export function Notice({ text }: { text: string | undefined }) {
  if (!text) return null;
  return (
    <p class="notice" role="status">
      {text}
    </p>
  );
}

/** A table head: column names, `[name, 'num']` for right-aligned figures. */
export function Head({ cols }: { cols: (string | [string, 'num'])[] }) {
  return (
    <thead>
      <tr>
        {cols.map((col) => {
          const [name, num] = typeof col === 'string' ? [col, undefined] : col;
          return (
            <th key={name} scope="col" class={num}>
              {name}
            </th>
          );
        })}
      </tr>
    </thead>
  );
}

/** One fact of a <dl class="facts">, left out when there is no value. */
export function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  if (children === undefined || children === null || children === false) return null;
  return (
    <>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </>
  );
}

/** Which colour is which state (the depth bars use colour alone). */
export function StateLegend() {
  return (
    <p class="state-legend" aria-hidden="true">
      {JOB_STATES.map((s) => (
        <span key={s} class={`state-${s}`}>
          <i />
          {s}
        </span>
      ))}
    </p>
  );
}
