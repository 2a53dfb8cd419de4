/** `ojs queues list|stats|pause|resume`: queues with their job counts per state. */
import { Command } from 'commander';
import { action } from '../actions.ts';
import type { Cli } from '../context.ts';
import type { Io } from '../io.ts';
import { countColumns, details, table } from '../output.ts';

async function list(cli: Cli): Promise<void> {
  const queues = await cli.client.admin.queues();
  cli.print({ queues }, () => {
    if (queues.length === 0) return 'no queues\n';
    const rows = queues.map((q) => ({
      name: q.name,
      state: q.paused ? 'paused' : 'active',
      ...(q.counts as Record<string, number>),
    }));
    return table(rows, [['name', 'QUEUE'], ['state', 'STATE'], ...countColumns()]);
  });
}

async function stats(cli: Cli, name: string): Promise<void> {
  const queue = await cli.client.admin.queue(name);
  cli.print(queue, () => {
    const { counts, ...rest } = queue as { counts?: Record<string, number> };
    let text = details(rest);
    if (counts) text += `\n${table([counts], countColumns())}`;
    return text;
  });
}

async function setPaused(cli: Cli, name: string, paused: boolean): Promise<void> {
  const queue = paused ? await cli.client.pauseQueue(name) : await cli.client.resumeQueue(name);
  cli.print(queue, () => `queue ${name} ${paused ? 'paused' : 'resumed'}\n`);
}

export function queuesCommand(io: Io): Command {
  const queues = new Command('queues').description('list queues, their counts; pause and resume');
  queues.addCommand(
    new Command('list').description('queues with job counts per state').action(action(io, list)),
  );
  queues.addCommand(
    new Command('stats')
      .description('one queue: counts, depth, throughput, configuration')
      .argument('<queue>')
      .action(action(io, (cli, [name]) => stats(cli, name!))),
  );
  queues.addCommand(
    new Command('pause')
      .description('stop handing out jobs of a queue (enqueues still accepted)')
      .argument('<queue>')
      .action(action(io, (cli, [name]) => setPaused(cli, name!, true))),
  );
  queues.addCommand(
    new Command('resume')
      .description('hand out jobs of a paused queue again')
      .argument('<queue>')
      .action(action(io, (cli, [name]) => setPaused(cli, name!, false))),
  );
  return queues;
}
