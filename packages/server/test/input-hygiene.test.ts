/**
 * Input hygiene: a typo is pointed out, never silently ignored.
 * - unknown keys inside `options` are accepted and reported as warnings
 *   (unknown top-level fields stay preserved, without a warning);
 * - object `args` (the BullMQ habit) is refused with a hint to wrap it;
 * - the same mistake gets the same code on every endpoint (docs/error-codes.md);
 * - each alias in docs/wire-fields.md carries its canonical field's value;
 * - an unknown `--store` scheme is refused with the supported list.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SqliteStore, SqliteThreadStore } from '@ojs/store-sqlite';
import { checkStoreSpec, createStore } from '../src/stores.ts';
import { assertError, type Ctx, type Json, setup, snapshot } from './helpers.ts';

const TYPO = { type: 'email.send', args: ['a'], options: { queu: 'mail', prority: 5 } };

describe('unknown options keys', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  it('PUSH accepts the job and warns with the likely key', async () => {
    const res = await ctx.req('POST', '/ojs/v1/jobs', TYPO);
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.equal(body.job.queue, 'default', 'the misspelt option is not applied');
    assert.deepEqual(body.warnings, [
      'options.queu is not an enqueue option and was ignored; did you mean options.queue?',
      'options.prority is not an enqueue option and was ignored; did you mean options.priority?',
    ]);
  });

  it('an unknown key far from any option lists the known ones', async () => {
    const res = await ctx.req('POST', '/ojs/v1/jobs', {
      type: 'a.b',
      args: [],
      options: { zzzzzz: 1 },
    });
    assert.equal(res.statusCode, 201);
    assert.match(res.json().warnings[0], /options\.zzzzzz .*known: queue, priority/);
  });

  it('batch and push-many report warnings per job', async () => {
    const ok = { type: 'a.b', args: [] };
    const batch = await ctx.req('POST', '/ojs/v1/jobs/batch', { jobs: [ok, TYPO] });
    assert.equal(batch.statusCode, 201, batch.body);
    const warned = batch.json().warnings as Json[];
    assert.equal(warned.length, 1);
    assert.equal(warned[0].index, 1);
    assert.match(warned[0].warnings[0], /did you mean options\.queue\?/);
    const many = await ctx.req('POST', '/ojs/v1/jobs/many', { jobs: [ok, TYPO] });
    const results = many.json().results as Json[];
    assert.equal(results[0].warnings, undefined);
    assert.equal(results[1].status, 201);
    assert.match(results[1].warnings[1], /did you mean options\.priority\?/);
  });

  it('cron registration reports a typo in its job options too', async () => {
    const res = await ctx.req('POST', '/ojs/v1/cron', {
      name: 'nightly',
      expression: '0 3 * * *',
      job_template: { type: 'a.b', args: [], options: { queu: 'reports' } },
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json().warnings, [
      'options.queu is not an enqueue option and was ignored; did you mean options.queue?',
    ]);
    const flat = await ctx.req('POST', '/ojs/v1/cron', {
      name: 'hourly',
      cron: '0 * * * *',
      type: 'a.b',
      args: [],
      options: { queue: 'ok' },
    });
    assert.equal(flat.json().warnings, undefined);
  });

  it('workflows report typos in their jobs and callbacks, by path', async () => {
    const chain = await ctx.req('POST', '/ojs/v1/workflows', {
      type: 'chain',
      steps: [
        { type: 'a.b', args: [] },
        { type: 'a.c', args: [], options: { prority: 1 } },
      ],
    });
    assert.equal(chain.statusCode, 201, chain.body);
    assert.deepEqual(chain.json().warnings, [
      'steps[1].options.prority is not an enqueue option and was ignored; did you mean options.priority?',
    ]);
    const batch = await ctx.req('POST', '/ojs/v1/workflows', {
      type: 'batch',
      jobs: [{ type: 'a.b', args: [], options: { queue: 'ok' } }],
      callbacks: { on_complete: { type: 'a.done', args: [], options: { queu: 'x' } } },
    });
    assert.deepEqual(batch.json().warnings, [
      'callbacks.on_complete.options.queu is not an enqueue option and was ignored; did you mean options.queue?',
    ]);
    const graph = await ctx.req('POST', '/ojs/v1/workflows', {
      name: 'g',
      steps: [{ id: 's1', type: 'a.b', args: [], depends_on: [] }],
    });
    assert.equal(graph.statusCode, 201, graph.body);
    assert.equal(graph.json().warnings, undefined);
  });

  it('known options and unknown top-level fields give no warning; the field is preserved', async () => {
    const res = await ctx.req('POST', '/ojs/v1/jobs', {
      type: 'a.b',
      args: [],
      x_custom_field: { kept: true },
      options: { queue: 'q', priority: 1, retry_policy: { max_attempts: 2 }, delay_until: null },
    });
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.equal(body.warnings, undefined);
    assert.deepEqual(body.job.x_custom_field, { kept: true });
  });
});

describe('object args', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  const bad = { type: 'email.send', args: { to: 'ada@example.com' } };
  for (const [path, body] of [
    ['/ojs/v1/jobs', bad],
    ['/ojs/v1/jobs/batch', { jobs: [bad] }],
    ['/ojs/v1/cron', { name: 'nightly', expression: '0 3 * * *', job_template: bad }],
  ] as const) {
    it(`${path}: 400 invalid_payload with a hint to wrap them in [ ], nothing stored`, async () => {
      const before = await snapshot(ctx.engine);
      const error = assertError(await ctx.req('POST', path, body), 400, 'invalid_payload');
      assert.match(error.message, /not an object: wrap it in \[ \]/);
      assert.match(error.hint, /"args": \[\{"to": "ada@example\.com"\}\]/);
      assert.equal(error.details.received, 'object');
      assert.equal(await snapshot(ctx.engine), before);
    });
  }

  it('push-many: the item gets the same code; a workflow step keeps it in step_error_code', async () => {
    const many = (await ctx.req('POST', '/ojs/v1/jobs/many', { jobs: [bad] })).json();
    assert.equal(many.results[0].error.code, 'invalid_payload');
    const workflow = await ctx.req('POST', '/ojs/v1/workflows', { type: 'chain', steps: [bad] });
    const error = assertError(workflow, 400, 'invalid_request');
    assert.equal(error.details.step_error_code, 'invalid_payload');
  });

  it('a string is refused without the object hint', async () => {
    const error = assertError(
      await ctx.req('POST', '/ojs/v1/jobs', { type: 'a.b', args: 'x' }),
      400,
      'invalid_payload',
    );
    assert.doesNotMatch(error.hint, /wrap/);
  });
});

describe('one code per kind of mistake across endpoints', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  const cases: [string, string, unknown, string, number][] = [
    // An envelope field out of range: invalid_payload wherever an envelope goes.
    [
      'priority on PUSH',
      '/ojs/v1/jobs',
      { type: 'a.b', args: [], options: { priority: 500 } },
      'invalid_payload',
      400,
    ],
    [
      'priority in a batch',
      '/ojs/v1/jobs/batch',
      { jobs: [{ type: 'a.b', args: [], options: { priority: 500 } }] },
      'invalid_payload',
      400,
    ],
    [
      'priority in a cron template',
      '/ojs/v1/cron',
      {
        name: 'c',
        expression: '* * * * *',
        job_template: { type: 'a.b', args: [], options: { priority: 500 } },
      },
      'invalid_payload',
      400,
    ],
    // No jobs: the same code on both batch endpoints.
    ['empty batch', '/ojs/v1/jobs/batch', { jobs: [] }, 'invalid_payload', 400],
    ['empty push-many', '/ojs/v1/jobs/many', { jobs: [] }, 'invalid_payload', 400],
    // A semantically invalid retry policy: 422 everywhere.
    [
      'retry on PUSH',
      '/ojs/v1/jobs',
      { type: 'a.b', args: [], options: { retry: { max_attempts: -1 } } },
      'validation_error',
      422,
    ],
    [
      'retry in a batch',
      '/ojs/v1/jobs/batch',
      { jobs: [{ type: 'a.b', args: [], options: { retry: { max_attempts: -1 } } }] },
      'validation_error',
      422,
    ],
    [
      'retry in a cron template',
      '/ojs/v1/cron',
      {
        name: 'c',
        expression: '* * * * *',
        job_template: { type: 'a.b', args: [], options: { retry: { max_attempts: -1 } } },
      },
      'validation_error',
      422,
    ],
    // A non-envelope request field: invalid_request.
    [
      'fetch queue name',
      '/ojs/v1/workers/fetch',
      { queues: ['BAD QUEUE'] },
      'invalid_request',
      400,
    ],
    [
      'cron expression',
      '/ojs/v1/cron',
      { name: 'c', expression: 'bad', job_template: { type: 'a.b', args: [] } },
      'invalid_request',
      400,
    ],
  ];
  for (const [label, path, body, code, status] of cases) {
    it(`${label}: ${status} ${code}`, async () => {
      assertError(await ctx.req('POST', path, body), status, code);
    });
  }

  it('listing filters: the same code on /jobs and /admin/jobs', async () => {
    assertError(await ctx.req('GET', '/ojs/v1/jobs?state=nope'), 400, 'invalid_request');
    assertError(await ctx.req('GET', '/ojs/v1/admin/jobs?state=nope'), 400, 'invalid_request');
  });
});

describe('aliases carry the canonical value (docs/wire-fields.md)', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  it('fetch: job is jobs[0], absent when nothing is handed out', async () => {
    await ctx.enqueue({ type: 'a.b', args: [1] });
    const res = (await ctx.req('POST', '/ojs/v1/workers/fetch', { queues: ['default'] })).json();
    assert.equal(res.jobs.length, 1);
    assert.deepEqual(res.job, res.jobs[0]);
    const empty = (await ctx.req('POST', '/ojs/v1/workers/fetch', { queues: ['default'] })).json();
    assert.deepEqual(empty, { jobs: [] });
  });

  it('cron: cron_job is cron, cron is expression, status follows enabled', async () => {
    const res = await ctx.req('POST', '/ojs/v1/cron', {
      name: 'nightly',
      expression: '0 3 * * *',
      job_template: { type: 'a.b', args: [] },
    });
    const body = res.json();
    assert.deepEqual(body.cron_job, body.cron);
    assert.equal(body.cron.cron, body.cron.expression);
    assert.equal(body.cron.status, body.cron.enabled ? 'active' : 'disabled');
    const list = (await ctx.req('GET', '/ojs/v1/cron')).json();
    assert.deepEqual(list.cron_jobs, list.crons);
  });
});

describe('store specs', () => {
  it('refuses an unknown scheme with the likely one and the supported list', () => {
    assert.throws(
      () => checkStoreSpec('postgress://postgres@127.0.0.1:5432/test'),
      /Unknown store scheme 'postgress:'.*did you mean 'postgres:'\?.*Supported: sqlite:PATH.*postgres:\/\/.*redis:\/\//,
    );
    assert.throws(
      () => checkStoreSpec('mysql://root@localhost/db'),
      /Unknown store scheme 'mysql:'/,
    );
  });

  it('SQLite runs on the event loop unless OJS_SQLITE_THREAD=on asks for its thread (decision 0080)', async () => {
    const { optionsFromEnv } = await import('../src/serve.ts');
    assert.equal(optionsFromEnv({}).sqliteThread, undefined);
    assert.equal(optionsFromEnv({ OJS_SQLITE_THREAD: 'on' }).sqliteThread, true);
    assert.throws(
      () => optionsFromEnv({ OJS_SQLITE_THREAD: 'yes please' }),
      /OJS_SQLITE_THREAD must be on or off/,
    );
    for (const [thread, expected] of [
      [undefined, SqliteStore],
      [false, SqliteStore],
      [true, SqliteThreadStore],
    ] as const) {
      const store = await createStore(':memory:', { sqliteThread: thread });
      try {
        assert.equal(store.constructor, expected, `sqliteThread ${thread}`);
      } finally {
        await store.close();
      }
    }
  });

  it('refuses it before creating anything (no folder named after the scheme)', async () => {
    await assert.rejects(createStore('postgress://x/y'), /Unknown store scheme/);
  });

  it('redis:// without the Redis store package: a clear error naming it', async (t) => {
    try {
      await import('@ojs/store-redis' as string);
      t.skip('@ojs/store-redis is installed: redis:// is served');
      return;
    } catch {}
    await assert.rejects(
      createStore('redis://127.0.0.1:6379'),
      /The Redis store needs the package @ojs\/store-redis, which is not installed in this build\. Supported here: sqlite:PATH/,
    );
  });

  it('accepts the supported forms and plain paths', () => {
    for (const spec of [
      ':memory:',
      'sqlite:./data/x.db',
      './data/x.db',
      'data/x.db',
      'C:\\data\\x.db',
      'postgres://u@h/db',
      'postgresql://u@h/db',
      'redis://h:6379',
      'rediss://h:6379',
    ]) {
      checkStoreSpec(spec);
    }
  });
});
