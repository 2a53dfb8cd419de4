/**
 * Structure-aware request generator for the fuzz test: for every route of
 * the HTTP binding a well-formed request (bodies, path and query parameters
 * drawn from ids the server has handed out), then, most of the time, one or
 * more mutations: a field replaced by a hostile value (huge or deep, out of
 * range, NUL, lone surrogate, wrong type), a field dropped or added, a path
 * or query parameter replaced, the body's bytes corrupted (truncated JSON,
 * invalid UTF-8), the media type changed, headers inflated. Every case is
 * drawn from its own seeded generator, so a case number and a seed replay it.
 */

/** mulberry32: small, fast, good enough to pick mutations; seeded per case. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** JSON text inserted verbatim (numbers JSON.stringify cannot write, deep nesting). */
class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

type Value = unknown;
type Obj = Record<string, Value>;

export function toJsonText(value: Value): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) {
    // A plain loop: a mutated array may carry a data key named `constructor`.
    const items: string[] = [];
    for (let i = 0; i < value.length; i++) items.push(toJsonText(value[i]));
    return `[${items.join(',')}]`;
  }
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export interface Pools {
  jobIds: string[];
  workflowIds: string[];
  cronNames: string[];
  queues: string[];
  types: string[];
}

export interface FuzzRequest {
  method: string;
  /** Path with query, as sent (may hold raw bytes 0x80-0xff). */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** The route template this case targets (coverage). */
  route: string;
  /** Send as raw bytes on a socket (malformed HTTP). */
  rawRequest?: Buffer;
}

class Gen {
  readonly r: () => number;
  readonly pools: Pools;
  constructor(seed: number, pools: Pools) {
    this.r = rng(seed);
    this.pools = pools;
  }
  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  // ------------------------------------------------------------ hostile values

  hostileString(): string {
    return this.pick([
      () => '',
      () => ' ',
      () => 'a'.repeat(101 + this.int(400)),
      () => 'x'.repeat(70_000),
      () => 'a\u0000b',
      () => '\ud800',
      () => 'x\udfffy',
      () => 'é😀☃',
      () => '../../etc/passwd',
      () => '%00%FF',
      () => "' OR 1=1 --",
      () => '<script>alert(1)</script>',
      () => '__proto__',
      () => 'constructor',
      () => '*',
      () => '>=1.0 <3.0',
      () => '>=99999999999.0',
      () => 'P99999999Y',
      () => 'PT0S',
      () => '+PT1S',
      () => '-PT5S',
      () => '9999-12-31T23:59:59Z',
      () => '0000-01-01T00:00:00Z',
      () => '2026-02-30T25:61:61+99:99',
      () => '@every 0s',
      () => '* * * * * * *',
      () => '0 0 31 2 *',
      () => 'Mars/Olympus_Mons',
      () => this.uuid(),
      () => '01900000-0000-7000-8000-00000000dead',
      () => 'default',
      () => 'a.b',
    ])();
  }

  hostileNumber(): Value {
    return this.pick([
      () => 0,
      () => -1,
      () => 1,
      () => 1.5,
      () => 2 ** 31,
      () => 2 ** 53 + 2,
      () => 1e308,
      () => -1e308,
      () => 9e15,
      () => 1e-300,
      () => new Raw('1e999'),
      () => new Raw('-1e999'),
      () => new Raw('99999999999999999999'),
      () => new Raw('-0'),
    ])();
  }

  deep(depth: number): Raw {
    const open = this.chance(0.5) ? '[' : '{"a":';
    const close = open === '[' ? ']' : '}';
    return new Raw(`${open.repeat(depth)}1${close.repeat(depth)}`);
  }

