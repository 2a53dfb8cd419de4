/**
 * The conformance badge (seed §7): "OJS Conformant Level {N} ({Tier})" as an SVG, a shields.io
 * endpoint JSON and a Markdown snippet.
 *
 * Eligibility follows §7.3: the complete suite of the level must pass, so the badge level is
 * the highest N for which levels 0..N were all tested and all passed (a level missing from the
 * run does not count as passed, unlike the report's `conformant_level`, which mirrors the
 * reference runner). With a manifest the badge needs it valid and shows the declared level,
 * provided that level is verified; the tier is the declared one, but never above "Runtime",
 * because this harness exercises only the HTTP binding (Full needs gRPC as well, §3.3).
 */

import type { ManifestCheck } from './manifest.ts';
import { EXT_LEVEL, type TestResult } from './types.ts';

export interface BadgeInfo {
  eligible: boolean;
  level: number | null;
  tier: 'Parser' | 'Runtime' | null;
  /** "OJS Conformant Level 2 (Runtime)" or "OJS not conformant". */
  text: string;
  label: string;
  message: string;
  color: string;
  /** Why the badge is not (or only partly) granted. */
  reason?: string;
  test_suite_version: string;
}

export const BADGE_LINK = 'https://openjobspec.org/conformance';

/** Highest N such that every level 0..N has tests in the run and all of them passed. */
export function verifiedLevel(results: TestResult[]): number {
  let reached = -1;
  for (let level = 0; level <= 4; level++) {
    const atLevel = results.filter((r) => r.level === level && r.deprecated !== true);
    if (atLevel.length === 0 || atLevel.some((r) => r.status !== 'pass')) break;
    reached = level;
  }
  return reached;
}

export function badgeFor(
  results: TestResult[],
  manifest: ManifestCheck | undefined,
  testSuiteVersion: string,
): BadgeInfo {
  const core = results.filter((r) => r.level !== EXT_LEVEL);
  const verified = verifiedLevel(core);
  const none = (reason: string): BadgeInfo => ({
    eligible: false,
    level: null,
    tier: null,
    text: 'OJS not conformant',
    label: 'OJS',
    message: 'not conformant',
    color: 'red',
    reason,
    test_suite_version: testSuiteVersion,
  });
  if (verified < 0) return none('level 0 did not pass completely');
  let level = verified;
  let tier: 'Parser' | 'Runtime' = 'Runtime';
  let reason: string | undefined;
  if (manifest !== undefined) {
    if (!manifest.valid || manifest.declared_level === undefined) {
      return none('the conformance manifest is missing or invalid (seed §7.3 requires one)');
    }
    if (manifest.declared_level > verified) {
      return none(
        `the manifest declares level ${manifest.declared_level} but only levels 0-${verified} passed completely`,
      );
    }
    if (manifest.declared_level < verified) {
      reason = `levels up to ${verified} pass, the badge shows the declared level ${manifest.declared_level}`;
    }
    level = manifest.declared_level;
    if (manifest.declared_tier === 'parser') tier = 'Parser';
    if (manifest.declared_tier === 'full') {
      reason = 'the manifest declares the Full tier; this harness verifies the Runtime tier only';
    }
  }
  const message = `Level ${level} (${tier})`;
  const info: BadgeInfo = {
    eligible: true,
    level,
    tier,
    text: `OJS Conformant ${message}`,
    label: 'OJS Conformant',
    message,
    color: 'blue',
    test_suite_version: testSuiteVersion,
  };
  if (reason !== undefined) info.reason = reason;
  return info;
}

function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** Approximate Verdana 11px advance widths, enough to size a flat badge. */
function textWidth(text: string): number {
  let width = 0;
  for (const ch of text) {
    if ("ilj.,:;|!'()[] ".includes(ch)) width += 3.6;
    else if ('mwMW'.includes(ch)) width += 10;
    else if (ch >= 'A' && ch <= 'Z') width += 7.6;
    else width += 6.6;
  }
  return Math.ceil(width);
}

const COLORS: Record<string, string> = { blue: '#007ec6', red: '#e05d44', green: '#4c1' };

/** A flat, shields-style two-part badge. */
export function renderSvg(info: BadgeInfo): string {
  const left = info.label;
  const right = info.message;
  const lw = textWidth(left) + 12;
  const rw = textWidth(right) + 12;
  const total = lw + rw;
  const color = COLORS[info.color] ?? info.color;
  const title = escapeXml(`${info.text} - OJS conformance test suite ${info.test_suite_version}`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${total}" height="20" role="img" aria-label="${escapeXml(info.text)}">
  <title>${title}</title>
  <linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>
  <clipPath id="r"><rect width="${total}" height="20" rx="3" fill="#fff"/></clipPath>
  <g clip-path="url(#r)">
    <rect width="${lw}" height="20" fill="#555"/>
    <rect x="${lw}" width="${rw}" height="20" fill="${color}"/>
    <rect width="${total}" height="20" fill="url(#s)"/>
  </g>
  <g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">
    <text x="${lw / 2}" y="15" fill="#010101" fill-opacity=".3">${escapeXml(left)}</text>
    <text x="${lw / 2}" y="14">${escapeXml(left)}</text>
    <text x="${lw + rw / 2}" y="15" fill="#010101" fill-opacity=".3">${escapeXml(right)}</text>
    <text x="${lw + rw / 2}" y="14">${escapeXml(right)}</text>
  </g>
</svg>
`;
}

/** shields.io endpoint JSON (https://shields.io/badges/endpoint-badge). */
export function shieldsJson(info: BadgeInfo): Record<string, unknown> {
  return {
    schemaVersion: 1,
    label: 'OJS',
    message: info.eligible ? `Level ${info.level} ${info.tier}` : 'not conformant',
    color: info.color,
  };
}

/** The static shields.io URL of §7.2, e.g. .../badge/OJS-Level%202%20Runtime-blue. */
export function shieldsUrl(info: BadgeInfo): string {
  const part = (s: string) => encodeURIComponent(s.replace(/-/g, '--').replace(/_/g, '__'));
  const message = info.eligible ? `Level ${info.level} ${info.tier}` : 'not conformant';
  return `https://img.shields.io/badge/${part('OJS')}-${part(message)}-${info.color}`;
}

/** The Markdown snippet of §7.2, plus a comment naming the suite version (§7.3.3). */
export function markdownSnippet(
  info: BadgeInfo,
  meta: { runAt?: string; target?: string } = {},
): string {
  const comment = [`OJS conformance test suite ${info.test_suite_version}`];
  if (meta.runAt) comment.push(`run ${meta.runAt}`);
  if (meta.target) comment.push(`against ${meta.target}`);
  return `[![${info.text}](${shieldsUrl(info)})](${BADGE_LINK})\n<!-- ${comment.join(', ')} -->\n`;
}

/** File names written for `--badge FILE`: FILE (SVG) plus `.json` and `.md` siblings. */
export function badgeFiles(file: string): { svg: string; json: string; markdown: string } {
  const base = file.replace(/\.svg$/i, '');
  return { svg: file, json: `${base}.json`, markdown: `${base}.md` };
}
