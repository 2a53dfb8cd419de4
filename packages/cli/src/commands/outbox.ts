/**
 * `ojs outbox [list|show|retry|delete]`: transactional enqueue's outbox
 * (PostgreSQL store, docs/transactional-enqueue.md) over the admin API:
 * rows applications committed that are not jobs yet, and the invalid ones,
 * kept with the error the server gave them until an operator retries
 * (after fixing the cause) or deletes them.
 */
import type { OutboxEntry } from '@ojs/sdk';
import { Command } from 'commander';
import { action } from '../actions.ts';
import { type Cli, UsageError } from '../context.ts';
import type { Io } from '../io.ts';
import { details, json, table } from '../output.ts';

type Obj = Record<string, unknown>;

/**
 * Core's own reading of the listing and of row ids (the server's rules), a
 * mistake reported as a usage error. Loaded on demand, as `ojs` loads core:
 * the other operator commands do not pay for it.
 */
async function usage<T>(read: (core: typeof import('@ojs/core')) => T): Promise<T> {
  const core = await import('@ojs/core');
  try {
    return read(core);
  } catch (error) {
    if (error instanceof core.OjsError) throw new UsageError(error.message);
    throw error;
  }
}

const rowId = (id: string) => usage((core) => core.parseOutboxId(id));

const errorText = (entry: OutboxEntry) =>
  entry.error === null ? '' : `${entry.error.code}: ${entry.error.message}`;

const field = (entry: OutboxEntry, name: string) => (entry.envelope as Obj | null)?.[name];

async function list(cli: Cli, options: Obj): Promise<void> {
  const query = await usage((core) =>
    core.parseOutboxListQuery({
      ...(options.state !== undefined ? { state: options.state } : {}),
      ...(options.after !== undefined ? { after: options.after } : {}),
      ...(options.limit !== undefined ? { limit: options.limit } : {}),
    }),
  );
  const page = await cli.client.admin.outbox(query);
  cli.print(page, () => {
    const { pending, invalid } = page.counts;
    const summary = `${pending} pending, ${invalid} invalid${page.relaying ? '' : ' (this server process does not relay: --no-outbox-relay)'}\n`;
    if (page.entries.length === 0) return `no outbox rows\n${summary}`;
    const rows = page.entries.map((entry) => ({
      ...entry,
      type: field(entry, 'type'),
      job: field(entry, 'id'),
      problem: errorText(entry),
    }));
    const text = table(
      rows,
      [
        ['id', 'ID'],
        ['state', 'STATE'],
        ['attempts', 'ATTEMPTS'],
        ['type', 'TYPE'],
        ['job', 'JOB ID'],
        ['created_at', 'CREATED'],
        ['problem', 'ERROR'],
      ],
      cli.width,
    );
    return `${text}${summary}${page.nextAfter ? `more: --after ${page.nextAfter}\n` : ''}`;
  });
}

function describeEntry(entry: OutboxEntry): string {
  const error = entry.error;
  return `${details(
    {
      id: entry.id,
      state: entry.state,
      attempts: entry.attempts,
      created: entry.created_at,
      updated: entry.updated_at,
      error: error === null ? undefined : `${error.code}: ${error.message}`,
      retryable: error?.retryable,
      details: error?.details,
    },
    undefined,
  )}envelope:\n${json(entry.envelope)}`;
}

export function outboxCommand(io: Io): Command {
  const outbox = new Command('outbox').description(
    "transactional enqueue's outbox (PostgreSQL store): list, show, retry, delete",
  );
  outbox.addCommand(
    new Command('list')
      .description('outbox rows, oldest first, with the counts per state (the default)')
      .option('--state <state>', 'pending or invalid')
      .option('--limit <n>', 'page size, 1..500 (default 50)')
      .option('--after <id>', 'the page after this row id (printed under a full page)')
      .action(action(io, (cli, _args, options) => list(cli, options))),
    { isDefault: true },
  );
  outbox.addCommand(
    new Command('show')
      .description('one row: its state, error and envelope')
      .argument('<id>', 'outbox row id')
      .action(
        action(io, async (cli, [id]) => {
          const entry = await cli.client.admin.outboxEntry(await rowId(id!));
          cli.print(entry, () => describeEntry(entry));
        }),
      ),
  );
  outbox.addCommand(
    new Command('retry')
      .description('relay a row again (after fixing what refused it)')
      .argument('<id>', 'outbox row id')
      .action(
        action(io, async (cli, [id]) => {
          const entry = await cli.client.admin.retryOutboxEntry(await rowId(id!));
          cli.print(entry, () => `outbox row ${entry.id} is pending: relayed again now\n`);
        }),
      ),
  );
  outbox.addCommand(
    new Command('delete')
      .description('remove a row for good (its job will never exist)')
      .argument('<id>', 'outbox row id')
      .option('-y, --yes', 'do not ask')
      .action(
        action(io, async (cli, [id], options) => {
          const row = await rowId(id!);
          if (!(await cli.confirm(`Delete outbox row ${row}?`, options.yes as boolean))) {
            cli.out('nothing done\n');
            return;
          }
          const entry = await cli.client.admin.deleteOutboxEntry(row);
          cli.print(entry, () => `outbox row ${entry.id} deleted\n`);
        }),
      ),
  );
  return outbox;
}
