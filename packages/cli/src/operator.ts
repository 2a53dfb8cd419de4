/**
 * The operator's commands of `ojs` (jobs, enqueue, queues, dlq, cron,
 * workflows, workers, stats, webhooks, tenants, outbox, completion) over the HTTP API of any OJS
 * server, parsed by commander (docs/decisions/0061): per-command --help,
 * unknown options refused with a suggestion, exit codes 0 (done), 1 (the
 * server refused or is unreachable), 2 (a usage mistake).
 */
import { ConnectionError } from '@ojs/sdk';
import { Command, CommanderError, Option } from 'commander';
import { completionCommand } from './commands/completion.ts';
import { cronCommand } from './commands/cron.ts';
import { dlqCommand } from './commands/dlq.ts';
import { enqueueCommand } from './commands/enqueue.ts';
import { jobsCommand } from './commands/jobs.ts';
import { outboxCommand } from './commands/outbox.ts';
import { poolsCommand, schedulingCommand } from './commands/pools.ts';
import { queuesCommand } from './commands/queues.ts';
import { statsCommand } from './commands/stats.ts';
import { tenantsCommand } from './commands/tenants.ts';
import { webhooksCommand } from './commands/webhooks.ts';
import { workersCommand } from './commands/workers.ts';
import { workflowsCommand } from './commands/workflows.ts';
import { DEFAULT_URL, UsageError } from './context.ts';
import type { Io } from './io.ts';

/** The operator command names, for the `ojs` dispatcher. */
export const OPERATOR_COMMANDS = [
  'jobs',
  'enqueue',
  'queues',
  'dlq',
  'cron',
  'workflows',
  'workers',
  'pools',
  'scheduling',
  'stats',
  'webhooks',
  'tenants',
  'outbox',
  'completion',
];

export function buildProgram(io: Io, version: string): Command {
  const program = new Command('ojs')
    .description('Operate an OJS server: jobs, queues, dead letters, cron, workflows, workers.')
    .version(version, '-V, --version', 'print the version')
    .addOption(new Option('--url <url>', `server URL (default ${DEFAULT_URL})`).env('OJS_URL'))
    .addOption(new Option('--api-key <key>', 'API key (Bearer token)').env('OJS_API_KEY'))
    .addOption(
      new Option(
        '--tenant <id>',
        'act for this tenant (X-OJS-Tenant): enqueue for it, see only its jobs',
      ).env('OJS_TENANT'),
    )
    .option('--json', 'print JSON instead of tables')
    .showHelpAfterError('(add --help for usage)')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });
  for (const make of [
    jobsCommand,
    enqueueCommand,
    queuesCommand,
    dlqCommand,
    cronCommand,
    workflowsCommand,
    workersCommand,
    poolsCommand,
    schedulingCommand,
    statsCommand,
    webhooksCommand,
    tenantsCommand,
    outboxCommand,
  ]) {
    program.addCommand(make(io));
  }
  program.addCommand(completionCommand(io, program));
  // Subcommands inherit the output, the error handling and the suggestions.
  const configure = (command: Command) => {
    command
      .exitOverride()
      .showHelpAfterError('(add --help for usage)')
      .configureOutput({
        writeOut: (text) => io.stdout.write(text),
        writeErr: (text) => io.stderr.write(text),
      });
    for (const sub of command.commands) configure(sub);
  };
  for (const sub of program.commands) configure(sub);
  return program;
}

/** Runs `ojs <operator command> ...`; resolves with the exit code. */
export async function operatorMain(argv: string[], io: Io, version: string): Promise<number> {
  const program = buildProgram(io, version);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    return reportError(error, io);
  }
}

function reportError(error: unknown, io: Io): number {
  if (error instanceof CommanderError) {
    // Help and --version end with exit code 0; parse errors were printed already.
    return error.exitCode === 0 ? 0 : 2;
  }
  if (error instanceof UsageError) {
    io.stderr.write(`ojs: ${error.message}\n`);
    return 2;
  }
  const e = error as {
    message?: string;
    code?: string;
    status?: number;
    cause?: { code?: string };
  };
  if (error instanceof ConnectionError) {
    io.stderr.write(
      `ojs: cannot reach the OJS server: ${e.message ?? String(error)}\n     (set --url or OJS_URL)\n`,
    );
    return 1;
  }
  const code = e.code && e.code !== 'unknown' ? ` [${e.code}]` : '';
  const hint = (error as { hint?: string }).hint;
  io.stderr.write(
    `ojs: ${e.message ?? String(error)}${code}\n${hint ? `     hint: ${hint}\n` : ''}`,
  );
  return 1;
}
