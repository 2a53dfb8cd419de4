/**
 * `ojs dlq list|retry|delete|purge`: the dead letter queue (jobs discarded
 * with on_exhaustion dead_letter). Retry and purge act by id or in bulk
 * (confirmed, in steps with a progress bar).
 */
import type { Job } from '@ojs/sdk';
import { Command } from 'commander';
import { action, BATCH_SIZE_OPTION, integer } from '../actions.ts';
import { type Cli, UsageError } from '../context.ts';
import type { Io } from '../io.ts';
import { table } from '../output.ts';
import { addFilterOptions, describeFilter, filterFrom } from './filters.ts';
import { bulkSummary, JOB_COLUMNS, jobRow } from './jobs.ts';

async function list(cli: Cli, options: Record<string, unknown>): Promise<void> {
  const page = await cli.client.listDeadLetter({
    limit: options.limit as number,
    ...(options.queue ? { queue: options.queue as string } : {}),
  });
  cli.print({ jobs: page.items, pagination: page.pagination }, () => {
    if (page.items.length === 0) return 'the dead letter queue is empty\n';
    const total = (page.pagination as { total?: number }).total ?? page.items.length;
    return `${table(page.items.map(jobRow), JOB_COLUMNS, cli.width)}${page.items.length} of ${total} dead letter job${total === 1 ? '' : 's'}\n`;
  });
}

async function deadCount(cli: Cli, queue: string | undefined): Promise<number> {
  const page = await cli.client.listDeadLetter({ limit: 1, ...(queue ? { queue } : {}) });
  return (page.pagination as { total?: number }).total ?? page.items.length;
}

function requireScope(ids: string[], options: Record<string, unknown>, scoped: boolean): void {
  if (ids.length > 0 && (scoped || options.all)) {
    throw new UsageError('Name job ids or a filter, not both.');
  }
  if (ids.length === 0 && !scoped && !options.all) {
    throw new UsageError('Name job ids, or a filter (--queue, --type, ...), or --all.');
  }
}

async function retry(cli: Cli, ids: string[], options: Record<string, unknown>): Promise<void> {
  const filter = filterFrom(options);
  requireScope(ids, options, Object.keys(filter).length > 0);
  if (ids.length > 0) {
    const jobs: Job[] = [];
    for (const id of ids) jobs.push(await cli.client.retryDeadLetter(id));
    cli.print(jobs.length === 1 ? jobs[0] : jobs, () =>
      jobs.map((job) => `${job.id} retried (now ${job.state})\n`).join(''),
    );
    return;
  }
  // The dead letter listing filters by queue only: a count is shown when it is exact.
  const countable = Object.keys(filter).every((key) => key === 'queue');
  const matched = countable ? await deadCount(cli, filter.queue as string | undefined) : undefined;
  if (matched === 0) {
    cli.print(
      { matched: 0, succeeded: 0, failed: 0, errors: [] },
      () => 'the dead letter queue is empty\n',
    );
    return;
  }
  const question = `Retry ${matched ?? 'the'} dead letter job${matched === 1 ? '' : 's'} (${describeFilter(filter)})?`;
  if (!(await cli.confirm(question, options.yes as boolean | undefined))) {
    cli.out('nothing done\n');
    return;
  }
  const result = await cli.bulkInSteps(
    'retried',
    (limit, cursor) =>
      cli.client.admin.retryDeadLetters(filter, { limit, ...(cursor ? { cursor } : {}) }),
    options.batchSize as number,
  );
  cli.print(result, () => bulkSummary('retried', result));
}

async function remove(cli: Cli, ids: string[]): Promise<void> {
  for (const id of ids) await cli.client.deleteDeadLetter(id);
  cli.print({ deleted: ids }, () => ids.map((id) => `${id} deleted\n`).join(''));
}

async function purge(cli: Cli, options: Record<string, unknown>): Promise<void> {
  const scope = {
    ...(options.olderThan ? { olderThan: options.olderThan as string } : {}),
    ...(options.queue ? { queue: options.queue as string } : {}),
  };
  const what = [
    options.queue ? `queue ${String(options.queue)}` : 'all queues',
    options.olderThan ? `older than ${String(options.olderThan)}` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  const matched = await deadCount(cli, scope.queue);
  if (
    !(await cli.confirm(
      `Delete dead letter jobs (${what}; ${matched} in scope)?`,
      options.yes as boolean | undefined,
    ))
  ) {
    cli.out('nothing done\n');
    return;
  }
  const result = await cli.bulkInSteps(
    'purged',
    (limit, cursor) =>
      cli.client.admin.purgeDeadLetters(scope, { limit, ...(cursor ? { cursor } : {}) }),
    options.batchSize as number,
  );
  cli.print(result, () => bulkSummary('purged', result));
}

export function dlqCommand(io: Io): Command {
  const dlq = new Command('dlq').description('the dead letter queue: list, retry, delete, purge');
  dlq.addCommand(
    new Command('list')
      .description('dead letter jobs, newest first')
      .option('--queue <queue>', 'of one queue')
      .option('--limit <n>', 'how many', integer(1), 50)
      .action(action(io, (cli, _args, options) => list(cli, options))),
  );
  dlq.addCommand(
    addFilterOptions(
      new Command('retry')
        .description('retry dead letter jobs by id, by filter, or --all')
        .argument('[ids...]', 'job ids')
        .option('--all', 'every dead letter job')
        .option('-y, --yes', 'do not ask for confirmation')
        .option(...BATCH_SIZE_OPTION),
    ).action(action(io, retry)),
  );
  dlq.addCommand(
    new Command('delete')
      .description('delete dead letter jobs by id')
      .argument('<ids...>', 'job ids')
      .action(action(io, (cli, ids) => remove(cli, ids))),
  );
  dlq.addCommand(
    new Command('purge')
      .description('delete dead letter jobs in bulk')
      .option('--older-than <duration>', 'only those created longer ago (ISO 8601, e.g. P30D)')
      .option('--queue <queue>', 'only those of a queue')
      .option('-y, --yes', 'do not ask for confirmation')
      .option(...BATCH_SIZE_OPTION)
      .action(action(io, (cli, _args, options) => purge(cli, options))),
  );
  return dlq;
}
