/**
 * `ojs queues|dlq|cron|workflows|workers|stats|webhooks|completion` against a live
 * server: each command's table or JSON and its effect on the server.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { OjsClient, OjsWorker } from '@ojs/sdk';
import { type CliServer, failedJobs, startCliServer } from './helpers.ts';

type Json = Record<string, unknown>;

/** The headers of every job-count table (queues list, queues stats, stats), in their order. */
const COUNT_HEADERS =
  'AVAILABLE +ACTIVE +SCHEDULED +RETRYABLE +PENDING +COMPLETED +DISCARDED +CANCELLED';

describe('ojs operator commands', () => {
  let cli: CliServer;
  before(async () => {
    cli = await startCliServer();
  });
  after(() => cli.close());

  it('queues list, stats, pause, resume', async () => {
    await cli.ojs(['enqueue', 'a.b', '--queue', 'alpha']);
    await cli.ojs(['enqueue', 'a.b', '--queue', 'alpha']);
    const list = await cli.ojs(['queues', 'list']);
    assert.match(list.stdout, /^QUEUE +STATE +AVAILABLE +ACTIVE .*\nalpha +active +2 +0 /);
    assert.match(list.stdout, new RegExp(`^QUEUE +STATE +${COUNT_HEADERS}$`, 'm'));
    const paused = await cli.ojs(['queues', 'pause', 'alpha']);
    assert.equal(paused.stdout, 'queue alpha paused\n');
    const { queues } = await cli.json<{ queues: Json[] }>(['queues', 'list']);
    assert.equal(queues.find((q) => q.name === 'alpha')?.paused, true);
    const fetched = await cli.http('POST', '/ojs/v1/workers/fetch', { queues: ['alpha'] });
    assert.deepEqual(fetched.jobs, [], 'a paused queue hands out nothing');
    assert.equal((await cli.ojs(['queues', 'resume', 'alpha'])).stdout, 'queue alpha resumed\n');
    const stats = await cli.json(['queues', 'stats', 'alpha']);
    assert.equal((stats.counts as Json).available, 2);
    const text = await cli.ojs(['queues', 'stats', 'alpha']);
    assert.match(text.stdout, /^name: +alpha$/m);
    assert.match(text.stdout, new RegExp(`^${COUNT_HEADERS}\n2 +0 `, 'm'));
  });

  it('dlq list, retry by id, delete, retry --all --yes, purge', async () => {
    const ids = await failedJobs(cli, 'dead', 4, true);
    const list = await cli.ojs(['dlq', 'list']);
    assert.match(list.stdout, /4 of 4 dead letter jobs\n$/);
    assert.match(list.stdout, /flaky\.run +dead +discarded +1 .* smtp timed out/);
    const one = await cli.ojs(['dlq', 'retry', ids[0]!]);
    assert.equal(one.stdout, `${ids[0]} retried (now available)\n`);
    assert.equal((await cli.ojs(['dlq', 'delete', ids[1]!])).stdout, `${ids[1]} deleted\n`);
    const refused = await cli.ojs(['dlq', 'retry', '--all']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /Retry 2 dead letter jobs \(every job\)\? Pass --yes/);
    const all = await cli.ojs(['dlq', 'retry', '--all', '--yes']);
    assert.equal(all.stdout, 'retried 2 of 2 matched jobs\n');
    assert.equal((await cli.ojs(['dlq', 'list'])).stdout, 'the dead letter queue is empty\n');
    await failedJobs(cli, 'dead2', 3, true);
    const purged = await cli.ojs(
      ['dlq', 'purge', '--queue', 'dead2', '--yes', '--batch-size', '2'],
      {
        tty: true,
      },
    );
    assert.equal(purged.stdout, 'purged 3 of 3 matched jobs\n');
    assert.match(purged.stderr, /purged .* 3\/3 \(100%\)\n$/);
    const empty = await cli.json<{ jobs: Json[] }>(['dlq', 'list']);
    assert.deepEqual(empty.jobs, []);
  });

  it('webhooks create, list, get, update, deliveries, retry, delete', async () => {
    const created = await cli.ojs([
      'webhooks',
      'create',
      'https://example.com/hook',
      '--events',
      'job.completed,job.failed',
      '--queues',
      'nowhere',
      '--secret',
      'whsec_cli_test_secret_1',
    ]);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^webhook subscription created\nid: +sub_/);
    assert.match(created.stdout, /^secret: +whsec_cli_test_secret_1 /m);
    const id = /^id: +(\S+)$/m.exec(created.stdout)![1]!;
    const list = await cli.ojs(['webhooks', 'list']);
    assert.match(list.stdout, /^ID +URL +EVENTS +STATE +CREATED\n/);
    assert.match(
      list.stdout,
      new RegExp(`^${id} +https://example.com/hook +job.completed,job.failed +active `, 'm'),
    );
    const got = await cli.json<Json>(['webhooks', 'get', id]);
    assert.equal(got.secret, undefined);
    assert.deepEqual(got.filter, { queues: ['nowhere'] });
    const updated = await cli.ojs([
      'webhooks',
      'update',
      id,
      '--active',
      'false',
      '--events',
      'job.*',
    ]);
    assert.match(updated.stdout, /^events: +job\.\*$/m);
    assert.match(updated.stdout, /^active: +false$/m);
    const rotated = await cli.ojs(['webhooks', 'rotate-secret', id]);
    assert.match(rotated.stdout, /^secret: +whsec_/m);
    assert.doesNotMatch(rotated.stdout, /whsec_cli_test_secret_1/);
    assert.equal(
      (await cli.ojs(['webhooks', 'deliveries', '--subscription', id])).stdout,
      'no webhook deliveries\n',
    );
    const missing = await cli.ojs(['webhooks', 'retry', 'whd_nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not found/);
    const refused = await cli.ojs([
      'webhooks',
      'create',
      'ftp://example.com/hook',
      '--events',
      '*',
    ]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /https/);
    const typo = await cli.ojs(['webhooks', 'create', 'https://example.com/h', '--event', '*']);
    assert.equal(typo.code, 2);
    assert.equal(
      (await cli.ojs(['webhooks', 'delete', id])).stdout,
      `webhook subscription ${id} deleted\n`,
    );
    assert.equal((await cli.ojs(['webhooks', 'list'])).stdout, 'no webhook subscriptions\n');
  });

  it('webhooks test and deliveries against a receiver on loopback', async () => {
    const { createServer } = await import('node:http');
    const receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
      const sub = await cli.json<Json>([
        'webhooks',
        'create',
        url,
        '--events',
        'job.enqueued',
        '--queues',
        'hooked',
      ]);
      const id = sub.id as string;
      assert.match(
        (await cli.ojs(['webhooks', 'test', id])).stdout,
        /^delivered: 204 in \d+ ms\n$/,
      );
      await cli.ojs(['enqueue', 'a.b', '--queue', 'hooked']);
      const deadline = Date.now() + 10_000;
      let page = await cli.json<{ deliveries: Json[] }>([
        'webhooks',
        'deliveries',
        '--subscription',
        id,
      ]);
      while (page.deliveries[0]?.state !== 'delivered' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        page = await cli.json<{ deliveries: Json[] }>([
          'webhooks',
          'deliveries',
          '--subscription',
          id,
        ]);
      }
      assert.equal(page.deliveries[0]?.state, 'delivered');
      const table = await cli.ojs(['webhooks', 'deliveries', '--state', 'delivered']);
      assert.match(
        table.stdout,
        /^ID +SUBSCRIPTION +EVENT +STATE +ATTEMPTS +LAST RESULT +UPDATED\n/,
      );
      assert.match(
        table.stdout,
        new RegExp(`^whd_\\S+ +${id} +job.enqueued +delivered +1 +204 `, 'm'),
      );
      await cli.ojs(['webhooks', 'delete', id]);
    } finally {
      receiver.close();
    }
  });

  it('cron add, list, trigger, remove', async () => {
    const added = await cli.ojs([
      'cron',
      'add',
      'nightly',
      '0 3 * * *',
      'report.build',
      '7',
      '--queue',
      'reports',
      '--timezone',
      'Europe/Paris',
    ]);
    assert.match(added.stdout, /^cron nightly registered: 0 3 \* \* \*, next run 20\d\d-/);
    const list = await cli.ojs(['cron', 'list']);
    assert.match(list.stdout, /nightly +0 3 \* \* \* +Europe\/Paris +report\.build +enabled/);
    const job = await cli.json(['cron', 'trigger', 'nightly']);
    assert.equal(job.type, 'report.build');
    assert.equal(job.queue, 'reports');
    assert.deepEqual(job.args, [7]);
    assert.equal((await cli.ojs(['cron', 'remove', 'nightly'])).stdout, 'cron nightly removed\n');
    assert.equal((await cli.ojs(['cron', 'list'])).stdout, 'no cron jobs\n');
    const bad = await cli.ojs(['cron', 'add', 'x', 'not a cron', 'a.b']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /cron expression/i);
  });

  it('workflows get and cancel', async () => {
    const client = new OjsClient({ url: cli.url });
    const workflow = await client.chain([
      { type: 'step.one', args: [] },
      { type: 'step.two', args: [] },
    ]);
    await client.close();
    const shown = await cli.ojs(['workflows', 'get', workflow.id]);
    assert.match(shown.stdout, new RegExp(`^id: +${workflow.id}$`, 'm'));
    assert.match(shown.stdout, /STEP +TYPE +STATE +JOB +DEPENDS ON\n.*step\.one/);
    const cancelled = await cli.ojs(['workflows', 'cancel', workflow.id]);
    assert.equal(cancelled.stdout, `workflow ${workflow.id} cancelled\n`);
    const missing = await cli.ojs(['workflows', 'get', '019a0000-0000-7000-8000-000000000009']);
    assert.equal(missing.code, 1);
  });

  it('workers list, quiet, terminate', async () => {
    const worker = new OjsWorker({
      url: cli.url,
      queues: ['w'],
      handleSignals: false,
      heartbeatIntervalMs: 50,
    });
    worker.register('noop.run', async () => null);
    await worker.start();
    try {
      // Listed from its first fetch; its host and pid come with its first heartbeat.
      let listed: { workers: Json[] } = { workers: [] };
      const beaten = () => typeof listed.workers[0]?.hostname === 'string';
      for (let i = 0; i < 200 && !beaten(); i++) {
        listed = await cli.json<{ workers: Json[] }>(['workers']);
        if (!beaten()) await new Promise((r) => setTimeout(r, 25));
      }
      assert.equal(listed.workers[0]?.id, worker.workerId);
      const table = await cli.ojs(['workers', 'list']);
      assert.match(
        table.stdout,
        new RegExp(`^${worker.workerId} +running +\\S+ +${process.pid} +w `, 'm'),
      );
      assert.match(table.stdout, /1 workers: 1 running, 0 quiet, 0 stale\n$/);
      const quiet = await cli.ojs(['workers', 'quiet', worker.workerId]);
      assert.equal(
        quiet.stdout,
        `worker ${worker.workerId} told to quiet (at its next heartbeat)\n`,
      );
      const terminate = await cli.ojs(['workers', 'terminate', worker.workerId]);
      assert.equal(
        terminate.stdout,
        `worker ${worker.workerId} told to terminate (at its next heartbeat)\n`,
      );
      // The worker obeys at its next heartbeat: it stops by itself.
      await worker.wait();
    } finally {
      await worker.stop();
    }
  });

  it('a worker that only fetched is listed with its queues', async () => {
    await cli.http('POST', '/ojs/v1/workers/fetch', {
      queues: ['fetch-only-a', 'fetch-only-b'],
      worker_id: 'fetch-only-worker',
      pool: 'fetch-only-pool',
    });
    const table = await cli.ojs(['workers', 'list']);
    assert.match(
      table.stdout,
      /^fetch-only-worker +running +.*fetch-only-a,fetch-only-b +fetch-only-pool /m,
    );
  });

  it('pools set, list, delete and scheduling stats', async () => {
    const set = await cli.ojs([
      'pools',
      'set',
      'billing',
      'bill-high:70',
      'bill-low:30',
      '--strategy',
      'weighted',
      '--min-dispatch-ratio',
      '0.1',
    ]);
    assert.equal(set.stdout, 'pool billing set: weighted over bill-high, bill-low\n');
    const list = await cli.ojs(['pools', 'list']);
    assert.match(
      list.stdout,
      /^NAME +STRATEGY +QUEUES:WEIGHT +CONCURRENCY +ISOLATED +WORKERS +ACTIVE$/m,
    );
    assert.match(list.stdout, /^billing +weighted +bill-high:70,bill-low:30 +- +no +0 +0$/m);
    const { pools } = await cli.json<{ pools: Json[] }>(['pools']);
    const billing = pools.find((p) => p.name === 'billing')!;
    assert.deepEqual(billing.weights, { 'bill-high': 70, 'bill-low': 30 });
    assert.equal((billing.starvation_guard as Json).min_dispatch_ratio, 0.1);
    const bad = await cli.ojs(['pools', 'set', 'billing', 'bill-high:x']);
    assert.equal(bad.code, 2);
    await cli.ojs(['enqueue', 'a.b', '--queue', 'bill-high']);
    await cli.http('POST', '/ojs/v1/workers/fetch', { queues: ['bill-high'] });
    const stats = await cli.ojs(['scheduling', 'stats']);
    assert.match(stats.stdout, /^QUEUE +DISPATCHED \(1m\) +RATIO +AVG WAIT MS +ACTIVE$/m);
    assert.match(stats.stdout, /^bill-high +1 +\S+% +\d+ +1$/m);
    assert.equal((await cli.ojs(['pools', 'delete', 'billing'])).stdout, 'pool billing deleted\n');
    assert.equal((await cli.ojs(['pools', 'delete', 'billing'])).code, 1);
  });

  it('stats: once in a pipe; refreshing on a terminal until --count', async () => {
    const once = await cli.ojs(['stats']);
    assert.match(once.stdout, /^OJS server http:\/\/127\.0\.0\.1:\d+ /);
    assert.match(once.stdout, new RegExp(`^${COUNT_HEADERS}$`, 'm'));
    assert.equal(once.stdout.match(/OJS server/g)?.length, 1);
    const live = await cli.ojs(['stats', '--count', '3', '--interval', '1'], { tty: true });
    assert.equal(live.stdout.split('\x1b[2J\x1b[H').length - 1, 3, 'redrawn three times');
    const json = await cli.ojs(['stats', '--watch', '--count', '2', '--json']);
    const lines = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    assert.equal(lines.length, 2);
    assert.equal(typeof (lines[0]!.jobs as Json).available, 'number');
    const stop = new AbortController();
    stop.abort();
    const interrupted = await cli.ojs(['stats', '--watch'], { signal: stop.signal });
    assert.equal(interrupted.code, 0, 'Ctrl-C ends a live view cleanly');
  });

  it('completion: bash (checked by bash itself), zsh, fish', async () => {
    const bash = await cli.ojs(['completion', 'bash']);
    assert.match(bash.stdout, /complete -F _ojs ojs/);
    assert.match(bash.stdout, /"jobs"\) words="list get retry cancel delete /);
    assert.match(bash.stdout, /"jobs list"\) words="--limit .*--state .*--json --help"/);
    const dir = mkdtempSync(join(tmpdir(), 'ojs-completion-'));
    try {
      const script = join(dir, 'ojs.bash');
      writeFileSync(script, bash.stdout);
      // What bash completes for `ojs jobs l` and `ojs dlq re`.
      const probe = `source ${script}; for line in "ojs jobs l" "ojs dlq re" "ojs jobs list --sta"; do COMP_WORDS=($line); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _ojs; echo "\${COMPREPLY[*]}"; done`;
      const { stdout } = await promisify(execFile)('bash', ['-c', probe]);
      assert.deepEqual(stdout.trim().split('\n'), ['list', 'retry', '--state']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.match((await cli.ojs(['completion', 'zsh'])).stdout, /^#compdef ojs/);
    assert.match(
      (await cli.ojs(['completion', 'fish'])).stdout,
      /complete -c ojs -n '__fish_use_subcommand' -a jobs/,
    );
    assert.equal((await cli.ojs(['completion', 'tcsh'])).code, 2);
  });
});

describe('ojs against a server with API keys', () => {
  let cli: CliServer;
  before(async () => {
    cli = await startCliServer({
      apiKeys: 'admin:admin-key-0123456789,producer:producer-key-0123456789',
    });
  });
  after(() => cli.close());

  it('--api-key or OJS_API_KEY authenticates; none or a weaker role is refused, exit 1', async () => {
    assert.equal((await cli.ojs(['jobs', 'list', '--api-key', 'admin-key-0123456789'])).code, 0);
    const fromEnv = await cli.ojs(['queues', 'list'], {
      env: { OJS_API_KEY: 'admin-key-0123456789' },
    });
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    const none = await cli.ojs(['jobs', 'list']);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /\[unauthenticated\]/);
    const producer = await cli.ojs([
      'dlq',
      'purge',
      '--yes',
      '--api-key',
      'producer-key-0123456789',
    ]);
    assert.equal(producer.code, 1);
    assert.match(producer.stderr, /\[permission_denied\]/);
  });
});
