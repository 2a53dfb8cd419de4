/**
 * `ojs tenants [list|get|set-limits|delete|stats|jobs]`: the server's
 * tenants (ext-multi-tenancy admin API), their limits and stats.
 */
import { Command } from 'commander';
import { action } from '../actions.ts';
import { type Cli, UsageError } from '../context.ts';
import type { Io } from '../io.ts';
import { table } from '../output.ts';

type Obj = Record<string, unknown>;

function limitsText(limits: Obj | undefined): string {
  if (limits === undefined) return '';
  return Object.entries(limits)
    .map(([name, value]) =>
      typeof value === 'object' && value !== null
        ? `${name}=${(value as Obj).limit}/${(value as Obj).period}`
        : `${name}=${value}`,
    )
    .join(' ');
}

async function list(cli: Cli): Promise<void> {
  const tenants = await cli.client.admin.tenants();
  cli.print({ tenants }, () => {
    if (tenants.length === 0) return 'no tenants\n';
    const rows = tenants.map((t) => {
      const jobs = ((t.stats as Obj | undefined)?.jobs ?? {}) as Obj;
      return {
        id: t.tenant_id,
        total: (t.stats as Obj | undefined)?.total_jobs,
        available: jobs.available,
        active: jobs.active,
        weight: t.fairness_weight,
        limits: limitsText(t.limits as Obj),
      };
    });
    return table(
      rows,
      [
        ['id', 'TENANT'],
        ['total', 'JOBS'],
        ['available', 'AVAILABLE'],
        ['active', 'ACTIVE'],
        ['weight', 'WEIGHT'],
        ['limits', 'LIMITS'],
      ],
      cli.width,
    );
  });
}

/** `--max-concurrency 5 --max-queue-depth none ...` -> the limits body (none removes one). */
function limitsBody(options: Obj): Obj {
  const body: Obj = {};
  const count = (name: string, value: unknown) => {
    if (value === undefined) return;
    if (value === 'none') {
      body[name] = null;
      return;
    }
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) {
      throw new UsageError(`--${name.replaceAll('_', '-')} must be an integer >= 0 or none.`);
    }
    body[name] = n;
  };
  count('max_concurrency', options.maxConcurrency);
  count('max_queue_depth', options.maxQueueDepth);
  count('max_scheduled', options.maxScheduled);
  const rate = options.maxEnqueueRate;
  if (rate !== undefined) {
    if (rate === 'none') body.max_enqueue_rate = null;
    else {
      const match = /^(\d+)\/(P\w+)$/.exec(String(rate));
      if (match === null) {
        throw new UsageError('--max-enqueue-rate must be LIMIT/PERIOD such as 100/PT1M, or none.');
      }
      body.max_enqueue_rate = { limit: Number(match[1]), period: match[2] };
    }
  }
  if (Object.keys(body).length === 0) throw new UsageError('Give at least one limit to set.');
  if (typeof options.reason === 'string') body.reason = options.reason;
  return body;
}

export function tenantsCommand(io: Io): Command {
  const tenants = new Command('tenants').description(
    'tenants: list, get, set-limits, delete, stats, jobs',
  );
  tenants.addCommand(
    new Command('list')
      .description('tenants with stats and limits (the default)')
      .action(action(io, list)),
    { isDefault: true },
  );
  tenants.addCommand(
    new Command('get')
      .description("a tenant's record")
      .argument('<id>', 'tenant id')
      .action(
        action(io, async (cli, [id]) => {
          const tenant = await cli.client.admin.tenant(id!);
          cli.print(
            tenant,
            () =>
              `${tenant.tenant_id}: weight ${tenant.fairness_weight}, ${tenant.quota_mode} quotas, limits: ${limitsText(tenant.limits as Obj) || 'none'}\n`,
          );
        }),
      ),
  );
  tenants.addCommand(
    new Command('set-limits')
      .description("set a tenant's limits at run time (every server process applies them)")
      .argument('<id>', 'tenant id')
      .option('--max-concurrency <n>', 'active jobs at once (none removes)')
      .option('--max-queue-depth <n>', 'available plus scheduled jobs (none removes)')
      .option('--max-scheduled <n>', 'scheduled jobs (none removes)')
      .option('--max-enqueue-rate <rate>', 'LIMIT/PERIOD, e.g. 100/PT1M (none removes)')
      .option('--reason <text>', 'why (kept with the change)')
      .action(
        action(io, async (cli, [id], options) => {
          const tenant = await cli.client.admin.setTenantLimits(
            id!,
            limitsBody(options as Obj) as never,
          );
          cli.print(tenant, () => `${id}: ${limitsText(tenant.limits as Obj) || 'no limits'}\n`);
        }),
      ),
  );
  tenants.addCommand(
    new Command('delete')
      .description("delete a tenant's record (its jobs stay)")
      .argument('<id>', 'tenant id')
      .option('-y, --yes', 'do not ask')
      .action(
        action(io, async (cli, [id], options) => {
          if (!(await cli.confirm(`Delete tenant ${id}?`, (options as Obj).yes as boolean))) return;
          await cli.client.admin.deleteTenant(id!);
          cli.print({ deleted: id }, () => `tenant ${id} deleted\n`);
        }),
      ),
  );
  tenants.addCommand(
    new Command('stats')
      .description("a tenant's job counts, throughput, limits in use and fairness")
      .argument('<id>', 'tenant id')
      .action(
        action(io, async (cli, [id]) => {
          const stats = await cli.client.admin.tenantStats(id!);
          cli.print(stats, () => {
            const jobs = (stats.jobs ?? {}) as Obj;
            const throughput = (stats.throughput ?? {}) as Obj;
            return (
              `${id}: ${stats.total_jobs} jobs (${jobs.available} available, ${jobs.active} active, ` +
              `${jobs.scheduled} scheduled; ${jobs.completed_24h} completed and ${jobs.failed_24h} failed in 24 h), ` +
              `${throughput.processed_per_minute}/min processed, ${throughput.enqueued_per_minute}/min enqueued\n`
            );
          });
        }),
      ),
  );
  tenants.addCommand(
    new Command('jobs')
      .description("a page of a tenant's jobs")
      .argument('<id>', 'tenant id')
      .option('--state <state>', 'only jobs in this state')
      .option('--limit <n>', 'page size (max 100)', '20')
      .action(
        action(io, async (cli, [id], options) => {
          const o = options as Obj;
          const page = await cli.client.admin.tenantJobs(id!, {
            state: o.state as string | undefined,
            limit: Number(o.limit),
          });
          cli.print(page, () =>
            page.jobs.length === 0
              ? 'no jobs\n'
              : table(
                  page.jobs as unknown as Obj[],
                  [
                    ['id', 'ID'],
                    ['type', 'TYPE'],
                    ['queue', 'QUEUE'],
                    ['state', 'STATE'],
                    ['created_at', 'CREATED'],
                  ],
                  cli.width,
                ),
          );
        }),
      ),
  );
  return tenants;
}
