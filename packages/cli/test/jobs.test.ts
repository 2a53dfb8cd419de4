/**
 * `ojs enqueue` and `ojs jobs list|get|retry|cancel|delete` against a live
 * server: tables and JSON, the operations API's filters, cursor pages,
 * actions by id and in bulk (confirmation, steps with a progress bar).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type CliServer, failedJobs, startCliServer } from './helpers.ts';

type Json = Record<string, unknown>;
type JobList = { jobs: Json[]; total: number; next_cursor: string | null };

describe('ojs enqueue and ojs jobs', () => {
  let cli: CliServer;
  before(async () => {
    cli = await startCliServer();
  });
  after(() => cli.close());
  const total = async (queue: string, state: string) =>
    (await cli.json<JobList>(['jobs', 'list', '--queue', queue, '--state', state])).total;

  it('enqueue: positional args as JSON or text, options, a job back', async () => {
    const job = await cli.json([
      'enqueue',
      'email.send',
      'ada@example.com',
      '{"template":"welcome"}',
      '3',
      '--queue',
      'mail',
      '--priority',
      '5',
      '--tags',
      'signup,eu',
      '--meta',
      '{"tenant":"acme"}',
    ]);
    assert.equal(job.type, 'email.send');
    assert.deepEqual(job.args, ['ada@example.com', { template: 'welcome' }, 3]);
    assert.equal(job.queue, 'mail');
    assert.equal(job.priority, 5);
    assert.deepEqual(job.tags, ['signup', 'eu']);
    assert.equal((job.meta as Json).tenant, 'acme');
    const text = await cli.ojs(['enqueue', 'report.build', '--args', '[7]', '--delay', '60']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^id: +[0-9a-f-]{36}\ntype: +report\.build\nqueue: +default\nstate: +scheduled/m,
    );
  });

  it('enqueue --max-attempts 2 --dead-letter: the retry policy on the job', async () => {
    const job = await cli.json(['enqueue', 'a.b', '--max-attempts', '2', '--dead-letter']);
    const retry = job.retry as Json;
    assert.equal(retry.max_attempts, 2);
    assert.equal(retry.on_exhaustion, 'dead_letter');
  });

  it('enqueue: an object as --args is refused with the hint to wrap it', async () => {
    const result = await cli.ojs(['enqueue', 'email.send', '--args', '{"to":"ada"}']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /wrap an object in \[ \]: --args '\[\{"to":"ada"\}\]'/);
  });

  it('jobs list: a table with a footer, newest first', async () => {
    const result = await cli.ojs(['jobs', 'list', '--queue', 'mail']);
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trim().split('\n');
    assert.match(lines[0]!, /^ID +TYPE +QUEUE +STATE +ATTEMPT +CREATED +LAST ERROR$/);
    assert.match(lines[1]!, /^[0-9a-f-]{36} +email\.send +mail +available +0 /);
    assert.equal(lines.at(-1), '1 of 1 job');
  });

  it('jobs list: filters, --limit pages with --cursor, --all follows every page', async () => {
    for (let i = 0; i < 5; i++)
      await cli.ojs(['enqueue', 'paged.job', String(i), '--queue', 'paged']);
    const paged = (...more: string[]) =>
      cli.json<JobList>(['jobs', 'list', '--queue', 'paged', '--limit', '2', ...more]);
    const first = await paged();
    assert.equal(first.total, 5);
    assert.equal(first.jobs.length, 2);
    assert.ok(first.next_cursor);
    const second = await paged('--cursor', first.next_cursor!);
    assert.equal(second.jobs.length, 2);
    assert.notDeepEqual(
      second.jobs.map((j) => j.id),
      first.jobs.map((j) => j.id),
    );
    const all = await paged('--all');
    assert.equal(all.jobs.length, 5);
    assert.equal(new Set(all.jobs.map((j) => j.id)).size, 5);
    const typed = await cli.json<JobList>([
      'jobs',
      'list',
      '--type',
      'paged.*',
      '--state',
      'available',
    ]);
    assert.equal(typed.total, 5);
    const none = await cli.ojs(['jobs', 'list', '--queue', 'nothing-here']);
    assert.equal(none.stdout, 'no jobs (queue=nothing-here)\n');
  });

  it("the server's hint is printed under its error", async () => {
    const result = await cli.ojs([
      'cron',
      'add',
      'c',
      '* * * * *',
      'a.b',
      '--args',
      '[1]',
      '--queue',
      'BAD QUEUE',
    ]);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /^ojs: options\.queue 'BAD QUEUE' is invalid.*\[invalid_payload\]\n {5}hint: \S/,
    );
  });

  it('jobs list: a bad filter value is the server refusing, exit 1', async () => {
    const result = await cli.ojs(['jobs', 'list', '--state', 'nope']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^ojs: state must be one of .* \[invalid_request\]/);
  });

  it('jobs get: the job with its attempts and errors', async () => {
    const [id] = await failedJobs(cli, 'get-q', 1);
    const result = await cli.ojs(['jobs', 'get', id!]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`^id: +${id}$`, 'm'));
    assert.match(result.stdout, /^state: +discarded$/m);
    assert.match(result.stdout, /^error: +SmtpTimeout: smtp timed out$/m);
    assert.match(result.stdout, /attempts:\nATTEMPT +OUTCOME +ERROR\n1 +\S+ +smtp timed out/);
    const missing = await cli.ojs(['jobs', 'get', '019a0000-0000-7000-8000-000000000000']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not found.*\[not_found\]/i);
  });

  it('jobs retry/cancel/delete by id', async () => {
    const [failed] = await failedJobs(cli, 'by-id', 1);
    const retried = await cli.ojs(['jobs', 'retry', failed!]);
    assert.equal(retried.stdout, `${failed} retried (now available)\n`);
    const cancelled = await cli.ojs(['jobs', 'cancel', failed!]);
    assert.equal(cancelled.stdout, `${failed} cancelled (now cancelled)\n`);
    const deleted = await cli.ojs(['jobs', 'delete', failed!]);
    assert.equal(deleted.stdout, `${failed} deleted\n`);
    assert.equal((await cli.ojs(['jobs', 'get', failed!])).code, 1);
    const conflict = await cli.ojs(['jobs', 'retry', '019a0000-0000-7000-8000-000000000001']);
    assert.equal(conflict.code, 1);
  });

  it('bulk retry by filter: refused without --yes and no terminal, nothing changed', async () => {
    await failedJobs(cli, 'bulk-a', 3);
    const refused = await cli.ojs(['jobs', 'retry', '--state', 'discarded', '--queue', 'bulk-a']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /Retry 3 jobs \(state=discarded, queue=bulk-a\)\? Pass --yes/);
    assert.equal(await total('bulk-a', 'discarded'), 3);
  });

  it('bulk retry: asked, answered no, nothing done; answered yes, all retried', async () => {
    const no = await cli.ojs(['jobs', 'retry', '--state', 'discarded', '--queue', 'bulk-a'], {
      answer: false,
    });
    assert.deepEqual(no.asked, ['Retry 3 jobs (state=discarded, queue=bulk-a)?']);
    assert.equal(no.stdout, 'nothing done\n');
    const yes = await cli.ojs(['jobs', 'retry', '--state', 'discarded', '--queue', 'bulk-a'], {
      answer: true,
    });
    assert.equal(yes.stdout, 'retried 3 of 3 matched jobs\n');
    assert.equal(await total('bulk-a', 'available'), 3);
  });

  it('bulk in steps: --batch-size 2 over 5 jobs, a progress bar on a terminal, every job once', async () => {
    await failedJobs(cli, 'bulk-b', 5);
    const result = await cli.ojs(
      ['jobs', 'retry', '--state', 'discarded', '--queue', 'bulk-b', '--batch-size', '2', '--yes'],
      { tty: true },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'retried 5 of 5 matched jobs\n');
    const frames = result.stderr.split('\r').filter(Boolean);
    assert.deepEqual(
      frames.map((f) => /(\d+)\/5/.exec(f)?.[1]),
      ['2', '4', '5'],
      'one frame per step',
    );
    assert.ok(result.stderr.endsWith('(100%)\n'));
  });

  it('bulk: no progress bar in a pipe; failures are counted and listed', async () => {
    await cli.ojs(['enqueue', 'fresh.job', '--queue', 'bulk-c']);
    await failedJobs(cli, 'bulk-c', 1);
    // cancel applies to the available job, not to the discarded (finished) one
    const result = await cli.ojs(['jobs', 'cancel', '--queue', 'bulk-c', '--yes']);
    assert.equal(result.stderr, '');
    assert.match(
      result.stdout,
      /^cancelled 1 of 2 matched jobs \(1 failed\)\n {2}[0-9a-f-]{36}: .+ \[conflict\]\n$/,
    );
  });

  it('bulk cancel and delete; --all without a filter; ids and a filter together are refused', async () => {
    for (let i = 0; i < 3; i++) await cli.ojs(['enqueue', 'cancel.me', '--queue', 'bulk-d']);
    const cancelled = await cli.json(['jobs', 'cancel', '--queue', 'bulk-d', '--yes']);
    assert.equal(cancelled.succeeded, 3);
    const deleted = await cli.json([
      'jobs',
      'delete',
      '--queue',
      'bulk-d',
      '--state',
      'cancelled',
      '--yes',
    ]);
    assert.equal(deleted.succeeded, 3);
    assert.equal((await cli.json<JobList>(['jobs', 'list', '--queue', 'bulk-d'])).total, 0);
    const unscoped = await cli.ojs(['jobs', 'cancel', '--yes']);
    assert.equal(unscoped.code, 2);
    assert.match(unscoped.stderr, /or --all for every job/);
    const both = await cli.ojs(['jobs', 'cancel', 'x', '--queue', 'q']);
    assert.equal(both.code, 2);
  });

  it('a typo in an option is refused with the likely one', async () => {
    const result = await cli.ojs(['jobs', 'list', '--stat', 'discarded']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /unknown option '--stat'\n\(Did you mean --state\?\)/);
  });
});
