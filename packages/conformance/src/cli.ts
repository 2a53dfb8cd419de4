/**
 * Command line front-end: `conformanceMain(argv)` parses options, loads and filters the suites,
 * runs them and prints a table (or the JSON report). Exit codes follow the reference runner:
 * 0 conformant, 1 failures, 2 configuration error (bad option, parse error, nothing matched).
 *
 * Flags accept one or two leading dashes and `--flag=value`, so the reference runner's Go-style
 * spellings (`-url`, `-reset-url`, `-report-file`, `-output`) work as well.
 */
import { writeFile } from 'node:fs/promises';
import { loadSuites, parseLevel, SuiteLoadError, selectTests, type TestFilter } from './loader.ts';
import { buildReport, formatSummaryLine, formatTestResult, formatVerdict } from './report.ts';
import { runTests } from './runner.ts';

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

export interface CliOptions {
  url: string;
  suites: string[];
  resetUrl?: string;
  filter: TestFilter;
  reportFile?: string;
  format: 'table' | 'json';
  timeoutMs: number;
  help: boolean;
}

export const USAGE = `Usage: ojs-conformance --suites DIR [DIR...] [options]

Runs official OJS conformance test files (JSON) against a server.

Options:
  --url URL            server base URL (default: $OJS_TEST_URL or http://localhost:8080)
  --suites DIR...      test file directories or files; repeatable
  --reset-url URL      POSTed before every test to wipe server state
  --level N            only tests declaring level N (0-4, or "ext" = 99)
  --test ID            only tests with this test_id
  --category C         only tests in this category
  --report FILE        also write the JSON report to FILE
  --format table|json  stdout format (default: table)
  --timeout SECONDS    per-request timeout (default: 30)
  --help               show this help
`;

class UsageError extends Error {}

const ALIASES: Record<string, string> = {
  'report-file': 'report',
  output: 'format',
  h: 'help',
};

/** Parses argv (without node and script). Throws UsageError on invalid input. */
export function parseCliArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): CliOptions {
  const options: CliOptions = {
    url: env.OJS_TEST_URL || 'http://localhost:8080',
    suites: [],
    filter: {},
    format: 'table',
    timeoutMs: 30_000,
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
      case 'test':
        options.filter.testId = value();
        break;
      case 'category':
        options.filter.category = value();
        break;
      case 'report':
        options.reportFile = value();
        break;
      case 'format': {
        const format = value();
        if (format !== 'table' && format !== 'json')
          throw new UsageError(`--format must be table or json`);
        options.format = format;
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
  ] as const) {
    if (url !== undefined && !URL.canParse(url))
      throw new UsageError(`${flag}: invalid URL "${url}"`);
  }
  return options;
}

const defaultIo: CliIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

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
  if (options.suites.length === 0) {
    io.err(`error: --suites is required\n\n${USAGE}`);
    return 2;
  }
  let tests: Awaited<ReturnType<typeof loadSuites>>;
  try {
    tests = selectTests(await loadSuites(options.suites), options.filter);
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
  const results = await runTests(tests, {
    baseUrl: options.url,
    resetUrl: options.resetUrl,
    timeoutMs: options.timeoutMs,
    onTestResult: table ? (result) => io.out(formatTestResult(result)) : undefined,
  });
  const report = buildReport(results, {
    target: options.url,
    runAt,
    durationMs: performance.now() - started,
    requestedLevel: options.filter.level ?? null,
  });
  const json = JSON.stringify(report, null, 2);
  if (options.reportFile !== undefined) {
    try {
      await writeFile(options.reportFile, `${json}\n`);
    } catch (err) {
      io.err(`error: cannot write report ${options.reportFile}: ${(err as Error).message}`);
      return 2;
    }
  }
  if (table) {
    for (const line of formatVerdict(report)) io.out(line);
    io.out(formatSummaryLine(report.results));
  } else {
    io.out(json);
  }
  return report.conformant ? 0 : 1;
}
