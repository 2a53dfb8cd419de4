/**
 * `ojs jobs list|get|retry|cancel|delete`: find jobs with the operations
 * API's filters (cursor pages: none missed or repeated while jobs change),
 * look at one with its attempts, and act on jobs by id or, in bulk, by
 * filter (confirmed, in steps with a progress bar).
 */
import type { BulkAction, BulkResult, Job } from '@ojs/sdk';
import { Command, Option } from 'commander';
import { action, BATCH_SIZE_OPTION, integer } from '../actions.ts';
import { type Cli, UsageError } from '../context.ts';
import type { Io } from '../io.ts';
import { type Columns, details, table } from '../output.ts';
import { addFilterOptions, describeFilter, filterFrom } from './filters.ts';

export const JOB_COLUMNS: Columns = [
  ['id', 'ID'],
  ['type', 'TYPE'],
  ['queue', 'QUEUE'],
  ['state', 'STATE'],
  ['attempt', 'ATTEMPT'],
  ['created_at', 'CREATED'],
  ['error', 'LAST ERROR'],
];

/** A job as a table row: the last error as its message. */
export function jobRow(job: Job): Record<string, unknown> {
  const error = job.error as { message?: string; type?: string; code?: string } | undefined;
  return { ...job, error: error ? (error.message ?? error.type ?? error.code) : undefined };
}

const PAST: Record<BulkAction, string> = {
  retry: 'retried',
  cancel: 'cancelled',
  delete: 'deleted',
};

/** The summary line (and the first failures) of a bulk action. */
export function bulkSummary(verb: string, result: BulkResult): string {
  const lines = [
    `${verb} ${result.succeeded} of ${result.matched} matched job${result.matched === 1 ? '' : 's'}${result.failed > 0 ? ` (${result.failed} failed)` : ''}`,
  ];
  for (const { job_id, error } of result.errors.slice(0, 10)) {
    lines.push(`  ${job_id}: ${error.message} [${error.code}]`);
  }
  if (result.errors.length > 10) lines.push(`  ... and ${result.errors.length - 10} more`);
  return `${lines.join('\n')}\n`;
}

async function list(cli: Cli, options: Record<string, unknown>): Promise<void> {
  const filter = filterFrom(options);
  const query = {
    ...filter,
    limit: options.limit as number,
    ...(options.cursor ? { cursor: options.cursor as string } : {}),
    ...(options.order ? { order: options.order as 'asc' | 'desc' } : {}),
  };
  if (options.all) {
    const jobs: Job[] = [];
    for await (const job of cli.client.admin.jobs(query)) jobs.push(job);
    cli.print({ jobs, total: jobs.length }, () =>
      jobs.length === 0 ? 'no jobs\n' : table(jobs.map(jobRow), JOB_COLUMNS, cli.width),
    );
    return;
  }
  const page = await cli.client.admin.listJobs(query);
  cli.print({ jobs: page.jobs, total: page.total, next_cursor: page.nextCursor ?? null }, () => {
    if (page.jobs.length === 0) return `no jobs (${describeFilter(filter)})\n`;
    const more = page.nextCursor ? `; next page: --cursor ${page.nextCursor} (or --all)` : '';
    return `${table(page.jobs.map(jobRow), JOB_COLUMNS, cli.width)}${page.jobs.length} of ${page.total} job${page.total === 1 ? '' : 's'}${more}\n`;
  });
}

async function get(cli: Cli, id: string): Promise<void> {
  const job = await cli.client.admin.job(id);
  cli.print(job, () => {
    const { attempts, ...rest } = job as {
      attempts?: Record<string, unknown>[];
      [key: string]: unknown;
    };
    const keys = [
      'id',
      'type',
      'queue',
      'state',
      'attempt',
      'max_attempts',
      'priority',
      'args',
      'meta',
      'tags',
      'created_at',
      'scheduled_at',
      'started_at',
      'completed_at',
      'cancelled_at',
      'discarded_at',
      'next_attempt_at',
      'worker_id',
      'result',
      'error',
    ];
    const error = rest.error as { type?: string; code?: string; message?: string } | undefined;
    const shown = {
      ...rest,
      error: error ? `${error.type ?? error.code ?? 'error'}: ${error.message ?? ''}` : undefined,
    };
    let text = details(shown, keys);
    if (attempts && attempts.length > 0) {
      const rows = attempts.map((a) => ({
        ...a,
        error: (a.error as { message?: string } | undefined)?.message,
      }));
      text += `\nattempts:\n${table(rows, [
        ['attempt', 'ATTEMPT'],
        ['outcome', 'OUTCOME'],
        ['error', 'ERROR'],
      ])}`;
    }
    return text;
  });
}

