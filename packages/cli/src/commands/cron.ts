/** `ojs cron list|add|remove|trigger`: periodic jobs. */
import { Command, Option } from 'commander';
import { action } from '../actions.ts';
import type { Cli } from '../context.ts';
import type { Io } from '../io.ts';
import { table } from '../output.ts';
import { parseArgValues } from './json-args.ts';

async function list(cli: Cli): Promise<void> {
  const crons = await cli.client.listCron();
  cli.print({ crons }, () => {
    if (crons.length === 0) return 'no cron jobs\n';
    const rows = crons.map((c) => ({
      ...c,
      type: c.job_template?.type,
      state: c.enabled === false ? 'disabled' : 'enabled',
    }));
    return table(
      rows,
      [
        ['name', 'NAME'],
        ['expression', 'EXPRESSION'],
        ['timezone', 'TIMEZONE'],
        ['type', 'JOB TYPE'],
        ['state', 'STATE'],
        ['next_run_at', 'NEXT RUN'],
        ['last_run_at', 'LAST RUN'],
      ],
      cli.width,
    );
  });
}

async function add(cli: Cli, args: string[], options: Record<string, unknown>): Promise<void> {
  const [name, expression, type, ...values] = args;
  const cron = await cli.client.registerCron({
    name: name!,
    expression: expression!,
    ...(options.timezone ? { timezone: options.timezone as string } : {}),
    ...(options.overlap ? { overlapPolicy: options.overlap as 'allow' | 'skip' } : {}),
    job: {
      type: type!,
      args: parseArgValues(values, options.args),
      ...(options.queue ? { options: { queue: options.queue as string } } : {}),
    },
  });
  cli.print(
    cron,
    () => `cron ${cron.name} registered: ${cron.expression}, next run ${cron.next_run_at ?? '-'}\n`,
  );
}

async function remove(cli: Cli, name: string): Promise<void> {
  await cli.client.unregisterCron(name);
  cli.print({ deleted: true, name }, () => `cron ${name} removed\n`);
}

async function trigger(cli: Cli, name: string): Promise<void> {
  const job = await cli.client.admin.triggerCron(name);
  cli.print(job, () => `cron ${name} triggered: job ${job.id} (${job.type} on ${job.queue})\n`);
}

export function cronCommand(io: Io): Command {
  const cron = new Command('cron').description('periodic jobs: list, add, remove, trigger now');
  cron.addCommand(new Command('list').description('registered cron jobs').action(action(io, list)));
  cron.addCommand(
    new Command('add')
      .description("register (or update) a cron job: ojs cron add nightly '0 3 * * *' report.build")
      .argument('<name>', 'unique name')
      .argument('<expression>', 'cron expression (5 fields, or 6 with seconds)')
      .argument('<type>', 'job type')
      .argument('[args...]', 'job arguments, each JSON or a plain string')
      .option('--args <json>', 'all arguments as one JSON array instead')
      .option('--timezone <tz>', 'IANA time zone (default UTC)')
      .option('--queue <queue>', 'queue of the jobs')
      .addOption(
        new Option('--overlap <policy>', 'when the previous run is still going').choices([
          'allow',
          'skip',
          'cancel',
          'enqueue',
        ]),
      )
      .action(action(io, add)),
  );
  cron.addCommand(
    new Command('remove')
      .description('unregister a cron job')
      .argument('<name>')
      .action(action(io, (cli, [name]) => remove(cli, name!))),
  );
  cron.addCommand(
    new Command('trigger')
      .description('enqueue its job now (the schedule is unchanged)')
      .argument('<name>')
      .action(action(io, (cli, [name]) => trigger(cli, name!))),
  );
  return cron;
}
