/**
 * The job filter flags shared by `jobs list` and the bulk actions, named as
 * the operations API names them (GET /ojs/v1/admin/jobs): state, queue,
 * type (a trailing `*` is a prefix), since/until (created_at, RFC 3339),
 * error type, tag, meta key. Comma lists select several values.
 */
import type { JobFilter } from '@ojs/sdk';
import type { Command } from 'commander';

export function addFilterOptions(command: Command): Command {
  return command
    .option('--state <states>', 'job states, comma separated (e.g. discarded,retryable)')
    .option('--queue <queues>', 'queue names, comma separated')
    .option('--type <types>', 'job types, comma separated; email.* is a prefix')
    .option('--since <time>', 'created at or after (RFC 3339)')
    .option('--until <time>', 'created before (RFC 3339)')
    .option('--error-type <type>', 'the last error type')
    .option('--tag <tag>', 'a tag the job carries')
    .option('--meta-key <key>', 'a key present in meta');
}

export function filterFrom(options: Record<string, unknown>): JobFilter {
  const filter: JobFilter = {};
  const text = (key: string) =>
    typeof options[key] === 'string' ? (options[key] as string) : undefined;
  const set = <K extends keyof JobFilter>(key: K, value: JobFilter[K] | undefined) => {
    if (value !== undefined) filter[key] = value;
  };
  set('state', text('state'));
  set('queue', text('queue'));
  set('type', text('type'));
  set('since', text('since'));
  set('until', text('until'));
  set('error_type', text('errorType'));
  set('tag', text('tag'));
  set('meta_key', text('metaKey'));
  return filter;
}

/** A short description of a filter for confirmations ("state=discarded, queue=email"). */
export function describeFilter(filter: JobFilter): string {
  const parts = Object.entries(filter).map(([key, value]) => `${key}=${String(value)}`);
  return parts.length === 0 ? 'every job' : parts.join(', ');
}
