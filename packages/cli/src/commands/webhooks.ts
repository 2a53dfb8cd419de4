/**
 * `ojs webhooks list|create|get|update|delete|test|rotate-secret|deliveries|retry`:
 * webhook subscriptions and their delivery log (`urn:ojs:ext:webhooks`).
 */
import type { WebhookSubscription, WebhookSubscriptionPatch } from '@ojs/sdk';
import { Command, Option } from 'commander';
import { action, integer } from '../actions.ts';
import type { Cli } from '../context.ts';
import type { Io } from '../io.ts';
import { table } from '../output.ts';

const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

function describeSub(sub: WebhookSubscription): string {
  const lines = [
    `id:        ${sub.id}`,
    `url:       ${sub.url}`,
    `events:    ${sub.events.join(', ')}`,
    `active:    ${sub.active}`,
    `timeout:   ${sub.timeout_ms} ms`,
  ];
  if (sub.filter?.queues) lines.push(`queues:    ${sub.filter.queues.join(', ')}`);
  if (sub.filter?.job_types) lines.push(`job types: ${sub.filter.job_types.join(', ')}`);
  if (sub.tenant_id) lines.push(`tenant:    ${sub.tenant_id}`);
  if (sub.secret) lines.push(`secret:    ${sub.secret}   (shown only now: keep it)`);
  return `${lines.join('\n')}\n`;
}

function filterOf(
  options: Record<string, unknown>,
): { queues?: string[]; job_types?: string[] } | undefined {
  const filter: { queues?: string[]; job_types?: string[] } = {};
  if (options.queues) filter.queues = options.queues as string[];
  if (options.jobTypes) filter.job_types = options.jobTypes as string[];
  return Object.keys(filter).length > 0 ? filter : undefined;
}

async function listSubs(cli: Cli): Promise<void> {
  const subscriptions = await cli.client.webhooks.list();
  cli.print({ subscriptions }, () => {
    if (subscriptions.length === 0) return 'no webhook subscriptions\n';
    const rows = subscriptions.map((s) => ({
      ...s,
      events: s.events.join(','),
      state: s.active ? 'active' : 'inactive',
    }));
    return table(
      rows,
      [
        ['id', 'ID'],
        ['url', 'URL'],
        ['events', 'EVENTS'],
        ['state', 'STATE'],
        ['created_at', 'CREATED'],
      ],
      cli.width,
    );
  });
}

async function create(cli: Cli, [url]: string[], options: Record<string, unknown>): Promise<void> {
  const sub = await cli.client.webhooks.create({
    url: url!,
    events: options.events as string[],
    ...(filterOf(options) ? { filter: filterOf(options) } : {}),
    ...(options.secret ? { secret: options.secret as string } : {}),
    ...(options.timeoutMs !== undefined ? { timeout_ms: options.timeoutMs as number } : {}),
  });
  cli.print(sub, () => `webhook subscription created\n${describeSub(sub)}`);
}

async function update(cli: Cli, [id]: string[], options: Record<string, unknown>): Promise<void> {
  const patch: WebhookSubscriptionPatch = {};
  if (options.url) patch.url = options.url as string;
  if (options.events) patch.events = options.events as string[];
  if (filterOf(options)) patch.filter = filterOf(options);
  if (options.active !== undefined) patch.active = options.active === 'true';
  if (options.timeoutMs !== undefined) patch.timeout_ms = options.timeoutMs as number;
  const sub = await cli.client.webhooks.update(id!, patch);
  cli.print(sub, () => `webhook subscription updated\n${describeSub(sub)}`);
}

async function deliveries(
  cli: Cli,
  _args: string[],
  options: Record<string, unknown>,
): Promise<void> {
  const page = await cli.client.webhooks.deliveries({
    ...(options.subscription ? { subscriptionId: options.subscription as string } : {}),
    ...(options.state
      ? { state: options.state as 'pending' | 'delivering' | 'delivered' | 'dead' }
      : {}),
    ...(options.limit !== undefined ? { limit: options.limit as number } : {}),
    ...(options.cursor ? { cursor: options.cursor as string } : {}),
  });
  cli.print(page, () => {
    if (page.deliveries.length === 0) return 'no webhook deliveries\n';
    const rows = page.deliveries.map((d) => ({
      ...d,
      result: d.last_status_code ?? d.last_error ?? '',
    }));
    const text = table(
      rows,
      [
        ['id', 'ID'],
        ['subscription_id', 'SUBSCRIPTION'],
        ['event_type', 'EVENT'],
        ['state', 'STATE'],
        ['attempts', 'ATTEMPTS'],
        ['result', 'LAST RESULT'],
        ['updated_at', 'UPDATED'],
      ],
      cli.width,
    );
    return page.nextCursor ? `${text}more: --cursor ${page.nextCursor}\n` : text;
  });
}