/** One action on each job named by id, or in bulk on every job the filter matches. */
async function act(
  cli: Cli,
  verb: BulkAction,
  ids: string[],
  options: Record<string, unknown>,
): Promise<void> {
  const filter = filterFrom(options);
  const admin = cli.client.admin;
  if (ids.length > 0) {
    if (Object.keys(filter).length > 0 || options.all) {
      throw new UsageError('Name job ids or a filter, not both.');
    }
    const done: Record<string, unknown>[] = [];
    for (const id of ids) {
      if (verb === 'delete') {
        await admin.deleteJob(id);
        done.push({ id, deleted: true });
      } else {
        const job = verb === 'retry' ? await admin.retryJob(id) : await admin.cancelJob(id);
        done.push({ id: job.id, state: job.state });
      }
    }
    cli.print(done.length === 1 ? done[0] : done, () =>
      done
        .map((d) => `${d.id} ${PAST[verb]}${d.state ? ` (now ${String(d.state)})` : ''}\n`)
        .join(''),
    );
    return;
  }
  if (Object.keys(filter).length === 0 && !options.all) {
    throw new UsageError(
      `Name job ids, or a filter (--state, --queue, --type, ...), or --all for every job.`,
    );
  }
  const matched = (await admin.listJobs({ ...filter, limit: 1 })).total;
  if (matched === 0) {
    cli.print(
      { action: verb, matched: 0, succeeded: 0, failed: 0, errors: [] },
      () => `no jobs match (${describeFilter(filter)})\n`,
    );
    return;
  }
  const question = `${verb[0]!.toUpperCase()}${verb.slice(1)} ${matched} job${matched === 1 ? '' : 's'} (${describeFilter(filter)})?`;
  if (!(await cli.confirm(question, options.yes as boolean | undefined))) {
    cli.out('nothing done\n');
    return;
  }
  const result = await cli.bulkInSteps(
    PAST[verb],
    (limit, cursor) => admin.bulk(verb, filter, { limit, ...(cursor ? { cursor } : {}) }),
    options.batchSize as number,
  );
  cli.print(result, () => bulkSummary(PAST[verb], result));
}

function actionCommand(io: Io, verb: BulkAction, description: string): Command {
  return addFilterOptions(
    new Command(verb)
      .description(description)
      .argument('[ids...]', 'job ids (or a filter instead)')
      .option('--all', 'every job (when no filter is given)')
      .option('-y, --yes', 'do not ask for confirmation')
      .option(...BATCH_SIZE_OPTION),
  ).action(action(io, (cli, ids, options) => act(cli, verb, ids, options)));
}

export function jobsCommand(io: Io): Command {
  const jobs = new Command('jobs').description('find, inspect, retry, cancel and delete jobs');
  jobs.addCommand(
    addFilterOptions(
      new Command('list')
        .description('list jobs, newest first (filters as the operations API)')
        .option('--limit <n>', 'jobs per page (max 100)', integer(1), 20)
        .option('--cursor <cursor>', 'continue after a previous page')
        .addOption(new Option('--order <order>', 'by creation').choices(['asc', 'desc']))
        .option('--all', 'every matching job, page after page'),
    ).action(action(io, (cli, _args, options) => list(cli, options))),
  );
  jobs.addCommand(
    new Command('get')
      .description('a job with its attempts and their errors')
      .argument('<id>', 'job id')
      .action(action(io, (cli, [id]) => get(cli, id!))),
  );
  jobs.addCommand(actionCommand(io, 'retry', 'retry failed, discarded or cancelled jobs'));
  jobs.addCommand(actionCommand(io, 'cancel', 'cancel jobs that have not finished'));
  jobs.addCommand(actionCommand(io, 'delete', 'delete jobs (with their history)'));
  return jobs;
}
