/**
 * `ojs enqueue <type> [args...]`: push one job, with the common options
 * (queue, priority, delay or time, retry attempts, tags, meta). Warnings
 * the server returns (an option it does not know) are printed.
 */
import type { EnqueueOptions } from '@ojs/sdk';
import { Command } from 'commander';
import { action, integer } from '../actions.ts';
import type { Cli } from '../context.ts';
import type { Io } from '../io.ts';
import { details } from '../output.ts';
import { parseArgValues, parseJsonObject } from './json-args.ts';

async function enqueue(cli: Cli, args: string[], options: Record<string, unknown>) {
  const [type, ...values] = args;
  const opts: EnqueueOptions = {};
  if (options.queue !== undefined) opts.queue = options.queue as string;
  if (options.priority !== undefined) opts.priority = options.priority as number;
  if (options.delay !== undefined) opts.delayMs = (options.delay as number) * 1000;
  if (options.at !== undefined) opts.scheduledAt = options.at as string;
  if (options.maxAttempts !== undefined || options.deadLetter) {
    opts.retry = {
      ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts as number } : {}),
      ...(options.deadLetter ? { onExhaustion: 'dead_letter' as const } : {}),
    };
  }
  if (options.tags !== undefined) opts.tags = (options.tags as string).split(',');
  const meta = parseJsonObject('--meta', options.meta);
  if (meta !== undefined) opts.meta = meta;
  const job = await cli.client.enqueue(type!, parseArgValues(values, options.args), opts);
  if (job === null) {
    cli.print({ job: null, enqueued: false }, () => 'dropped by an enqueue middleware\n');
    return;
  }
  cli.print(job, () =>
    details(job as unknown as Record<string, unknown>, [
      'id',
      'type',
      'queue',
      'state',
      'priority',
      'args',
      'scheduled_at',
    ]),
  );
}

export function enqueueCommand(io: Io): Command {
  return new Command('enqueue')
    .description('enqueue a job: ojs enqueue email.send ada@example.com \'{"template":"welcome"}\'')
    .argument('<type>', 'job type, e.g. email.send')
    .argument('[args...]', 'positional arguments, each JSON or a plain string')
    .option('--args <json>', 'all arguments as one JSON array instead')
    .option('--queue <name>', 'queue (default: default)')
    .option('--priority <n>', 'priority, -100..100 (higher runs first)', Number)
    .option('--delay <seconds>', 'run after this many seconds', integer(0))
    .option('--at <time>', 'run at this time (RFC 3339)')
    .option('--max-attempts <n>', 'attempts before the job is discarded', integer(1))
    .option('--dead-letter', 'keep it in the dead letter queue when its attempts run out')
    .option('--tags <tags>', 'tags, comma separated')
    .option('--meta <json>', 'meta, a JSON object')
    .action(action(io, enqueue));
}