export function webhooksCommand(io: Io): Command {
  const webhooks = new Command('webhooks').description(
    'webhook subscriptions and their delivery log: list, create, get, update, delete, test, rotate-secret, deliveries, retry',
  );
  const filterOptions = (command: Command) =>
    command
      .option('--queues <list>', 'only events of these queues (comma-separated)', list)
      .option('--job-types <list>', 'only events of these job types (comma-separated)', list)
      .option('--timeout-ms <ms>', 'request timeout, 5000..60000', integer(1));
  webhooks.addCommand(
    new Command('list').description('webhook subscriptions').action(action(io, listSubs)),
  );
  webhooks.addCommand(
    filterOptions(
      new Command('create')
        .description(
          "subscribe a URL: ojs webhooks create https://example.com/hook --events 'job.*'",
        )
        .argument('<url>', 'https URL the events are POSTed to')
        .requiredOption(
          '--events <list>',
          'event types: job.completed, job.*, * (comma-separated)',
          list,
        )
        .option(
          '--secret <secret>',
          'signing secret (at least 16 characters; generated when omitted)',
        ),
    ).action(action(io, create)),
  );
  webhooks.addCommand(
    new Command('get')
      .description('one subscription')
      .argument('<id>')
      .action(
        action(io, async (cli, [id]) => {
          const sub = await cli.client.webhooks.get(id!);
          cli.print(sub, () => describeSub(sub));
        }),
      ),
  );
  webhooks.addCommand(
    filterOptions(
      new Command('update')
        .description('change a subscription (only the options given)')
        .argument('<id>')
        .option('--url <url>', 'new URL')
        .option('--events <list>', 'event types, replacing the list', list)
        .addOption(new Option('--active <bool>', 'deliver or hold').choices(['true', 'false'])),
    ).action(action(io, update)),
  );
  webhooks.addCommand(
    new Command('delete')
      .description('remove a subscription')
      .argument('<id>')
      .action(
        action(io, async (cli, [id]) => {
          await cli.client.webhooks.delete(id!);
          cli.print({ deleted: true, id }, () => `webhook subscription ${id} deleted\n`);
        }),
      ),
  );
  webhooks.addCommand(
    new Command('test')
      .description('send a webhook.test event to the subscription now')
      .argument('<id>')
      .action(
        action(io, async (cli, [id]) => {
          const result = await cli.client.webhooks.test(id!);
          cli.print(result, () =>
            result.success
              ? `delivered: ${result.status_code} in ${result.response_time_ms} ms\n`
              : `not delivered: ${result.status_code ?? result.error} in ${result.response_time_ms} ms\n`,
          );
        }),
      ),
  );
  webhooks.addCommand(
    new Command('rotate-secret')
      .description('a new signing secret; the old one still signs for about a day')
      .argument('<id>')
      .action(
        action(io, async (cli, [id]) => {
          const sub = await cli.client.webhooks.rotateSecret(id!);
          cli.print(sub, () => `secret rotated\n${describeSub(sub)}`);
        }),
      ),
  );
  webhooks.addCommand(
    new Command('deliveries')
      .description('the delivery log, newest first')
      .option('--subscription <id>', 'one subscription only')
      .addOption(
        new Option('--state <state>', 'one state only').choices([
          'pending',
          'delivering',
          'delivered',
          'dead',
        ]),
      )
      .option('--limit <n>', 'page size (default 50)', integer(1))
      .option('--cursor <id>', 'the next page (printed under a full page)')
      .action(action(io, deliveries)),
  );
  webhooks.addCommand(
    new Command('retry')
      .description('replay a dead delivery')
      .argument('<delivery-id>')
      .action(
        action(io, async (cli, [id]) => {
          const d = await cli.client.webhooks.retryDelivery(id!);
          cli.print(d, () => `delivery ${d.id} queued again (${d.state})\n`);
        }),
      ),
  );
  return webhooks;
}
