/**
 * Runs official conformance suites against a fresh server in test mode.
 *   node scripts/conformance.ts [--store SPEC] [--levels 0,1] [-- runner args]
 * Default store: a temporary SQLite file. Exits with the runner's code.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { run, runCaptured, SHARED_SUITES, startServerProcess } from './lib.ts';

const LEVEL_DIRS: Record<string, string> = {
  '0': 'level-0-core',
  '1': 'level-1-reliable',
  '2': 'level-2-scheduled',
  '3': 'level-3-workflows',
  '4': 'level-4-advanced',
};

export async function runConformance(
  store: string | undefined,
  levels: string[],
  extra: string[] = [],
  options: { capture?: boolean } = {},
): Promise<{ code: number; output: string }> {
  const tmp = mkdtempSync(join(tmpdir(), 'ojs-conformance-'));
  const server = await startServerProcess(store ?? `sqlite:${join(tmp, 'ojs.db')}`);
  try {
    const suites = levels.flatMap((level) => [
      '--suites',
      join(SHARED_SUITES, LEVEL_DIRS[level] ?? level),
    ]);
    const args = [
      'packages/conformance/src/bin.ts',
      '--url',
      server.url,
      '--reset-url',
      `${server.url}/ojs/v1/admin/reset`,
      ...suites,
      ...extra,
    ];
    const result = options.capture
      ? await runCaptured(process.execPath, args)
      : { code: await run(process.execPath, args), output: '' };
    if (server.crashed() || result.code !== 0) {
      // The server's own log explains a crash or a failure better than the runner can.
      result.output += `\n[server ${server.crashed() ? 'exited during the run' : 'log'}]\n${server.logs()}`;
    }
    return result;
  } finally {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

const USAGE = `Usage: node scripts/conformance.ts [--store SPEC] [--levels 0,1,...] [-- runner args]

  --store SPEC    sqlite:PATH or postgres://... (default: a temporary SQLite file)
  --levels LIST   0-4 and/or suite folders of ../shared/conformance/suites (default 0,1)
  -h, --help      this text
Arguments after -- go to the conformance runner (packages/conformance).
`;

/** The command line, strictly: an unknown or mistyped flag is refused, never ignored. */
function commandLine() {
  try {
    return parseArgs({
      options: {
        store: { type: 'string' },
        levels: { type: 'string', default: '0,1' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
}

if (import.meta.main) {
  const { values, positionals } = commandLine();
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const levels = String(values.levels).split(',');
  const { code, output } = await runConformance(values.store, levels, positionals);
  process.stdout.write(output);
  process.exitCode = code;
}
