/**
 * Conformance manifest check (seed §4): fetch `GET /ojs/manifest`, check every field of the
 * §4.2 table (presence, type, format), and compare the declared `conformance_level` with the
 * level the run measured.
 *
 * Rule names are stable identifiers for scripts: `http_status`, `content_type`, `json`,
 * `required`, `type`, `format.specversion`, `format.semver`, `format.uri`, `format.datetime`,
 * `range`, `enum`, `min_items`, `contains`, `required_if`.
 */
import { OJS_MEDIA_TYPE, parseTimestamp } from '@ojs/core';
import { headerValue } from './assertions.ts';
import { preview } from './gofmt.ts';
import type { HttpClient } from './http.ts';
import { EXT_LEVEL, isJsonObject, type JsonObject, type TestResult } from './types.ts';

export interface ManifestProblem {
  path: string;
  rule: string;
  message: string;
}

export type LevelVerdict = 'consistent' | 'overclaimed' | 'unverified' | 'underclaimed';

export interface LevelComparison {
  declared: number;
  measured: number;
  verdict: LevelVerdict;
  /** Levels at or below the declared one with a failed, errored or skipped test. */
  failing_levels: number[];
  /** Levels at or below the declared one that the run did not test at all. */
  missing_levels: number[];
  message: string;
}

export interface ManifestCheck {
  url: string;
  /** An HTTP response was received (whatever its status). */
  fetched: boolean;
  status?: number;
  content_type?: string;
  valid: boolean;
  problems: ManifestProblem[];
  declared_level?: number;
  declared_tier?: string;
  implementation?: string;
  comparison?: LevelComparison;
  manifest?: JsonObject;
}

