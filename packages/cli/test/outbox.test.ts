/**
 * `ojs outbox list|show|retry|delete` against a live server on PostgreSQL
 * (a schema of its own) whose relay refuses an invalid envelope written
 * with the SQL API: the row is listed with its error, shown, retried (and
 * refused again), deleted; flags are parsed strictly. On SQLite the
 * commands say the outbox needs PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postgresProblem, tempStore, withPg } from '../../server/test/stores.ts';
import { type CliServer, startCliServer } from './helpers.ts';

type Json = Record<string, unknown>;
interface Page {
  entries: { id: string; state: string; attempts: number; envelope: Json; error: Json | null }[];
  counts: { pending: number; invalid: number };
  relaying: boolean;
  nextAfter?: string;
}

const skip = await postgresProblem();

describe('ojs outbox on PostgreSQL', { skip, timeout: 60_000 }, () => {
  let cli: CliServer;
  let cleanup: () => Promise<void>;
  let schema: string;

  before(async () => {
    const temp = tempStore('postgres');
    cleanup = temp.cleanup;
    schema = new URL(temp.store).searchParams.get('schema')!;
    cli = await startCliServer({ store: temp.store });
  });
  after(async () => {
    await cli?.close();
    await cleanup?.();
  });

  /** Commits envelopes through the SQL API; the relay refuses any that is invalid. */
  const commit = (...envelopes: Json[]) =>
    withPg(async (client) => {
      await client.query('BEGIN');
      for (const envelope of envelopes) {
        const literal = JSON.stringify(envelope).replaceAll("'", "''");
        await client.query(`SELECT "${schema}".enqueue_envelope('${literal}')`);
      }
      await client.query('COMMIT');
    });

  const invalidCount = async (n: number) => {
    for (;;) {
      const page = await cli.json<Page>(['outbox', 'list', '--state', 'invalid']);
      if (page.counts.invalid === n && page.counts.pending === 0 && page.entries.length === n) {
        return page;
      }
    }
  };

  it('lists invalid rows with their errors; show, retry, delete', async () => {
    const empty = await cli.ojs(['outbox']);
    assert.equal(empty.code, 0);
    assert.equal(empty.stdout, 'no outbox rows\n0 pending, 0 invalid\n');

    await commit(
      { id: 'cli-0001', type: 'report.build', args: 'not an array' },
      { type: 'email.send', args: ['ada@example.com'] },
    );
    const page = await invalidCount(1);
    assert.equal(page.relaying, true);
    const [row] = page.entries;
    assert.ok(row !== undefined);
    assert.equal(row.state, 'invalid');
    assert.equal(row.envelope.id, 'cli-0001');
    assert.equal(row.error?.code, 'invalid_payload');

    const listed = await cli.ojs(['outbox', 'list']);
    assert.match(
      listed.stdout,
      new RegExp(
        `^ID +STATE +ATTEMPTS +TYPE +JOB ID +CREATED +ERROR\\n${row.id} +invalid +1 +report\\.build +cli-0001 +\\S+ \\S+ +invalid_payload: `,
        'm',
      ),
    );
    assert.match(listed.stdout, /^0 pending, 1 invalid\n$/m);

    const shown = await cli.ojs(['outbox', 'show', row.id]);
    assert.match(shown.stdout, /^state: +invalid$/m);
    assert.match(shown.stdout, /^error: +invalid_payload: /m);
    assert.match(shown.stdout, /^retryable: +false$/m);
    assert.match(shown.stdout, /^envelope:\n\{\n {2}"id": "cli-0001",/m);

    const retried = await cli.ojs(['outbox', 'retry', row.id]);
    assert.equal(retried.stdout, `outbox row ${row.id} is pending: relayed again now\n`);
    // The relay refuses it again: invalid, one more attempt.
    for (;;) {
      const again = await cli.json<Page['entries'][number]>(['outbox', 'show', row.id]);
      if (again.state === 'invalid' && again.attempts === row.attempts + 1) break;
    }

    const refused = await cli.ojs(['outbox', 'delete', row.id]);
    assert.equal(refused.code, 2, 'no terminal to confirm on and no --yes');
    const declined = await cli.ojs(['outbox', 'delete', row.id], { answer: false });
    assert.equal(declined.stdout, 'nothing done\n');
    assert.deepEqual(declined.asked, [`Delete outbox row ${row.id}?`]);
    const deleted = await cli.ojs(['outbox', 'delete', row.id, '--yes']);
    assert.equal(deleted.stdout, `outbox row ${row.id} deleted\n`);
    const gone = await cli.ojs(['outbox', 'show', row.id]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /Outbox row '\d+' not found\. \[not_found\]/);
  });

  it('pages with --limit and --after', async () => {
    await commit(
      { type: 'page.a', args: {} },
      { type: 'page.b', args: {} },
      { type: 'page.c', args: {} },
    );
    await invalidCount(3);
    const first = await cli.ojs(['outbox', 'list', '--limit', '2']);
    const next = /^more: --after (\d+)$/m.exec(first.stdout)?.[1];
    assert.ok(next !== undefined, first.stdout);
    const second = await cli.json<Page>(['outbox', 'list', '--limit', '2', '--after', next]);
    assert.deepEqual(
      second.entries.map((e) => e.envelope.type),
      ['page.c'],
    );
    assert.equal(second.nextAfter, undefined);
    for (const entry of (await cli.json<Page>(['outbox'])).entries) {
      await cli.ojs(['outbox', 'delete', entry.id, '-y']);
    }
  });

  it('refuses bad flags and ids as usage errors', async () => {
    const cases: [string[], RegExp][] = [
      [['outbox', 'list', '--state', 'dead'], /state must be 'pending' or 'invalid'/],
      [['outbox', 'list', '--limit', '501'], /limit must be an integer from 1 to 500/],
      [['outbox', 'list', '--limit', 'ten'], /limit must be an integer/],
      [['outbox', 'list', '--after', '-3'], /not an outbox row id/],
      [['outbox', 'show', 'abc'], /'abc' is not an outbox row id/],
      [['outbox', 'retry', '0'], /not an outbox row id/],
      [['outbox', 'list', '--stat', 'invalid'], /unknown option '--stat'/],
      [['outbox', 'show'], /missing required argument 'id'/],
    ];
    for (const [args, message] of cases) {
      const result = await cli.ojs(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, message, args.join(' '));
    }
    const help = await cli.ojs(['outbox', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /list \[options\] +outbox rows, oldest first/);
  });
});

describe('ojs outbox on SQLite', () => {
  let cli: CliServer;
  before(async () => {
    cli = await startCliServer();
  });
  after(() => cli.close());

  it('says transactional enqueue needs PostgreSQL', async () => {
    const result = await cli.ojs(['outbox', 'list']);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /Transactional enqueue needs the PostgreSQL store.*\[unsupported\]/,
    );
  });
});
