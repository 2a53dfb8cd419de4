/**
 * `ojs stats`: the server's job counts per state, queues, workers and
 * throughput. On a terminal it refreshes in place until Ctrl-C (or
 * `--count`); in a pipe it prints once unless `--watch`.
 */
import { Command } from 'commander';
import { action, integer } from '../actions.ts';
import type { Cli } from '../context.ts';
import type { Io } from '../io.ts';
import { countColumns, table } from '../output.ts';

function render(stats: Record<string, unknown>, url: string): string {
  const jobs = (stats.jobs ?? {}) as Record<string, number>;
  const rate = (stats.throughput ?? {}) as Record<string, number>;
  return [
    `OJS server ${url}  ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}${stats.draining ? '  (draining)' : ''}`,
    `queues ${stats.queues ?? 0}   workers ${stats.workers ?? 0}   processed/min ${rate.processed_per_minute ?? 0}   failed/min ${rate.failed_per_minute ?? 0}   uptime ${stats.uptime_seconds ?? 0}s`,
    '',
    table([jobs], countColumns()),
  ].join('\n');
}

async function stats(cli: Cli, options: Record<string, unknown>): Promise<void> {
  const live = options.once ? false : options.watch === true || cli.io.stdout.isTTY === true;
  const count = options.count as number | undefined;
  const intervalMs = (options.interval as number) * 1000;
  for (let n = 1; ; n++) {
    const current = await cli.client.admin.stats();
    if (cli.asJson) cli.out(`${JSON.stringify(current)}\n`);
    else {
      // Redraw in place on a terminal; a pipe gets one block per refresh.
      if (live && cli.io.stdout.isTTY) cli.out('\x1b[2J\x1b[H');
      cli.out(render(current, cli.url));
    }
    if (!live || (count !== undefined && n >= count) || cli.io.signal?.aborted) return;
    await cli.io.sleep(intervalMs, cli.io.signal);
    if (cli.io.signal?.aborted) return;
  }
}

export function statsCommand(io: Io): Command {
  return new Command('stats')
    .description('live server statistics (refreshing on a terminal; Ctrl-C to stop)')
    .option('--watch', 'keep refreshing, also when not on a terminal')
    .option('--once', 'print once and exit')
    .option('--interval <seconds>', 'seconds between refreshes', integer(1), 2)
    .option('--count <n>', 'stop after this many refreshes', integer(1))
    .action(action(io, (cli, _args, options) => stats(cli, options)));
}
