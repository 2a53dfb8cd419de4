/** `ojs workers [list|quiet|terminate]`: the workers the server has heard from. */
import { Command } from 'commander';
import { action } from '../actions.ts';
import type { Cli } from '../context.ts';
import type { Io } from '../io.ts';
import { table } from '../output.ts';

async function list(cli: Cli): Promise<void> {
  const { items, summary } = await cli.client.admin.workers();
  cli.print({ workers: items, summary }, () => {
    if (items.length === 0) return 'no workers\n';
    const rows = items.map((w) => ({
      ...w,
      queues: Array.isArray(w.queues) ? (w.queues as string[]).join(',') : w.queues,
      active: Array.isArray(w.active_jobs) ? w.active_jobs.length : w.active_jobs,
      pid: (w.metadata as { pid?: number } | undefined)?.pid,
    }));
    const s = summary as Record<string, number>;
    return `${table(
      rows,
      [
        ['id', 'ID'],
        ['state', 'STATE'],
        ['hostname', 'HOST'],
        ['pid', 'PID'],
        ['queues', 'QUEUES'],
        ['pool', 'POOL'],
        ['active', 'ACTIVE'],
        ['last_heartbeat_at', 'LAST HEARTBEAT'],
      ],
      cli.width,
    )}${s.total ?? items.length} workers: ${s.running ?? 0} running, ${s.quiet ?? 0} quiet, ${s.stale ?? 0} stale\n`;
  });
}

function direct(io: Io, directive: 'quiet' | 'terminate', description: string): Command {
  return new Command(directive)
    .description(description)
    .argument('<id>', 'worker id')
    .action(
      action(io, async (cli, [id]) => {
        const answer = await cli.client.admin.directWorker(id!, directive);
        cli.print(answer, () => `worker ${id} told to ${directive} (at its next heartbeat)\n`);
      }),
    );
}

export function workersCommand(io: Io): Command {
  const workers = new Command('workers').description('workers: list, quiet, terminate');
  workers.addCommand(
    new Command('list')
      .description('workers and their state (the default)')
      .action(action(io, list)),
    { isDefault: true },
  );
  workers.addCommand(direct(io, 'quiet', 'stop fetching new jobs (finish the running ones)'));
  workers.addCommand(direct(io, 'terminate', 'stop gracefully'));
  return workers;
}
