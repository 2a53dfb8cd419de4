/**
 * Command line front-end of `ojs conformance`: `conformanceMain(argv)` parses options, loads and
 * filters the suites (both formats, detected per file; the bundled seed-format suite when no
 * `--suites` is given), checks the server's manifest, runs the tests and prints a table, the
 * JSON report or JUnit XML. Exit codes follow the reference runner: 0 conformant, 1 failures,
 * 2 configuration error (bad option, parse error, nothing matched).
 *
 * Flags accept one or two leading dashes and `--flag=value`, so the reference runner's Go-style
 * spellings (`-url`, `-reset-url`, `-report-file`, `-output`) work as well.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { badgeFiles, badgeFor, markdownSnippet, renderSvg, shieldsJson } from './badge.ts';
import { HttpClient } from './http.ts';
import { renderJunit } from './junit.ts';
import {
  BUNDLED_SUITES,
  loadSuitesWithInfo,
  parseLevel,
  SuiteLoadError,
  selectTests,
  type TestFilter,
} from './loader.ts';
import {
  fetchManifest,
  formatManifestCheck,
  type ManifestCheck,
  withComparison,
} from './manifest.ts';
import {
  buildReport,
  type ConformanceReport,
  conformantLevel,
  formatSummaryLine,
  formatTestResult,
  formatVerdict,
} from './report.ts';
import { runTests } from './runner.ts';
import type { AnyTestCase } from './types.ts';

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

export type OutputFormat = 'table' | 'json' | 'junit';

export interface CliOptions {
  url: string;
  /** Empty = the bundled suite. */
  suites: string[];
  resetUrl?: string;
  filter: TestFilter;
  reportFile?: string;
  junitFile?: string;
  badgeFile?: string;
  format: OutputFormat;
  timeoutMs: number;
  /** false with --no-manifest. */
  manifest: boolean;
  manifestUrl?: string;
  gate: 'all' | 'declared';
  help: boolean;
}

export const USAGE = `Usage: ojs conformance [--url URL] [options]

Runs OJS conformance tests against a server. Test files may use the official format or the
seed format of the conformance specification; the format is detected per file. Without
--suites the suite bundled with @ojs/conformance is run.

Options:
  --url URL              server base URL (default: $OJS_TEST_URL or http://localhost:8080)
  --suites DIR...        test directories or files; repeatable (default: the bundled suite)
  --reset-url URL        POSTed before every test to wipe server state (test-mode servers only)
  --level N              official files: level N only; seed files: levels 0..N; "ext" = 99
  --max-level N          levels 0..N, whatever the format
  --test ID              only this test (seed tests also run the tests they require)
  --category C           official: category C; seed: category or tag C
  --format table|json|junit
                         stdout format (default: table)
  --report FILE          also write the JSON report to FILE
  --junit FILE           also write a JUnit XML report to FILE
  --badge FILE           write the conformance badge: FILE (SVG), plus a shields.io endpoint
                         JSON and a Markdown snippet next to it (FILE.json, FILE.md)
  --no-manifest          do not check GET /ojs/manifest
  --manifest-url URL     read the manifest from URL (default: <url>/ojs/manifest)
  --gate all|declared    exit 1 when any test fails (all, the default), or only when the manifest
                         is invalid or a level at or below its declared level fails (declared)
  --timeout SECONDS      per-request timeout (default: 30)
  --help                 show this help

Exit codes: 0 conformant, 1 failures, 2 configuration error.
`;

class UsageError extends Error {}

const ALIASES: Record<string, string> = {
  'report-file': 'report',
  output: 'format',
  h: 'help',
};

const FORMATS: readonly OutputFormat[] = ['table', 'json', 'junit'];

