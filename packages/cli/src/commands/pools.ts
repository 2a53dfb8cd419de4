/**
 * `ojs pools list|set|delete` and `ojs scheduling stats`: fair scheduling
 * pools (queues, weights, strategy, isolation) and the dispatches per
 * queue over the last minute.
 */
import type { PoolDefinition, SchedulingStrategy } from '@ojs/sdk';
import { Command, Option } from 'commander';
import { action, integer } from '../actions.ts';
import { type Cli, UsageError } from '../context.ts';
import type { Io } from '../io.ts';
import { table } from '../output.ts';

const STRATEGIES: SchedulingStrategy[] = ['strict', 'round-robin', 'weighted', 'least-loaded'];

async function list(cli: Cli): Promise<void> {
  const pools = await cli.client.admin.pools();
  cli.print({ pools }, () => {
    if (pools.length === 0) return 'no pools\n';
    const rows = pools.map((p) => ({
      ...p,
      queues: p.queues
        .map((q) => `${q}${p.weights?.[q] === undefined ? '' : `:${p.weights[q]}`}`)
        .join(','),
      isolated: p.isolated === true ? 'yes' : 'no',
    }));
    return table(
      rows,
      [
        ['name', 'NAME'],
        ['strategy', 'STRATEGY'],
        ['queues', 'QUEUES:WEIGHT'],
        ['concurrency', 'CONCURRENCY'],
        ['isolated', 'ISOLATED'],
        ['active_workers', 'WORKERS'],
        ['active_jobs', 'ACTIVE'],
      ],
      cli.width,
    );
  });
}

/** `high:70` -> queue high, weight 70; `low` -> queue low, no weight. */
function queueWeights(values: string[]): Record<string, { weight?: number }> {
  const queues: Record<string, { weight?: number }> = {};
  for (const value of values) {
    const [name, weight, extra] = value.split(':');
    if (!name || extra !== undefined)
      throw new UsageError(`'${value}' is not QUEUE or QUEUE:WEIGHT.`);
    if (weight === undefined) {
      queues[name] = {};
      continue;
    }
    if (!/^\d+$/.test(weight))
      throw new UsageError(`The weight in '${value}' is not a positive integer.`);
    queues[name] = { weight: Number(weight) };
  }
  return queues;
}

async function set(cli: Cli, args: string[], options: Record<string, unknown>): Promise<void> {
  const [name, ...queues] = args;
  const definition: PoolDefinition = { queues: queueWeights(queues) };
  if (options.strategy !== undefined) definition.strategy = options.strategy as SchedulingStrategy;
  if (options.concurrency !== undefined) definition.concurrency = options.concurrency as number;
  if (options.isolated === true) definition.isolated = true;
  if (options.minDispatchRatio !== undefined) {
    const ratio = Number(options.minDispatchRatio);
    if (!(ratio >= 0 && ratio <= 1))
      throw new UsageError('--min-dispatch-ratio must be from 0 to 1.');
    definition.starvation_guard = {
      enabled: true,
      rotation_interval: (options.rotationInterval as string | undefined) ?? 'PT30S',
      min_dispatch_ratio: ratio,
    };
  }
  const pool = await cli.client.admin.setPool(name!, definition);
  cli.print(pool, () => `pool ${pool.name} set: ${pool.strategy} over ${pool.queues.join(', ')}\n`);
}

async function remove(cli: Cli, name: string): Promise<void> {
  await cli.client.admin.deletePool(name);
  cli.print({ deleted: true, name }, () => `pool ${name} deleted\n`);
}

async function stats(cli: Cli): Promise<void> {
  const result = await cli.client.admin.schedulingStats();
  cli.print(result, () => {
    if (result.queues.length === 0) return `no dispatches in the last ${result.window}\n`;
    const rows = result.queues.map((q) => ({
      ...q,
      ratio: `${(q.dispatch_ratio_1m * 100).toFixed(1)}%`,
    }));
    return table(
      rows,
      [
        ['name', 'QUEUE'],
        ['dispatch_count_1m', 'DISPATCHED (1m)'],
        ['ratio', 'RATIO'],
        ['avg_wait_ms', 'AVG WAIT MS'],
        ['active_jobs', 'ACTIVE'],
      ],
      cli.width,
    );
  });
}

export function poolsCommand(io: Io): Command {
  const pools = new Command('pools').description('fair scheduling pools: list, set, delete');
  pools.addCommand(
    new Command('list')
      .description('pools with their strategy, weights, workers and active jobs (the default)')
      .action(action(io, list)),
    { isDefault: true },
  );
  pools.addCommand(
    new Command('set')
      .description(
        'create or replace a pool: ojs pools set billing high:70 low:30 --strategy weighted',
      )
      .argument('<name>', 'pool name')
      .argument('<queues...>', 'QUEUE or QUEUE:WEIGHT, in order')
      .addOption(
        new Option('--strategy <strategy>', 'how the pool picks a queue').choices(STRATEGIES),
      )
      .option('--concurrency <n>', "a worker's concurrency in the pool (least-loaded)", integer(1))
      .option('--isolated', "the pool's queues go only to its workers")
      .option('--min-dispatch-ratio <ratio>', 'enable the starvation guard with this minimum share')
      .option(
        '--rotation-interval <duration>',
        "the starvation guard's window (ISO 8601, default PT30S)",
      )
      .action(action(io, set)),
  );
  pools.addCommand(
    new Command('delete')
      .description('delete a pool')
      .argument('<name>', 'pool name')
      .action(action(io, async (cli, [name]) => remove(cli, name!))),
  );
  return pools;
}

export function schedulingCommand(io: Io): Command {
  const scheduling = new Command('scheduling').description('fair scheduling: stats');
  scheduling.addCommand(
    new Command('stats')
      .description('dispatches per queue over the last minute, every server process')
      .action(action(io, stats)),
    { isDefault: true },
  );
  return scheduling;
}
