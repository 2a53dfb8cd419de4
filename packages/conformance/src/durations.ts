/**
 * Durations and timing expectations of the seed test format (seed §5.5, §5.6):
 *  - `wait` is an ISO 8601 duration (`PT5S`, `PT0.5S`);
 *  - time templates use short units (`{now+5s}`, `{now-1h}`, `{now+500ms}`);
 *  - behavioural timings are approximate (`~2s`, ±50 % unless a tolerance is given:
 *    `~2s±20%`, `~2s±300ms`) or bounds (`>=1s`, `<=3s`, `<500ms`, `>0.5s`).
 */
import { parseIsoDuration } from '@ojs/core';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SHORT_DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/** `5s`, `0.5s`, `500ms`, `2m`, `1h`, `1d` or an ISO 8601 duration; null when malformed. */
export function parseDurationMs(text: string): number | null {
  const trimmed = text.trim();
  if (trimmed.startsWith('P')) return parseIsoDuration(trimmed);
  const match = SHORT_DURATION.exec(trimmed);
  if (match === null) return null;
  return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
}

/** Human rendering used in explanations: 1500 -> "1.5s", 250 -> "250ms". */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (Math.abs(ms) < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  return `${Number(seconds.toFixed(seconds < 10 ? 2 : 1))}s`;
}

/** Default tolerance of `~` timings (seed §5.6). */
export const DEFAULT_TOLERANCE = 0.5;

export interface Timing {
  /** The text as written in the test file. */
  text: string;
  /** Inclusive bounds in milliseconds. */
  min: number;
  max: number;
  /** The nominal value of a `~` timing. */
  target?: number;
}

/**
 * Parses a timing expectation. Throws an Error with a readable message when the text is not a
 * timing: exact timings are impossible in distributed systems, so a plain duration is refused
 * rather than silently given some tolerance.
 */
export function parseTiming(text: string): Timing {
  const raw = text.trim();
  if (raw.startsWith('~')) {
    const body = raw.slice(1);
    const plus = body.indexOf('±');
    const valueText = plus === -1 ? body : body.slice(0, plus);
    const target = parseDurationMs(valueText);
    if (target === null) throw new Error(`invalid duration "${valueText}" in timing "${text}"`);
    let slack = target * DEFAULT_TOLERANCE;
    if (plus !== -1) {
      const tol = body.slice(plus + 1).trim();
      if (tol.endsWith('%')) {
        const pct = Number(tol.slice(0, -1));
        if (!Number.isFinite(pct) || pct < 0) throw new Error(`invalid tolerance in "${text}"`);
        slack = (target * pct) / 100;
      } else {
        const ms = parseDurationMs(tol);
        if (ms === null) throw new Error(`invalid tolerance in "${text}"`);
        slack = ms;
      }
    }
    return { text: raw, min: Math.max(0, target - slack), max: target + slack, target };
  }
  const bound = /^(>=|<=|>|<)\s*(.+)$/.exec(raw);
  if (bound) {
    const ms = parseDurationMs(bound[2]!);
    if (ms === null) throw new Error(`invalid duration "${bound[2]}" in timing "${text}"`);
    switch (bound[1]) {
      case '>=':
        return { text: raw, min: ms, max: Number.POSITIVE_INFINITY };
      case '>':
        return { text: raw, min: ms + 1, max: Number.POSITIVE_INFINITY };
      case '<=':
        return { text: raw, min: 0, max: ms };
      default:
        return { text: raw, min: 0, max: Math.max(0, ms - 1) };
    }
  }
  throw new Error(
    `timing "${text}" must be approximate ("~2s", "~2s±20%") or a bound (">=1s", "<=3s")`,
  );
}

export function timingMatches(timing: Timing, actualMs: number): boolean {
  return actualMs >= timing.min && actualMs <= timing.max;
}

/** "~2s (1s..3s)" - the expectation with its accepted range. */
export function describeTiming(timing: Timing): string {
  const max = Number.isFinite(timing.max) ? formatMs(timing.max) : '∞';
  return `${timing.text} (${formatMs(timing.min)}..${max})`;
}
