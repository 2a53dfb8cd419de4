/**
 * Job versioning through the HTTP binding (issue 7, seed 004 §5, §8, §10,
 * §11; features §8-9): the version on the envelope, the schema registry and
 * canary routing admin routes, fetch/register/heartbeat with `handlers`,
 * and the manifest entry.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { assertError, assertWireHeaders, type Ctx, type Json, setup } from './helpers.ts';

const TYPE = 'invoice.generate';
const SCHEMAS = '/ojs/v1/admin/schemas';
const ROUTING = '/ojs/v1/admin/routing';
const V1_RANGE = '>=1.0 <2.0';
const V2_RANGE = '>=2.0 <3.0';

const V1_SCHEMA = {
  type: 'array',
  prefixItems: [
    {
      type: 'object',
      required: ['customer_id', 'amount'],
      properties: { customer_id: { type: 'string' }, amount: { type: 'integer' } },
    },
  ],
};
const V2_SCHEMA = {
  type: 'array',
  prefixItems: [
    {
      type: 'object',
      required: ['customer_id', 'amount', 'currency'],
      properties: {
        customer_id: { type: 'string' },
        amount: { type: 'integer' },
        currency: { type: 'string', pattern: '^[A-Z]{3}$' },
      },
    },
  ],
};

let ctx: Ctx;

beforeEach(async () => {
  ctx = await setup();
});

afterEach(async () => {
  await ctx.close();
});

async function ok(
  method: 'GET' | 'PUT' | 'POST' | 'DELETE',
  url: string,
  payload?: unknown,
  status = 200,
): Promise<Json> {
  const res = await ctx.req(method, url, payload);
  assert.equal(res.statusCode, status, `${method} ${url}: ${res.body}`);
  assertWireHeaders(res);
  return res.json();
}

async function register(type: string, version: string, body: unknown): Promise<Json> {
  return ok('PUT', `${SCHEMAS}/${type}/${version}`, body, 201);
}

const ids = (jobs: Json[]) => jobs.map((j: Json) => j.id);

describe('version on the envelope (VER-001, VER-002)', () => {
  it('stores and echoes version exactly as given: strings as strings, integers as numbers', async () => {
    const str = await ctx.enqueue({ type: TYPE, version: '2.0', args: [] });
    assert.equal(str.version, '2.0');
    assert.equal(str.type, TYPE);
    const int = await ctx.enqueue({ type: TYPE, version: 2, args: [] });
    assert.equal(int.version, 2);
    const patch = await ctx.enqueue({ type: TYPE, version: '1.2.3', args: [] });
    assert.equal(patch.version, '1.2.3');
    for (const job of [str, int, patch]) {
      assert.equal(job.version_num, undefined, 'internal field stays internal');
      const res = await ok('GET', `/ojs/v1/jobs/${job.id}`);
      assert.equal(res.job.version, job.version);
    }
    const unversioned = await ctx.enqueue({ type: TYPE, args: [] });
    assert.equal('version' in unversioned, false);
  });

  it('parses type@version; an explicit version wins', async () => {
    const at = await ctx.enqueue({ type: `${TYPE}@2.0`, args: [] });
    assert.equal(at.type, TYPE);
    assert.equal(at.version, '2.0');
    const both = await ctx.enqueue({ type: `${TYPE}@1.0`, version: '2.1', args: [] });
    assert.equal(both.type, TYPE);
    assert.equal(both.version, '2.1');
    // The explicit version decides routing too.
    const [got] = await ctx.fetch({
      queues: ['default'],
      count: 10,
      handlers: [{ type: TYPE, versions: '1.0' }],
    });
    assert.equal(got, undefined);
    const jobs = await ctx.fetch({
      queues: ['default'],
      count: 10,
      handlers: [{ type: TYPE, versions: V2_RANGE }],
    });
    assert.deepEqual(ids(jobs), [at.id, both.id]);
    assert.equal(jobs[1].version, '2.1');
    assert.equal(jobs[1].type, TYPE);
  });

  it('rejects malformed versions with 400', async () => {
    for (const version of ['abc', '2.x', '^1.0', 2.5, -1, {}, [], true, '']) {
      const res = await ctx.req('POST', '/ojs/v1/jobs', { type: TYPE, version, args: [] });
      assertError(res, 400, null);
    }
    // A malformed suffix is not a version: the type keeps the @ and fails its pattern.
    assertError(await ctx.req('POST', '/ojs/v1/jobs', { type: `${TYPE}@v2`, args: [] }), 400, null);
    assertError(await ctx.req('POST', '/ojs/v1/jobs', { type: `${TYPE}@`, args: [] }), 400, null);
  });

  it('keeps each version in a batch', async () => {
    const res = await ok(
      'POST',
      '/ojs/v1/jobs/batch',
      {
        jobs: [
          { type: TYPE, version: '1.0', args: [] },
          { type: `${TYPE}@2.0`, args: [] },
          { type: TYPE, version: 3, args: [] },
          { type: TYPE, args: [] },
        ],
      },
      201,
    );
    assert.deepEqual(
      res.jobs.map((j: Json) => [j.type, j.version]),
      [
        [TYPE, '1.0'],
        [TYPE, '2.0'],
        [TYPE, 3],
        [TYPE, undefined],
      ],
    );
  });
});

describe('schema registry routes', () => {
  it('PUT registers (201) and GET returns the flat entry; integer path versions come back as numbers', async () => {
    const created = await register(TYPE, '2.0', {
      type: TYPE,
      version: '2.0',
      args_schema: V2_SCHEMA,
      compatible_with: ['1.0'],
    });
    assert.equal(created.type, TYPE);
    assert.equal(created.version, '2.0');
    assert.deepEqual(created.schema, V2_SCHEMA);
    assert.deepEqual(created.compatible_with, ['1.0']);
    assert.equal(typeof created.created_at, 'string');
    assert.equal(created.version_num, undefined);
    const got = await ok('GET', `${SCHEMAS}/${TYPE}/2.0`);
    assert.deepEqual(got, created);
    // 2, "2.0" and "2.0.0" name the same schema.
    assert.deepEqual(await ok('GET', `${SCHEMAS}/${TYPE}/2`), created);
    const int = await register('ml.train', '1', { schema: { type: 'array' } });
    assert.equal(int.version, 1);
    assert.equal((await ok('GET', `${SCHEMAS}/ml.train/1`)).version, 1);
  });

  it('409 for a version already registered (in any spelling)', async () => {
    await register(TYPE, '1.0', { schema: V1_SCHEMA });
    assertError(
      await ctx.req('PUT', `${SCHEMAS}/${TYPE}/1.0`, { schema: V2_SCHEMA }),
      409,
      'conflict',
    );
    assertError(
      await ctx.req('PUT', `${SCHEMAS}/${TYPE}/1`, { schema: V2_SCHEMA }),
      409,
      'conflict',
    );
    // The first registration is untouched.
    assert.deepEqual((await ok('GET', `${SCHEMAS}/${TYPE}/1.0`)).schema, V1_SCHEMA);
  });

  it('400 for an empty body, a missing schema, invalid JSON, an invalid JSON Schema or a bad version', async () => {
    const url = `${SCHEMAS}/${TYPE}/1.0`;
    assertError(await ctx.req('PUT', url, {}), 400, 'invalid_request');
    assertError(await ctx.req('PUT', url), 400, null);
    assertError(await ctx.req('PUT', url, { schema: 'array' }), 400, 'invalid_request');
    assertError(await ctx.req('PUT', url, { schema: [] }), 400, 'invalid_request');
    assertError(await ctx.req('PUT', url, [{ schema: V1_SCHEMA }]), 400, null);
    assertError(
      await ctx.req('PUT', url, '{"schema": {', { 'content-type': 'application/json' }),
      400,
      'invalid_payload',
    );
    const invalid = assertError(
      await ctx.req('PUT', url, { schema: { type: 'no-such-type' } }),
      400,
      'invalid_request',
    );
    assert.equal(invalid.details.field, 'schema');
    assertError(
      await ctx.req('PUT', url, { schema: { type: 'array', minItems: 'two' } }),
      400,
      'invalid_request',
    );
    assertError(
      await ctx.req('PUT', url, { schema: V1_SCHEMA, compatible_with: 'x' }),
      400,
      'invalid_request',
    );
    assertError(
      await ctx.req('PUT', `${SCHEMAS}/${TYPE}/abc`, { schema: V1_SCHEMA }),
      400,
      'invalid_request',
    );
    assertError(
      await ctx.req('PUT', `${SCHEMAS}/${TYPE}/1.0.0.0`, { schema: V1_SCHEMA }),
      400,
      'invalid_request',
    );
    // Nothing was stored by any of these.
    assertError(await ctx.req('GET', `${SCHEMAS}/${TYPE}`), 404, 'not_found');
  });

  it('404 for unknown types and versions (GET, latest, DELETE)', async () => {
    assertError(await ctx.req('GET', `${SCHEMAS}/no.such.type`), 404, 'not_found');
    assertError(await ctx.req('GET', `${SCHEMAS}/no.such.type/1.0`), 404, 'not_found');
    assertError(await ctx.req('DELETE', `${SCHEMAS}/no.such.type/1.0`), 404, 'not_found');
    await register(TYPE, '1.0', { schema: V1_SCHEMA });
    assertError(await ctx.req('GET', `${SCHEMAS}/${TYPE}/1.1`), 404, 'not_found');
    assertError(await ctx.req('DELETE', `${SCHEMAS}/${TYPE}/2.0`), 404, 'not_found');
  });

  it('latest is the highest version (numeric order), and falls back after a delete', async () => {
    await register(TYPE, '1.0', { schema: V1_SCHEMA });
    await register(TYPE, '10.0', { schema: V2_SCHEMA });
    await register(TYPE, '2', { schema: V2_SCHEMA });
    assert.equal((await ok('GET', `${SCHEMAS}/${TYPE}`)).version, '10.0');
    const deleted = await ok('DELETE', `${SCHEMAS}/${TYPE}/10.0`);
    assert.equal(deleted.deleted, true);
    assert.equal(deleted.version, '10.0');
    assert.equal((await ok('GET', `${SCHEMAS}/${TYPE}`)).version, 2);
    await ok('DELETE', `${SCHEMAS}/${TYPE}/2`);
    assert.equal((await ok('GET', `${SCHEMAS}/${TYPE}`)).version, '1.0');
    await ok('DELETE', `${SCHEMAS}/${TYPE}/1.0`);
    assertError(await ctx.req('GET', `${SCHEMAS}/${TYPE}`), 404, 'not_found');
    // A deleted version can be registered again.
    await register(TYPE, '1.0', { schema: V2_SCHEMA });
  });

  it('lists versions newest first with is_latest on the newest only', async () => {
    const empty = await ok('GET', `${SCHEMAS}/no.schemas.here/versions`);
    assert.deepEqual(empty.versions, []);
    await register(TYPE, '1.0', { schema: V1_SCHEMA });
    ctx.clock.advance(1000);
    await register(TYPE, '1.1', { schema: V1_SCHEMA });
    ctx.clock.advance(1000);
    await register(TYPE, '2.0', { schema: V2_SCHEMA, compatible_with: ['1.1'] });
    // Another type's schemas stay out of the list.
    await register('invoice.generated', '9.0', { schema: V1_SCHEMA });
    const list = await ok('GET', `${SCHEMAS}/${TYPE}/versions`);
    assert.equal(list.type, TYPE);
    assert.deepEqual(
      list.versions.map((v: Json) => [v.version, v.is_latest]),
      [
        ['2.0', true],
        ['1.1', false],
        ['1.0', false],
      ],
    );
    assert.deepEqual(list.versions[0].compatible_with, ['1.1']);
    for (const v of list.versions) assert.equal(typeof v.created_at, 'string');
    assert.ok(list.versions[0].created_at > list.versions[2].created_at);
  });

  it('validation mode per type: GET defaults to warn, PUT sets it, bad modes are 400', async () => {
    assert.deepEqual(await ok('GET', `${SCHEMAS}/${TYPE}/validation`), {
      type: TYPE,
      validation: { mode: 'warn' },
    });
    assert.deepEqual(await ok('PUT', `${SCHEMAS}/${TYPE}/validation`, { mode: 'strict' }), {
      type: TYPE,
      validation: { mode: 'strict' },
    });
    assert.equal((await ok('GET', `${SCHEMAS}/${TYPE}/validation`)).validation.mode, 'strict');
    assert.equal((await ok('GET', `${SCHEMAS}/email.send/validation`)).validation.mode, 'warn');
    assertError(
      await ctx.req('PUT', `${SCHEMAS}/${TYPE}/validation`, { mode: 'loud' }),
      400,
      'invalid_request',
    );
    assertError(await ctx.req('PUT', `${SCHEMAS}/${TYPE}/validation`, {}), 400, 'invalid_request');
    assertError(await ctx.req('PUT', `${SCHEMAS}/${TYPE}/validation`), 400, null);
  });

  it('enqueue: strict answers 422 naming every violation, warn 201 with warnings, off 201 silently', async () => {
    await register(TYPE, '2.0', { schema: V2_SCHEMA });
    await ok('PUT', `${SCHEMAS}/${TYPE}/validation`, { mode: 'strict' });
    const bad = {
      type: TYPE,
      version: '2.0',
      args: [{ customer_id: 1, amount: 'x', currency: 'usd' }],
    };
    const error = assertError(await ctx.req('POST', '/ojs/v1/jobs', bad), 422, 'validation_error');
    const violations = error.details.validation_errors;
    assert.equal(violations.length, 3, JSON.stringify(violations));
    const text = JSON.stringify(violations);
    for (const field of ['customer_id', 'amount', 'currency'])
      assert.match(text, new RegExp(field));
    assertError(
      await ctx.req('POST', '/ojs/v1/jobs/batch', {
        jobs: [
          { type: TYPE, version: '2.0', args: [{ customer_id: 'c', amount: 1, currency: 'EUR' }] },
          bad,
        ],
      }),
      422,
      'validation_error',
    );
    const stats = await ok('GET', '/ojs/v1/queues/default/stats');
    assert.equal(JSON.stringify(stats).includes('"available":1'), false);
    assert.equal((await ctx.engine.listEvents({ types: ['job.enqueued'], limit: 10 })).length, 0);

    await ok('PUT', `${SCHEMAS}/${TYPE}/validation`, { mode: 'warn' });
    const warned = await ok('POST', '/ojs/v1/jobs', bad, 201);
    assert.equal(warned.job.type, TYPE);
    assert.equal(warned.warnings.length, 3);
    const good = await ok(
      'POST',
      '/ojs/v1/jobs',
      { type: TYPE, version: '2.0', args: [{ customer_id: 'c', amount: 1, currency: 'EUR' }] },
      201,
    );
    assert.equal(good.warnings, undefined);

    await ok('PUT', `${SCHEMAS}/${TYPE}/validation`, { mode: 'off' });
    const off = await ok('POST', '/ojs/v1/jobs', bad, 201);
    assert.equal(off.warnings, undefined);
  });
});

describe('schema registry: reported defects', () => {
  it('rejects a job type that no job can have', async () => {
    assertError(
      await ctx.req('PUT', `${SCHEMAS}/Bad%20Type/1.0`, { schema: V1_SCHEMA }),
      400,
      'invalid_request',
    );
  });

  it('PUT .../validation accepts the {validation: {mode}} shape that GET returns (features §9)', async () => {
    const got = await ok('GET', `${SCHEMAS}/${TYPE}/validation`);
    got.validation.mode = 'strict';
    await ok('PUT', `${SCHEMAS}/${TYPE}/validation`, { validation: got.validation });
    assert.equal((await ok('GET', `${SCHEMAS}/${TYPE}/validation`)).validation.mode, 'strict');
  });

  it('a batch enqueue in warn mode reports the warnings', async () => {
    await register(TYPE, '2.0', { schema: V2_SCHEMA });
    const res = await ok(
      'POST',
      '/ojs/v1/jobs/batch',
      { jobs: [{ type: TYPE, version: '2.0', args: [{}] }] },
      201,
    );
    assert.equal(res.jobs.length, 1);
    assert.ok(JSON.stringify(res).includes('currency'), JSON.stringify(res));
  });
});

describe('canary routing routes', () => {
  const RULES = [
    { version: '2.0', weight: 10 },
    { version: '1.0', weight: 90 },
  ];

  it('PUT stores the rules, GET returns them, jobs carry routed_version, DELETE removes them', async () => {
    assertError(await ctx.req('GET', `${ROUTING}/${TYPE}`), 404, 'not_found');
    const put = await ok('PUT', `${ROUTING}/${TYPE}`, {
      rules: RULES,
      auto_rollback: {
        error_rate_threshold: 0.05,
        evaluation_window: 'PT5M',
        action: 'route_all_to_previous',
      },
    });
    assert.equal(put.routing.type, TYPE);
    assert.deepEqual(put.routing.rules, RULES);
    assert.equal(put.routing.state, 'active');
    assert.deepEqual(put.routing.auto_rollback, {
      error_rate_threshold: 0.05,
      evaluation_window: 'PT5M',
      action: 'route_all_to_previous',
      min_samples: 10,
    });
    const got = await ok('GET', `${ROUTING}/${TYPE}`);
    assert.deepEqual(got.routing, put.routing);

    const routed: string[] = [];
    for (let i = 0; i < 20; i++) {
      const job = await ctx.enqueue({ type: TYPE, args: [i] });
      routed.push(job.routed_version);
      const read = await ok('GET', `/ojs/v1/jobs/${job.id}`);
      assert.equal(read.job.routed_version, job.routed_version);
    }
    assert.equal(routed.filter((v) => v === '2.0').length, 2);
    assert.equal(routed.filter((v) => v === '1.0').length, 18);
    const v2 = await ctx.fetch({
      queues: ['default'],
      count: 50,
      handlers: [{ type: TYPE, versions: V2_RANGE }],
    });
    assert.equal(v2.length, 2);
    for (const job of v2) assert.equal(job.routed_version, '2.0');

    assert.deepEqual(await ok('DELETE', `${ROUTING}/${TYPE}`), { deleted: true, type: TYPE });
    assertError(await ctx.req('GET', `${ROUTING}/${TYPE}`), 404, 'not_found');
    assertError(await ctx.req('DELETE', `${ROUTING}/${TYPE}`), 404, 'not_found');
    const plain = await ctx.enqueue({ type: TYPE, args: [] });
    assert.equal(plain.routed_version, undefined);
  });

  it('PUT replaces the previous rules', async () => {
    await ok('PUT', `${ROUTING}/${TYPE}`, { rules: RULES });
    await ok('PUT', `${ROUTING}/${TYPE}`, { rules: [{ version: '2.0', weight: 1 }] });
    const got = await ok('GET', `${ROUTING}/${TYPE}`);
    assert.deepEqual(got.routing.rules, [{ version: '2.0', weight: 1 }]);
    assert.equal(got.routing.auto_rollback, undefined);
  });

  it('400 for bad rules: missing, empty, bad weights, bad versions, bad auto_rollback', async () => {
    const rule = { version: '2.0', weight: 1 };
    const bodies: [unknown, string?][] = [
      [{}, 'rules'],
      [{ rules: [] }, 'rules'],
      [{ rules: {} }, 'rules'],
      [{ rules: [{ version: '2.0', weight: -5 }] }, 'rules[0].weight'],
      [{ rules: [{ version: '2.0', weight: 0.5 }] }, 'rules[0].weight'],
      [{ rules: [{ version: '2.0', weight: '10' }] }, 'rules[0].weight'],
      [{ rules: [{ version: '2.0' }] }, 'rules[0].weight'],
      [
        {
          rules: [
            { version: '2.0', weight: 0 },
            { version: '1.0', weight: 0 },
          ],
        },
        'rules',
      ],
      [{ rules: [rule, { version: 'two', weight: 1 }] }, 'rules[1].version'],
      [{ rules: [{ version: '>=2.0', weight: 1 }] }, 'rules[0].version'],
      [{ rules: [{ weight: 1 }] }, 'rules[0].version'],
      [{ rules: ['2.0'] }, 'rules[0].version'],
      [{ rules: [rule], auto_rollback: 0.1 }, 'auto_rollback'],
      [{ rules: [rule], auto_rollback: { evaluation_window: 'PT5M' } }, 'auto_rollback'],
      [
        { rules: [rule], auto_rollback: { error_rate_threshold: -0.1, evaluation_window: 'PT5M' } },
        'auto_rollback',
      ],
      [
        { rules: [rule], auto_rollback: { error_rate_threshold: 2, evaluation_window: 'PT5M' } },
        'auto_rollback',
      ],
      [{ rules: [rule], auto_rollback: { error_rate_threshold: 0.1 } }, 'auto_rollback'],
      [
        { rules: [rule], auto_rollback: { error_rate_threshold: 0.1, evaluation_window: '5m' } },
        'auto_rollback',
      ],
      [
        {
          rules: [rule],
          auto_rollback: { error_rate_threshold: 0.1, evaluation_window: 'PT5M', action: 'pause' },
        },
        'auto_rollback.action',
      ],
      [
        {
          rules: [rule],
          auto_rollback: { error_rate_threshold: 0.1, evaluation_window: 'PT5M', min_samples: 1.5 },
        },
        'auto_rollback.min_samples',
      ],
    ];
    for (const [body, field] of bodies) {
      const error = assertError(
        await ctx.req('PUT', `${ROUTING}/${TYPE}`, body),
        400,
        'invalid_request',
      );
      assert.equal(error.details.field, field, JSON.stringify(body));
    }
    assertError(await ctx.req('PUT', `${ROUTING}/${TYPE}`), 400, null);
    assertError(await ctx.req('PUT', `${ROUTING}/${TYPE}`, [{ rules: [rule] }]), 400, null);
    assertError(await ctx.req('GET', `${ROUTING}/${TYPE}`), 404, 'not_found');
  });

  it('a V2 that fails over HTTP trips the rollback visible on GET', async () => {
    await ok('PUT', `${ROUTING}/${TYPE}`, {
      rules: [
        { version: '2.0', weight: 1 },
        { version: '1.0', weight: 1 },
      ],
      auto_rollback: { error_rate_threshold: 0.2, evaluation_window: 'PT5M', min_samples: 3 },
    });
    for (let i = 0; i < 6; i++) await ctx.enqueue({ type: TYPE, args: [i] });
    const v2 = await ctx.fetch({
      queues: ['default'],
      count: 10,
      worker_id: 'w2',
      handlers: [{ type: TYPE, versions: '2.0' }],
    });
    assert.equal(v2.length, 3);
    for (const job of v2) {
      await ok('POST', '/ojs/v1/workers/nack', {
        job_id: job.id,
        worker_id: 'w2',
        error: { code: 'boom', message: 'broken' },
      });
    }
    const got = await ok('GET', `${ROUTING}/${TYPE}`);
    assert.equal(got.routing.state, 'rolled_back');
    assert.deepEqual(got.routing.rules, [{ version: '1.0', weight: 100 }]);
    const events = await ok('GET', '/ojs/v1/events?types=routing.rolled_back');
    assert.ok(JSON.stringify(events).includes('routing.rolled_back'), JSON.stringify(events));
    const next = await ctx.enqueue({ type: TYPE, args: [] });
    assert.equal(next.routed_version, '1.0');
  });
});

describe('workers: fetch, register and heartbeat with handlers (VER-003..006)', () => {
  async function seed(): Promise<{ v1: Json; v2: Json; none: Json; other: Json }> {
    return {
      v1: await ctx.enqueue({ type: TYPE, version: '1.0', args: [] }),
      v2: await ctx.enqueue({ type: TYPE, version: '2.0', args: [] }),
      none: await ctx.enqueue({ type: TYPE, args: [] }),
      other: await ctx.enqueue({ type: 'email.send', version: '5.0', args: [] }),
    };
  }

  it('fetch with handlers gets only admitted versions, unversioned too, and holds the rest', async () => {
    const { v1, v2, none, other } = await seed();
    const first = await ctx.fetch({
      queues: ['default'],
      count: 10,
      handlers: [{ type: TYPE, versions: '>=1.0, <2.0' }],
    });
    assert.deepEqual(ids(first), [v1.id, none.id]);
    assert.equal(first[0].version, '1.0');
    const held = await ok('GET', `/ojs/v1/jobs/${v2.id}`);
    assert.equal(held.job.state, 'available');
    const second = await ctx.fetch({
      queues: ['default'],
      count: 10,
      handlers: [
        { type: TYPE, versions: '>=2.0' },
        { type: 'email.send', versions: '*' },
      ],
    });
    assert.deepEqual(ids(second), [v2.id, other.id]);
  });

  it('bare type strings in handlers mean any version', async () => {
    const { v1, v2, none } = await seed();
    const jobs = await ctx.fetch({ queues: ['default'], count: 10, handlers: [TYPE] });
    assert.deepEqual(ids(jobs), [v1.id, v2.id, none.id]);
  });

  it('malformed handlers or ranges in a fetch are 400 and claim nothing', async () => {
    await seed();
    const bad: unknown[] = [
      [{ type: TYPE, versions: '^1.0' }],
      [{ type: TYPE, versions: '~1.0' }],
      [{ type: TYPE, versions: 'abc' }],
      [{ type: TYPE, versions: '>=3.0 <1.0' }],
      [{ type: TYPE, versions: '' }],
      [{ versions: '*' }],
      [{ type: 5 }],
      { type: TYPE },
      'invoice.generate',
    ];
    for (const handlers of bad) {
      const res = await ctx.req('POST', '/ojs/v1/workers/fetch', { queues: ['default'], handlers });
      assertError(res, 400, 'invalid_request');
    }
    const error = assertError(
      await ctx.req('POST', '/ojs/v1/workers/fetch', {
        queues: ['default'],
        handlers: [{ type: 'email.send' }, { type: TYPE, versions: '^2.0' }],
      }),
      400,
      'invalid_request',
    );
    assert.equal(error.details.field, 'handlers[1].versions');
    const stats = await ctx.engine.queueStats('default');
    assert.equal(stats.counts.active, 0);
  });

  it('POST /workers/register declares ranges that later fetches without handlers use', async () => {
    const { v1, v2, none } = await seed();
    const reg = await ok('POST', '/ojs/v1/workers/register', {
      worker_id: 'worker-v2',
      queues: ['default'],
      concurrency: 4,
      handlers: [{ type: TYPE, versions: V2_RANGE }],
    });
    assert.equal(reg.ok, true);
    assert.equal(reg.worker_id, 'worker-v2');
    assert.equal(typeof reg.server_time, 'string');
    const jobs = await ctx.fetch({ queues: ['default'], count: 10, worker_id: 'worker-v2' });
    assert.deepEqual(ids(jobs), [v2.id, none.id], 'no email.send: not declared');
    // An explicit handlers list in the fetch wins over the registration.
    const explicit = await ctx.fetch({
      queues: ['default'],
      count: 10,
      worker_id: 'worker-v2',
      handlers: [{ type: TYPE, versions: V1_RANGE }],
    });
    assert.deepEqual(ids(explicit), [v1.id]);
    const stored = await ctx.store.getSetting('worker', 'worker-v2');
    assert.deepEqual(stored?.value.handlers, [{ type: TYPE, versions: V2_RANGE }]);
    assert.equal(stored?.value.concurrency, 4);
  });

  it('register rejects a missing worker_id and malformed handlers with 400', async () => {
    assertError(
      await ctx.req('POST', '/ojs/v1/workers/register', {
        handlers: [{ type: TYPE, versions: '*' }],
      }),
      400,
      'invalid_request',
    );
    for (const handlers of [
      [{ type: TYPE, versions: '^1.0' }],
      [{ type: TYPE, versions: '>=2.0 <2.0' }],
      'x',
    ]) {
      assertError(
        await ctx.req('POST', '/ojs/v1/workers/register', { worker_id: 'w', handlers }),
        400,
        'invalid_request',
      );
    }
    assertError(await ctx.req('POST', '/ojs/v1/workers/register'), 400, null);
    // Nothing was declared: a fetch from w is unrestricted.
    const { v1, v2 } = await seed();
    const jobs = await ctx.fetch({ queues: ['default'], count: 2, worker_id: 'w' });
    assert.deepEqual(ids(jobs), [v1.id, v2.id]);
  });

  it('heartbeat with handlers re-declares the ranges; malformed ranges are 400', async () => {
    const { v1, v2 } = await seed();
    await ok('POST', '/ojs/v1/workers/register', {
      worker_id: 'w-hb',
      handlers: [{ type: TYPE, versions: V2_RANGE }],
    });
    const hb = await ok('POST', '/ojs/v1/workers/heartbeat', {
      worker_id: 'w-hb',
      active_jobs: [],
      handlers: [{ type: TYPE, versions: '1.0' }],
    });
    assert.equal(hb.state, 'running');
    const jobs = await ctx.fetch({ queues: ['default'], count: 1, worker_id: 'w-hb' });
    assert.deepEqual(ids(jobs), [v1.id]);
    assertError(
      await ctx.req('POST', '/ojs/v1/workers/heartbeat', {
        worker_id: 'w-hb',
        active_jobs: [],
        handlers: [{ type: TYPE, versions: '^2.0' }],
      }),
      400,
      'invalid_request',
    );
    // The rejected heartbeat changed nothing.
    const after = await ctx.fetch({ queues: ['default'], count: 10, worker_id: 'w-hb' });
    assert.equal(ids(after).includes(v2.id), false);
    // A heartbeat alone (no registration) declares a worker too.
    await ok('POST', '/ojs/v1/workers/heartbeat', {
      worker_id: 'w-fresh',
      active_jobs: [],
      handlers: [{ type: TYPE, versions: '>=2.0' }],
    });
    assert.deepEqual(
      ids(await ctx.fetch({ queues: ['default'], count: 10, worker_id: 'w-fresh' })),
      [v2.id],
    );
  });
});

describe('manifest', () => {
  it('lists the job-versioning extension', async () => {
    const manifest = await ok('GET', '/ojs/manifest');
    const experimental = manifest.extensions.experimental as Json[];
    const entry = experimental.find(
      (e: Json) => e.uri === 'urn:ojs:ext:experimental:job-versioning',
    );
    assert.ok(entry, JSON.stringify(manifest.extensions));
    assert.equal(entry.name, 'job-versioning');
    assert.equal(entry.version, '0.1.0');
    assert.equal(manifest.capabilities.job_versioning, true);
    assert.equal(manifest.capabilities.schema_validation, true);
  });
});
