/**
 * The SQL the documentation shows for transactional enqueue, run as
 * written against a live server on PostgreSQL (a schema of its own, in
 * place of `ojs`) whose relay turns committed outbox rows into jobs:
 * - the README's first ```sql block under its heading with the word
 *   "transaction": one statement that, between BEGIN and COMMIT, enqueues
 *   one job (and none after ROLLBACK);
 * - docs/transactional-enqueue.md's table trigger: every committed insert
 *   gives one job with the row's values, a rolled-back one none.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ROOT } from '../../../scripts/lib.ts';
import { type LiveServer, POSTGRES_URL, postgresProblem, startLiveServer } from './stores.ts';

/** The first ```sql block after the first heading that `heading` matches. */
function sqlBlockUnder(file: string, heading: RegExp): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const lines = text.split('\n');
  const start = lines.findIndex((line) => /^#+ /.test(line) && heading.test(line));
  assert.ok(start >= 0, `${file}: no heading matching ${heading}`);
  const open = lines.findIndex((line, i) => i > start && line.trim() === '```sql');
  assert.ok(open > start, `${file}: no sql block under ${lines[start]}`);
  const close = lines.findIndex((line, i) => i > open && line.trim() === '```');
  return lines.slice(open + 1, close).join('\n');
}

interface Job {
  id: string;
  type: string;
  queue: string;
  args: unknown[];
}

const skip = await postgresProblem();

describe('transactional enqueue as documented', { skip, timeout: 60_000 }, () => {
  let server: LiveServer;
  let schema: string;
  let db: pg.Client;

  before(async () => {
    server = await startLiveServer('postgres');
    schema = new URL(server.store).searchParams.get('schema')!;
    db = new pg.Client({ connectionString: POSTGRES_URL });
    await db.connect();
    // The application's own tables go into the test's schema too.
    await db.query(`SET search_path TO "${schema}"`);
  });
  after(async () => {
    await db?.end();
    await server?.close();
  });

  /** The documented `ojs.` in the test's schema. */
  const inSchema = (sql: string) => sql.replaceAll(/\bojs\./g, `"${schema}".`);

  const getJob = async (id: string): Promise<Job | undefined> => {
    const response = await fetch(`${server.url}/ojs/v1/jobs/${id}`);
    return response.status === 200 ? ((await response.json()) as { job: Job }).job : undefined;
  };

  const jobsOfType = async (type: string): Promise<Job[]> => {
    const response = await fetch(`${server.url}/ojs/v1/admin/jobs?type=${type}&order=asc`);
    return ((await response.json()) as { items: Job[] }).items;
  };

  /** Asks again until the relay has done its part (a committed row is relayed at once). */
  const until = async <T>(find: () => Promise<T | undefined>): Promise<T> => {
    for (;;) {
      const found = await find();
      if (found !== undefined) return found;
    }
  };

  const outboxRows = async () =>
    (await db.query(`SELECT count(*)::int AS n FROM "${schema}".outbox`)).rows[0].n as number;

  it("the README's statement enqueues one job between BEGIN and COMMIT, none after ROLLBACK", async () => {
    const statement = sqlBlockUnder('README.md', /\btransaction\b/i).trim();
    assert.match(statement, /^SELECT ojs\.enqueue\(.*\);$/s);
    assert.equal(statement.split(';').length, 2, 'one statement');

    await db.query('BEGIN');
    const dropped = (await db.query(inSchema(statement))).rows[0].enqueue as string;
    await db.query('ROLLBACK');
    await db.query('BEGIN');
    const id = (await db.query(inSchema(statement))).rows[0].enqueue as string;
    await db.query('COMMIT');

    const job = await until(() => getJob(id));
    assert.equal(job.type, 'email.send');
    assert.deepEqual(job.args, ['user@example.com']);
    // Relayed in commit order: the rolled-back one would have come first.
    assert.equal(await getJob(dropped), undefined);
    assert.deepEqual(
      (await jobsOfType('email.send')).map((j) => j.id),
      [id],
    );
  });

  it("the doc's table trigger gives one job per committed insert, none for a rolled-back one", async () => {
    const trigger = sqlBlockUnder(
      'docs/transactional-enqueue.md',
      /^## Enqueue from a table trigger$/,
    );
    await db.query(inSchema(trigger));
    const insert = (email: string, cents: number) =>
      db.query('INSERT INTO orders (email, total_cents) VALUES ($1, $2) RETURNING id', [
        email,
        cents,
      ]);

    await db.query('BEGIN');
    const first = (await insert('ada@example.com', 4200)).rows[0].id as string;
    await db.query('COMMIT');
    await db.query('BEGIN');
    await insert('mallory@example.com', 1);
    await db.query('ROLLBACK');
    await db.query('BEGIN');
    const last = (await insert('grace@example.com', 990)).rows[0].id as string;
    await db.query('COMMIT');

    const jobs = await until(async () => {
      const found = await jobsOfType('order.receipt');
      return found.some((job) => job.args[0] === Number(last)) ? found : undefined;
    });
    assert.deepEqual(
      jobs.map((job) => [job.queue, job.args]),
      [
        ['mail', [Number(first), 'ada@example.com', 4200]],
        ['mail', [Number(last), 'grace@example.com', 990]],
      ],
    );
    assert.equal(await outboxRows(), 0, 'every committed row relayed and consumed');
  });

  it("the doc's unique policy collapses repeats; a taken id is kept invalid as 'duplicate'", async () => {
    const doc = readFileSync(join(ROOT, 'docs/transactional-enqueue.md'), 'utf8').replaceAll(
      /\s+/g,
      ' ',
    );
    const options = /give the options a unique policy: `(\{.*?\})`/.exec(doc)?.[1];
    assert.ok(options !== undefined, 'the unique policy example');
    const enqueue = `SELECT ojs.enqueue('order.digest', '[7]', $1) AS id`;
    await db.query('BEGIN');
    const kept = (await db.query(inSchema(enqueue), [options])).rows[0].id as string;
    await db.query(inSchema(enqueue), [options]);
    await db.query('COMMIT');
    // The second row deduplicated: consumed without a job.
    await until(async () => ((await outboxRows()) === 0 ? true : undefined));
    assert.deepEqual(
      (await jobsOfType('order.digest')).map((job) => job.id),
      [kept],
    );

    await db.query(
      inSchema(
        `SELECT ojs.enqueue_envelope(jsonb_build_object('id', $1::text, 'type', 'x.y', 'args', '[]'::jsonb))`,
      ),
      [kept],
    );
    const refused = await until(
      async () =>
        (await db.query(`SELECT state, error FROM "${schema}".outbox WHERE state = 'invalid'`))
          .rows[0],
    );
    assert.deepEqual(refused, {
      state: 'invalid',
      error: {
        code: 'duplicate',
        message: `A job with id '${kept}' already exists.`,
        retryable: false,
        details: { existing_job_id: kept },
      },
    });
  });
});