const SPECVERSION = /^\d+\.\d+$/;
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
const TIERS = ['parser', 'runtime', 'full'];
const STRENGTHS = ['strong', 'best_effort'];

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Checks a decoded manifest against the seed §4.2 table; an empty list means valid. */
export function checkManifestDocument(doc: unknown): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  const add = (path: string, rule: string, message: string) =>
    problems.push({ path, rule, message });
  if (!isJsonObject(doc)) {
    add('$', 'json', `the manifest must be a JSON object, got ${typeName(doc)}`);
    return problems;
  }
  const str = (obj: JsonObject, key: string, path: string, required: boolean) => {
    const value = obj[key];
    if (value === undefined || value === null) {
      if (required) add(path, 'required', `${path} is required`);
      return undefined;
    }
    if (typeof value !== 'string') {
      add(path, 'type', `${path} must be a string, got ${typeName(value)}`);
      return undefined;
    }
    if (required && value === '') add(path, 'required', `${path} must not be empty`);
    return value;
  };

  const spec = str(doc, 'specversion', 'specversion', true);
  if (spec !== undefined && !SPECVERSION.test(spec)) {
    add(
      'specversion',
      'format.specversion',
      `specversion must be major.minor such as "1.0", got ${preview(spec)}`,
    );
  }

  const impl = doc.implementation;
  if (impl === undefined || impl === null)
    add('implementation', 'required', 'implementation is required');
  else if (!isJsonObject(impl))
    add('implementation', 'type', `implementation must be an object, got ${typeName(impl)}`);
  else {
    str(impl, 'name', 'implementation.name', true);
    const version = str(impl, 'version', 'implementation.version', true);
    if (version !== undefined && version !== '' && !SEMVER.test(version)) {
      add(
        'implementation.version',
        'format.semver',
        `implementation.version must be a SemVer version, got ${preview(version)}`,
      );
    }
    str(impl, 'language', 'implementation.language', true);
    const repo = str(impl, 'repository', 'implementation.repository', false);
    if (repo !== undefined && !URL.canParse(repo)) {
      add(
        'implementation.repository',
        'format.uri',
        `implementation.repository must be a URL, got ${preview(repo)}`,
      );
    }
  }

  const level = doc.conformance_level;
  if (level === undefined || level === null)
    add('conformance_level', 'required', 'conformance_level is required');
  else if (typeof level !== 'number' || !Number.isInteger(level)) {
    add('conformance_level', 'type', `conformance_level must be an integer, got ${preview(level)}`);
  } else if (level < 0 || level > 4) {
    add('conformance_level', 'range', `conformance_level must be between 0 and 4, got ${level}`);
  }

  const tier = str(doc, 'conformance_tier', 'conformance_tier', true);
  if (tier !== undefined && tier !== '' && !TIERS.includes(tier)) {
    add(
      'conformance_tier',
      'enum',
      `conformance_tier must be one of ${TIERS.join(', ')}, got ${preview(tier)}`,
    );
  }

  const protocols = doc.protocols;
  if (protocols === undefined || protocols === null)
    add('protocols', 'required', 'protocols is required');
  else if (!Array.isArray(protocols) || !protocols.every((p) => typeof p === 'string')) {
    add('protocols', 'type', `protocols must be an array of strings, got ${preview(protocols)}`);
  } else if (protocols.length === 0) {
    add('protocols', 'min_items', 'protocols must name at least one protocol binding');
  } else if (!protocols.includes('http')) {
    add(
      'protocols',
      'contains',
      'protocols must include "http": the manifest was served over the HTTP binding',
    );
  }

  str(doc, 'backend', 'backend', true);

  const ext = doc.extensions;
  if (ext !== undefined && ext !== null) {
    if (Array.isArray(ext)) {
      ext.forEach((e, i) => {
        if (typeof e !== 'string')
          add(
            `extensions[${i}]`,
            'type',
            `legacy extensions entries must be strings, got ${typeName(e)}`,
          );
      });
    } else if (isJsonObject(ext)) {
      for (const group of ['official', 'experimental']) {
        const list = ext[group];
        if (list === undefined || list === null) continue;
        if (!Array.isArray(list)) {
          add(`extensions.${group}`, 'type', `extensions.${group} must be an array`);
          continue;
        }
        list.forEach((entry, i) => {
          const path = `extensions.${group}[${i}]`;
          if (!isJsonObject(entry)) {
            add(path, 'type', `${path} must be an object with name, uri and version`);
            return;
          }
          str(entry, 'name', `${path}.name`, true);
          str(entry, 'uri', `${path}.uri`, true);
          const v = str(entry, 'version', `${path}.version`, true);
          if (v !== undefined && v !== '' && !SEMVER.test(v)) {
            add(
              `${path}.version`,
              'format.semver',
              `${path}.version must be a SemVer version, got ${preview(v)}`,
            );
          }
        });
      }
    } else {
      add(
        'extensions',
        'type',
        `extensions must be an object or an array of strings, got ${typeName(ext)}`,
      );
    }
  }

  const schemaValidation = doc.schema_validation;
  if (
    schemaValidation !== undefined &&
    schemaValidation !== null &&
    typeof schemaValidation !== 'boolean'
  ) {
    add(
      'schema_validation',
      'type',
      `schema_validation must be a boolean, got ${typeName(schemaValidation)}`,
    );
  }

  const strength = doc.unique_job_strength;
  if (strength === undefined || strength === null) {
    if (typeof level === 'number' && level >= 4) {
      add(
        'unique_job_strength',
        'required_if',
        'unique_job_strength is required when conformance_level >= 4',
      );
    }
  } else if (typeof strength !== 'string' || !STRENGTHS.includes(strength)) {
    add(
      'unique_job_strength',
      'enum',
      `unique_job_strength must be "strong" or "best_effort", got ${preview(strength)}`,
    );
  }

  const suiteVersion = str(doc, 'test_suite_version', 'test_suite_version', false);
  if (suiteVersion !== undefined && !SEMVER.test(suiteVersion)) {
    add(
      'test_suite_version',
      'format.semver',
      `test_suite_version must be a SemVer version, got ${preview(suiteVersion)}`,
    );
  }
  const passedAt = str(doc, 'test_suite_passed_at', 'test_suite_passed_at', false);
  if (passedAt !== undefined && parseTimestamp(passedAt) === null) {
    add(
      'test_suite_passed_at',
      'format.datetime',
      `test_suite_passed_at must be an RFC 3339 timestamp, got ${preview(passedAt)}`,
    );
  }
  return problems;
}

/** A result counts against its level unless it is a deprecated test. */
function counted(result: TestResult): boolean {
  return result.deprecated !== true;
}