  hostileValue(): Value {
    return this.pick([
      () => this.hostileString(),
      () => this.hostileNumber(),
      () => null,
      () => true,
      () => [],
      () => ({}),
      () => this.deep(this.pick([63, 65, 200, 5000, 100_000])),
      () => Array.from({ length: this.pick([300, 2000]) }, () => this.hostileString().slice(0, 20)),
      () => Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i])),
      () => JSON.parse('{"__proto__":{"polluted":1},"constructor":{"prototype":{}}}') as Obj,
      () => [this.hostileString(), this.hostileNumber()],
      () => ({ [this.hostileString().slice(0, 300)]: this.hostileNumber() }),
    ])();
  }

  uuid(): string {
    const hex = () => this.int(16).toString(16);
    const part = (n: number) => Array.from({ length: n }, hex).join('');
    return `${part(8)}-${part(4)}-7${part(3)}-8${part(3)}-${part(12)}`;
  }

  // ------------------------------------------------------------ well-formed parts

  type(): string {
    return this.chance(0.8) ? this.pick(this.pools.types) : this.hostileString();
  }
  queue(): string {
    return this.chance(0.9) ? this.pick(this.pools.queues) : this.hostileString();
  }
  jobId(): string {
    return this.pools.jobIds.length > 0 && this.chance(0.85)
      ? this.pick(this.pools.jobIds)
      : this.uuid();
  }
  workflowId(): string {
    return this.pools.workflowIds.length > 0 && this.chance(0.8)
      ? this.pick(this.pools.workflowIds)
      : this.uuid();
  }
  cronName(): string {
    return this.pools.cronNames.length > 0 && this.chance(0.7)
      ? this.pick(this.pools.cronNames)
      : `cron-${this.int(20)}`;
  }
  args(): Value[] {
    return this.pick([[], [1, 'two', { three: 3 }], [{ to: 'ada@example.com' }], [null, true]]);
  }
  job(): Obj {
    const job: Obj = { type: this.type(), args: this.args() };
    const options: Obj = {};
    if (this.chance(0.5)) options.queue = this.queue();
    if (this.chance(0.2)) options.priority = this.pick([-100, 0, 10, 100, 'high']);
    if (this.chance(0.2)) options.retry = { max_attempts: this.int(5), initial_interval: 'PT1S' };
    if (this.chance(0.1)) options.scheduled_at = '+PT1H';
    if (this.chance(0.1)) options.unique = { keys: ['type', 'args'], period: 'PT1H' };
    if (this.chance(0.1)) options.rate_limit = { max_per_second: 10 };
    if (this.chance(0.1)) options.timeout_ms = 60_000;
    if (this.chance(0.1)) options.visibility_timeout_ms = 30_000;
    if (this.chance(0.1)) options.tags = ['a', 'b'];
    if (this.chance(0.05)) options.pending = true;
    if (Object.keys(options).length > 0) job.options = options;
    if (this.chance(0.2)) job.meta = { trace: 't', n: 1 };
    return job;
  }
  handlers(): Value {
    return [{ type: this.type(), versions: this.pick(['*', '1.0', '>=1.0 <3.0']) }];
  }
  schema(): Obj {
    return this.pick<() => Obj>([
      () => ({ schema: { type: 'array', items: [{ type: 'string' }] } }),
      () => ({ schema: { type: 'array', prefixItems: [{ type: 'string', pattern: '^[a-z]+$' }] } }),
      () => ({ schema: { type: 'array', minItems: 1 }, compatible_with: ['1.0'] }),
      () => ({ schema: { type: 'array', items: Array.from({ length: 1200 }, () => ({})) } }),
      () => ({ schema: { type: 'array', items: { type: 'string', pattern: '(a+)+$' } } }),
      () => ({ schema: { $ref: '#/definitions/missing' } }),
      () => ({ schema: { type: 'nonsense' } }),
      () => ({ schema: { type: 'array', uniqueItems: true } }),
    ])();
  }

  // ------------------------------------------------------------ route templates

  template(route: string): { path: string; body?: Value; query?: Obj } {
    const [method, template] = route.split(' ') as [string, string];
    const params = (path: string) =>
      path
        .replace(':id', segment(template.includes('workflows') ? this.workflowId() : this.jobId()))
        .replace(':name', segment(template.includes('cron') ? this.cronName() : this.queue()))
        .replace(':type', segment(this.type()))
        .replace(':version', this.pick(['1', '2.0', '1.2.3', 'x']));
    const path = params(template);
    const workerId = `w${this.int(4)}`;
    switch (`${method} ${template}`) {
      case 'POST /ojs/v1/jobs':
        return { path, body: this.job() };
      case 'POST /ojs/v1/jobs/many':
      case 'POST /ojs/v1/jobs/batch':
        return { path, body: { jobs: Array.from({ length: 1 + this.int(20) }, () => this.job()) } };
      case 'POST /ojs/v1/workers/fetch':
        return {
          path,
          body: {
            queues: [this.queue()],
            count: 1 + this.int(5),
            worker_id: workerId,
            ...(this.chance(0.2) ? { handlers: this.handlers() } : {}),
            ...(this.chance(0.1) ? { visibility_timeout_ms: 60_000 } : {}),
          },
        };
      case 'POST /ojs/v1/workers/ack':
        return {
          path,
          body: { job_id: this.jobId(), worker_id: workerId, attempt: 1, result: { ok: 1 } },
        };
      case 'POST /ojs/v1/workers/nack':
        return {
          path,
          body: {
            job_id: this.jobId(),
            worker_id: workerId,
            attempt: 1,
            error: { code: 'e', message: 'failed', retryable: this.chance(0.5) },
            ...(this.chance(0.2) ? { requeue: true } : {}),
          },
        };
      case 'POST /ojs/v1/workers/ack/batch':
        return {
          path,
          body: {
            acks: [{ job_id: this.jobId(), worker_id: workerId, attempt: 1 }],
            nacks: [{ job_id: this.jobId(), worker_id: workerId, attempt: 1, error: {} }],
          },
        };
      case 'POST /ojs/v1/workers/heartbeat':
        return {
          path,
          body: {
            worker_id: workerId,
            active_jobs: [this.jobId()],
            ...(this.chance(0.2) ? { handlers: this.handlers() } : {}),
          },
        };
      case 'POST /ojs/v1/workers/register':
        return {
          path,
          body: { worker_id: workerId, handlers: this.handlers(), concurrency: 4 },
        };
      case 'POST /ojs/v1/workflows':
        return {
          path,
          body: {
            type: this.pick(['chain', 'group', 'batch']),
            name: 'wf',
            steps: [this.job(), this.job()],
            ...(this.chance(0.3) ? { callbacks: { on_complete: this.job() } } : {}),
          },
        };
      case 'POST /ojs/v1/cron':
        return {
          path,
          body: {
            name: this.cronName(),
            expression: this.pick(['0 * * * *', '@hourly', '@every 90s', '*/5 * * * * *']),
            timezone: this.pick(['UTC', 'Europe/Berlin']),
            job_template: { type: this.type(), args: this.args() },
          },
        };
      case 'PATCH /ojs/v1/cron/:name':
        return { path, body: { enabled: this.chance(0.5) } };
      // `.invalid` never resolves (RFC 2606): a subscription the fuzzer makes delivers nowhere.
      case 'POST /ojs/v1/webhooks/subscriptions':
        return {
          path,
          body: {
            url: 'https://hooks.example.invalid/ojs',
            events: [this.pick(['job.completed', 'job.*', '*'])],
            ...(this.chance(0.3) ? { filter: { queues: ['default'] } } : {}),
          },
        };
      case 'PATCH /ojs/v1/webhooks/subscriptions/:id':
        return { path, body: { active: this.chance(0.5), events: ['job.failed'] } };
      case 'PUT /ojs/v1/admin/schemas/:type/:version':
        return { path, body: this.schema() };
      case 'PUT /ojs/v1/admin/schemas/:type/validation':
        return { path, body: { mode: this.pick(['strict', 'warn', 'off']) } };
      case 'PUT /ojs/v1/admin/routing/:type':
        return {
          path,
          body: {
            rules: [
              { version: '1.0', weight: 90 },
              { version: '2.0', weight: 10 },
            ],
          },
        };
      case 'GET /ojs/v1/dead-letter':
      case 'GET /ojs/v1/queues':
        return { path, query: { limit: 10, offset: 0 } };
      case 'GET /ojs/v1/events':
        return { path, query: { limit: 10, types: 'job.completed', after: '' } };
      default:
        // Any other route (new ones included): its parameters, and a small
        // object body for the methods that take one.
        return method === 'GET' || method === 'DELETE' ? { path } : { path, body: {} };
    }
  }

  mutateBody(body: Value): Value {
    if (typeof body !== 'object' || body === null || body instanceof Raw) return body;
    const copy = structuredClone(body) as Obj;
    const mutations = 1 + this.int(3);
    for (let i = 0; i < mutations; i++) {
      // Walk to a random object or array inside the body, then change one slot.
      let target: Obj | Value[] = copy;
      for (let d = 0; d < 4; d++) {
        const keys = Object.keys(target);
        if (keys.length === 0 || this.chance(0.4)) break;
        const next = (target as Obj)[this.pick(keys)];
        if (typeof next !== 'object' || next === null || next instanceof Raw) break;
        target = next as Obj;
      }
      const keys = Object.keys(target);
      const key = keys.length > 0 && this.chance(0.8) ? this.pick(keys) : this.hostileString();
      if (this.chance(0.15)) delete (target as Obj)[key];
      else if (Array.isArray(target) && this.chance(0.5)) target.push(this.hostileValue());
      else {
        // defineProperty: a key named __proto__ is data, as JSON.parse makes it.
        Object.defineProperty(target, key, {
          value: this.hostileValue(),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
    return copy;
  }

  mutatePath(path: string): string {
    const segments = path.split('/');
    const index = 3 + this.int(Math.max(1, segments.length - 3));
    segments[index] = this.pick([
      () => segment(this.hostileString().slice(0, 2000)),
      () => '%FF%FE',
      () => '%',
      () => '%ED%A0%80',
      () => 'a'.repeat(1100),
      () => '..',
      () => '',
      () => '%2F%2F',
      () => '\u00e9\u00ff',
    ])();
    return segments.join('/');
  }

  mutateQuery(query: Obj): Obj {
    const out: Obj = { ...query };
    out[this.pick(['limit', 'offset', 'types', 'queues', 'after', 'queue'])] = this.pick([
      '99999999999999999999',
      '-1',
      '1e308',
      '0x10',
      '',
      '%00',
      'NaN',
      '1.5',
      'a'.repeat(3000),
    ]);
    return out;
  }
}

/** A path segment: every byte outside unreserved ASCII percent-encoded (never throws). */
function segment(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9._~-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const BAD_CONTENT_TYPES = [
  'text/plain',
  'application/json; charset=latin1',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  '',
  'application/openjobspec+json; v=2',
  '*/*',
];

function queryString(query: Obj | undefined): string {
  if (query === undefined) return '';
  const parts = Object.entries(query).map(([k, v]) => `${k}=${String(v)}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

/** Case `index` of a run seeded with `seed`, over the given routes ("METHOD /path"). */
export function fuzzCase(seed: number, index: number, routes: string[], pools: Pools): FuzzRequest {
  const g = new Gen((seed * 1_000_003 + index) >>> 0, pools);
  const route = routes[index % routes.length]!;
  const [method] = route.split(' ') as [string];
  const { path: basePath, body: baseBody, query: baseQuery } = g.template(route);
  const roll = g.r();
  let path = basePath;
  let body = baseBody;
  let query = baseQuery;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let bytes: Buffer | undefined;
  if (roll < 0.3) {
    // well-formed
  } else if (roll < 0.62) {
    body = g.mutateBody(body ?? {});
  } else if (roll < 0.72) {
    path = g.mutatePath(path);
  } else if (roll < 0.77) {
    query = g.mutateQuery(query ?? {});
  } else if (roll < 0.85) {
    const text = Buffer.from(toJsonText(body ?? {}));
    bytes = g.pick([
      () => text.subarray(0, g.int(text.length)),
      () => Buffer.concat([text.subarray(0, 2), Buffer.from([0xff, 0xc3, 0x28]), text.subarray(2)]),
      () => Buffer.from(g.pick(['[]', '"x"', '1', 'null', 'true', '{}{}', '\ufeff{}', '   '])),
      () => Buffer.from(toJsonText(g.hostileValue())),
    ])();
  } else if (roll < 0.9) {
    headers['content-type'] = g.pick(BAD_CONTENT_TYPES);
    if (headers['content-type'] === '') delete headers['content-type'];
  } else if (roll < 0.95) {
    headers[g.pick(['x-request-id', 'authorization', 'ojs-version', 'x-big'])] = g.pick([
      'a'.repeat(300),
      `Bearer ${'k'.repeat(200)}`,
      '2.0',
      'x'.repeat(20_000),
      '\u00ff\u00fe',
    ]);
  } else {
    const raw = g.pick([
      `${method} ${path} HTTP/1.1\r\nHost: t\r\nBroken header\r\n\r\n`,
      `${method} ${path} HTTP/9.9\r\nHost: t\r\n\r\n`,
      `${method} ${path} HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n`,
      `${method} ${path} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
      `GET /ojs/v1/jobs/\u00c3\u00a9 HTTP/1.1\r\nHost: t\r\n\r\n`,
      `\u0000\u0001\u0002 / HTTP/1.1\r\n\r\n`,
    ]);
    return {
      method,
      path,
      headers,
      route,
      rawRequest: Buffer.from(raw, 'latin1'),
    };
  }
  if (bytes === undefined && body !== undefined && method !== 'GET' && method !== 'DELETE') {
    bytes = Buffer.from(toJsonText(body));
  }
  if (method === 'GET' || method === 'DELETE') bytes = undefined;
  if (bytes === undefined) delete headers['content-type'];
  return { method, path: path + queryString(query), headers, body: bytes, route };
}