/** Parses argv (without node and script). Throws UsageError on invalid input. */
export function parseCliArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): CliOptions {
  const options: CliOptions = {
    url: env.OJS_TEST_URL || 'http://localhost:8080',
    suites: [],
    filter: {},
    format: 'table',
    timeoutMs: 30_000,
    manifest: true,
    gate: 'all',
    help: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('-') || arg === '-' || arg === '--')
      throw new UsageError(`unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const rawName = (eq === -1 ? arg : arg.slice(0, eq)).replace(/^--?/, '');
    const name = ALIASES[rawName] ?? rawName;
    if (name === 'help') {
      options.help = true;
      continue;
    }
    if (name === 'no-manifest') {
      options.manifest = false;
      continue;
    }
    const value = (): string => {
      if (eq !== -1) return arg.slice(eq + 1);
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('-'))
        throw new UsageError(`--${rawName} needs a value`);
      i++;
      return next;
    };
    switch (name) {
      case 'url':
        options.url = value();
        break;
      case 'suites':
        options.suites.push(value());
        // Several directories may follow one --suites flag.
        if (eq === -1)
          while (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('-'))
            options.suites.push(argv[++i]!);
        break;
      case 'reset-url':
        options.resetUrl = value();
        break;
      case 'level': {
        const text = value();
        try {
          options.filter.level = parseLevel(text);
        } catch {
          throw new UsageError(`--level must be a number or "ext", got "${text}"`);
        }
        break;
      }
      case 'max-level': {
        const text = value();
        if (!/^[0-4]$/.test(text)) throw new UsageError(`--max-level must be 0-4, got "${text}"`);
        options.filter.maxLevel = Number(text);
        break;
      }
      case 'test':
        options.filter.testId = value();
        break;
      case 'category':
        options.filter.category = value();
        break;
      case 'report':
        options.reportFile = value();
        break;
      case 'junit':
        options.junitFile = value();
        break;
      case 'badge':
        options.badgeFile = value();
        break;
      case 'manifest-url':
        options.manifestUrl = value();
        break;
      case 'gate': {
        const gate = value();
        if (gate !== 'all' && gate !== 'declared')
          throw new UsageError('--gate must be all or declared');
        options.gate = gate;
        break;
      }
      case 'format': {
        const format = value();
        if (!(FORMATS as readonly string[]).includes(format))
          throw new UsageError(`--format must be table, json or junit`);
        options.format = format as OutputFormat;
        break;
      }
      case 'timeout': {
        const seconds = Number(value());
        if (!Number.isFinite(seconds) || seconds <= 0)
          throw new UsageError('--timeout must be a positive number');
        options.timeoutMs = Math.round(seconds * 1000);
        break;
      }
      default:
        throw new UsageError(`unknown option ${arg}`);
    }
  }
  for (const [flag, url] of [
    ['--url', options.url],
    ['--reset-url', options.resetUrl],
    ['--manifest-url', options.manifestUrl],
  ] as const) {
    if (url !== undefined && !URL.canParse(url))
      throw new UsageError(`${flag}: invalid URL "${url}"`);
  }
  if (options.gate === 'declared' && !options.manifest)
    throw new UsageError('--gate declared needs the manifest check (drop --no-manifest)');
  return options;
}

const defaultIo: CliIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

async function writeOut(file: string, content: string): Promise<void> {
  await mkdir(path.dirname(path.resolve(file)), { recursive: true });
  await writeFile(file, content);
}

/** Exit status under `--gate declared`, with the reason when it fails. */
function declaredGate(report: ConformanceReport): { ok: boolean; why: string } {
  const manifest = report.manifest;
  if (manifest === undefined || !manifest.valid)
    return { ok: false, why: 'the manifest is missing or invalid' };
  const comparison = manifest.comparison;
  if (comparison === undefined) return { ok: false, why: 'the manifest declares no level' };
  if (comparison.verdict === 'overclaimed') return { ok: false, why: comparison.message };
  return { ok: true, why: comparison.message };
}

/** Entry point; returns the process exit code. */
export async function conformanceMain(argv: string[], io: CliIo = defaultIo): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCliArgs(argv);
  } catch (err) {
    io.err(`error: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (options.help) {
    io.out(USAGE);
    return 0;
  }
  const roots = options.suites.length > 0 ? options.suites : [BUNDLED_SUITES];
  let tests: AnyTestCase[];
  let versions: string[];
  try {
    const loaded = await loadSuitesWithInfo(roots);
    versions = loaded.versions;
    tests = selectTests(loaded.tests, options.filter);
  } catch (err) {
    if (!(err instanceof SuiteLoadError)) throw err;
    io.err(`error: ${err.message}`);
    return 2;
  }
  if (tests.length === 0) {
    io.err('error: no tests matched the given suites and filters');
    return 2;
  }

  const runAt = new Date();
  const started = performance.now();
  const table = options.format === 'table';
  const client = new HttpClient();
  let manifest: ManifestCheck | undefined;
  let results: Awaited<ReturnType<typeof runTests>>;
  try {
    if (options.manifest) {
      const url = options.manifestUrl ?? `${options.url.replace(/\/+$/, '')}/ojs/manifest`;
      manifest = await fetchManifest(client, url, options.timeoutMs);
    }
    results = await runTests(tests, {
      baseUrl: options.url,
      resetUrl: options.resetUrl,
      timeoutMs: options.timeoutMs,
      client,
      onTestResult: table ? (result) => io.out(formatTestResult(result)) : undefined,
    });
  } finally {
    client.close();
  }
  const measured = conformantLevel(results);
  if (manifest !== undefined) manifest = withComparison(manifest, measured, results);
  const testSuiteVersion = [...new Set(versions)].length === 1 ? versions[0] : undefined;
  const badge =
    options.badgeFile !== undefined
      ? badgeFor(results, manifest, testSuiteVersion ?? '1.0')
      : undefined;
  const report = buildReport(results, {
    target: options.url,
    runAt,
    durationMs: performance.now() - started,
    requestedLevel: options.filter.level ?? options.filter.maxLevel ?? null,
    testSuiteVersion,
    manifest,
    badge,
  });
  const json = JSON.stringify(report, null, 2);
  try {
    if (options.reportFile !== undefined) await writeOut(options.reportFile, `${json}\n`);
    if (options.junitFile !== undefined)
      await writeOut(options.junitFile, renderJunit(report, results));
    if (options.badgeFile !== undefined && badge !== undefined) {
      const files = badgeFiles(options.badgeFile);
      await writeOut(files.svg, renderSvg(badge));
      await writeOut(files.json, `${JSON.stringify(shieldsJson(badge), null, 2)}\n`);
      await writeOut(
        files.markdown,
        markdownSnippet(badge, { runAt: report.run_at, target: report.target }),
      );
    }
  } catch (err) {
    io.err(`error: cannot write output: ${(err as Error).message}`);
    return 2;
  }
  const gate = options.gate === 'declared' ? declaredGate(report) : undefined;
  if (table) {
    if (manifest !== undefined) for (const line of formatManifestCheck(manifest)) io.out(line);
    if (badge !== undefined) {
      io.out(
        `badge: ${badge.text}${badge.reason ? ` (${badge.reason})` : ''} -> ${options.badgeFile}`,
      );
    }
    if (gate !== undefined)
      io.out(`gate (declared level): ${gate.ok ? 'pass' : 'FAIL'} - ${gate.why}`);
    for (const line of formatVerdict(report)) io.out(line);
    io.out(formatSummaryLine(report.results));
  } else if (options.format === 'json') {
    io.out(json);
  } else {
    io.out(renderJunit(report, results));
  }
  if (gate !== undefined) return gate.ok ? 0 : 1;
  return report.conformant ? 0 : 1;
}