/** Compares the declared level with the results of the run (levels 0..declared). */
export function compareLevels(
  declared: number,
  measured: number,
  results: TestResult[],
): LevelComparison {
  const failing: number[] = [];
  const missing: number[] = [];
  for (let level = 0; level <= declared; level++) {
    const atLevel = results.filter((r) => r.level === level && counted(r));
    if (atLevel.length === 0) missing.push(level);
    else if (atLevel.some((r) => r.status !== 'pass')) failing.push(level);
  }
  let verdict: LevelVerdict;
  let message: string;
  if (failing.length > 0) {
    verdict = 'overclaimed';
    message = `declares level ${declared}, but level ${failing.join(', ')} failed`;
  } else if (missing.length > 0) {
    verdict = 'unverified';
    message = `declares level ${declared}; level ${missing.join(', ')} was not tested in this run`;
  } else if (measured > declared) {
    verdict = 'underclaimed';
    message = `declares level ${declared} but passes level ${measured}`;
  } else {
    verdict = 'consistent';
    message = `declares level ${declared} and passes every test of levels 0-${declared}`;
  }
  return { declared, measured, verdict, failing_levels: failing, missing_levels: missing, message };
}

/** Fetches and checks the manifest. Never throws: transport errors become problems. */
export async function fetchManifest(
  client: HttpClient,
  url: string,
  timeoutMs: number,
): Promise<ManifestCheck> {
  const check: ManifestCheck = { url, fetched: false, valid: false, problems: [] };
  let text: string;
  try {
    const res = await client.request({
      method: 'GET',
      url,
      headers: { Accept: 'application/json' },
      timeoutMs,
    });
    check.fetched = true;
    check.status = res.status;
    const type = headerValue(res.headers, 'content-type');
    if (type !== undefined) check.content_type = type;
    text = res.body;
    if (res.status !== 200) {
      check.problems.push({
        path: '$',
        rule: 'http_status',
        message: `GET ${url} answered ${res.status}, expected 200`,
      });
      return check;
    }
    const media = (type ?? '').split(';')[0]!.trim().toLowerCase();
    if (media !== 'application/json' && media !== OJS_MEDIA_TYPE) {
      check.problems.push({
        path: '$',
        rule: 'content_type',
        message: `the manifest must be served as application/json, got ${type === undefined ? 'no Content-Type' : preview(type)}`,
      });
    }
  } catch (err) {
    check.problems.push({
      path: '$',
      rule: 'http_status',
      message: `GET ${url} failed: ${(err as Error).message}`,
    });
    return check;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    check.problems.push({
      path: '$',
      rule: 'json',
      message: `the manifest is not JSON: ${(err as Error).message}`,
    });
    return check;
  }
  check.problems.push(...checkManifestDocument(doc));
  if (isJsonObject(doc)) {
    check.manifest = doc;
    const level = doc.conformance_level;
    if (typeof level === 'number' && Number.isInteger(level) && level >= 0 && level <= 4)
      check.declared_level = level;
    if (typeof doc.conformance_tier === 'string') check.declared_tier = doc.conformance_tier;
    const impl = doc.implementation;
    if (isJsonObject(impl) && typeof impl.name === 'string') {
      check.implementation =
        typeof impl.version === 'string' ? `${impl.name} ${impl.version}` : impl.name;
    }
  }
  check.valid = check.problems.length === 0;
  return check;
}

/** Adds the level comparison once results are known. */
export function withComparison(
  check: ManifestCheck,
  measured: number,
  results: TestResult[],
): ManifestCheck {
  if (check.declared_level === undefined) return check;
  const core = results.filter((r) => r.level !== EXT_LEVEL);
  return { ...check, comparison: compareLevels(check.declared_level, measured, core) };
}

/** Lines for the table output. */
export function formatManifestCheck(check: ManifestCheck): string[] {
  const lines: string[] = [];
  const who = check.implementation ? ` (${check.implementation})` : '';
  if (check.valid)
    lines.push(
      `manifest: valid${who}, declares level ${check.declared_level}, tier ${check.declared_tier}`,
    );
  else lines.push(`manifest: INVALID${who} - ${check.url}`);
  for (const p of check.problems) lines.push(`    ${p.path}: ${p.rule}: ${p.message}`);
  if (check.comparison)
    lines.push(`manifest level check: ${check.comparison.verdict} - ${check.comparison.message}`);
  return lines;
}
