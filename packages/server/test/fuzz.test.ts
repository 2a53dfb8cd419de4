/**
 * Fuzz test (issue #11): seeded, structure-aware requests (fuzz-cases.ts) on
 * every route of a real listening server, on SQLite, PostgreSQL and Redis.
 * Asserts: no 5xx, no request slower than the stall bound, every error in
 * the OJS envelope with the binding's headers, the server healthy afterwards
 * and a job still going through enqueue -> fetch -> ack.
 *
 * Cases: 20,000 on SQLite and 5,000 on PostgreSQL and on Redis by default (a
 * few minutes of CI at most); more with OJS_FUZZ_CASES /
 * OJS_FUZZ_CASES_POSTGRES / OJS_FUZZ_CASES_REDIS
 * (`npm run fuzz` takes the same variables). OJS_FUZZ_SEED picks the seed
 * (printed with every failure, so a case replays with the same seed).
 * The stall bound (OJS_FUZZ_STALL_MS, default 1000 ms) is a generous
 * correctness bound against a blocked event loop, not a performance target.
 */
import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type FuzzRequest, fuzzCase, type Pools } from './fuzz-cases.ts';
import { type LiveServer, startLiveServer, storeKinds } from './stores.ts';

const SEED = Number(process.env.OJS_FUZZ_SEED ?? 20261123);
const CASES = {
  sqlite: Number(process.env.OJS_FUZZ_CASES ?? 20_000),
  postgres: Number(process.env.OJS_FUZZ_CASES_POSTGRES ?? 5_000),
  redis: Number(process.env.OJS_FUZZ_CASES_REDIS ?? 5_000),
};
const STALL_MS = Number(process.env.OJS_FUZZ_STALL_MS ?? 1000);
/** Requests in flight at once (interleavings, and a shorter run). */
const CONCURRENCY = 4;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The registered routes ("METHOD /path"), read from the router's own tree (HEAD excluded). */
function routesOf(tree: string): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const at = line.indexOf('/');
    if (at < 0) continue;
    // Top-level entries are drawn after one 4-character branch ('├── ').
    const depth = Math.floor(at / 4) - 1;
    const match = /^(\S+)(?: \(([^)]*)\))?/.exec(line.slice(at))!;
    stack.length = depth;
    const path = (depth > 0 ? stack[depth - 1]! : '') + match[1]!;
    stack[depth] = path;
    // The dashboard's files (HTML, JS, CSS under /ojs/admin) are not the OJS
    // API; packages/dashboard/test covers them.
    if (path === '/ojs/admin' || path.startsWith('/ojs/admin/')) continue;
    for (const method of (match[2] ?? '').split(',').map((m) => m.trim())) {
      if (method !== '' && method !== 'HEAD') routes.push(`${method} ${path}`);
    }
  }
  return routes.sort();
}

function send(agent: Agent, port: number, req: FuzzRequest): Promise<Answer> {
  if (req.rawRequest !== undefined) return sendRaw(port, req.rawRequest);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body !== undefined) headers['content-length'] = req.body.length;
    const r = httpRequest(
      { host: '127.0.0.1', port, method: req.method, path: req.path, headers, agent },
      (res) => {
        // An event stream (SSE) never ends by itself: its head is the answer.
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
          r.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    r.on('error', reject);
    r.end(req.body);
  });
}

/** Malformed HTTP on a fresh socket: the answer is read until the server closes. */
function sendRaw(port: number, bytes: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0)
        return reject(new Error(`no response to a raw request: ${JSON.stringify(text)}`));
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({
        status: Number(statusLine!.split(' ')[1]),
        headers,
        body: Buffer.from(text.slice(end + 4), 'latin1').toString('utf8'),
      });
    });
  });
}

/** Why an answer breaks the wire rules, or undefined. */
function envelopeProblem(method: string, answer: Answer): string | undefined {
  if (answer.headers['ojs-version'] !== '1.0') return 'missing OJS-Version';
  if (method === 'HEAD' || answer.status === 204) return undefined;
  // Successes that are not JSON documents: Prometheus text (/metrics) and event streams.
  const type = String(answer.headers['content-type']);
  if (
    answer.status < 300 &&
    (type.startsWith('text/plain') || type.startsWith('text/event-stream'))
  ) {
    return undefined;
  }
  if (answer.headers['content-type'] !== 'application/openjobspec+json') {
    return `content-type ${String(answer.headers['content-type'])}`;
  }
  let body: { error?: Record<string, unknown> };
  try {
    body = JSON.parse(answer.body);
  } catch {
    return 'body is not JSON';
  }
  if (answer.status < 400) return undefined;
  const error = body.error;
  if (typeof error !== 'object' || error === null) return 'no error object';
  if (typeof error.code !== 'string' || typeof error.message !== 'string') return 'no code/message';
  if (typeof error.retryable !== 'boolean') return 'no retryable';
  if (error.request_id !== answer.headers['x-request-id']) return 'request_id != X-Request-Id';
  return undefined;
}

/** Ids and names from successful answers, so later cases reach real records. */
function harvest(pools: Pools, answer: Answer): void {
  if (answer.status >= 300) return;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return;
  }
  const add = (list: string[], value: unknown) => {
    if (typeof value !== 'string' || list.includes(value)) return;
    list.push(value);
    if (list.length > 200) list.shift();
  };
  const job = body.job as { id?: unknown } | undefined;
  add(pools.jobIds, job?.id);
  // `jobs` is a list on listings and batch answers, a map of counts on admin stats.
  if (Array.isArray(body.jobs))
    for (const j of body.jobs as { id?: unknown }[]) add(pools.jobIds, j?.id);
  add(pools.workflowIds, (body.workflow as { id?: unknown } | undefined)?.id);
  add(pools.cronNames, (body.cron as { name?: unknown } | undefined)?.name);
}

interface Figures {
  cases: number;
  fiveHundreds: number;
  stalls: number;
  badEnvelopes: number;
  failures: string[];
  byRoute: Map<string, Set<number>>;
}

async function runFuzz(server: LiveServer, routes: string[], cases: number): Promise<Figures> {
  const port = Number(new URL(server.url).port);
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const pools: Pools = {
    jobIds: [],
    workflowIds: [],
    cronNames: [],
    queues: ['default', 'q1', 'email', 'a.b-c'],
    types: ['a.b', 'email.send', 'report.build', 'x'],
  };
  const figures: Figures = {
    cases: 0,
    fiveHundreds: 0,
    stalls: 0,
    badEnvelopes: 0,
    failures: [],
    byRoute: new Map(),
  };
  const fail = (index: number, req: FuzzRequest, what: string) => {
    if (figures.failures.length < 20) {
      const body = req.rawRequest ?? req.body;
      figures.failures.push(
        `case ${index} (seed ${SEED}) ${req.method} ${req.path.slice(0, 200)}: ${what}; body ${JSON.stringify(body?.toString('latin1').slice(0, 300))}`,
      );
    }
  };
  let next = 0;
  const lane = async () => {
    for (;;) {
      const index = next++;
      if (index >= cases) return;
      const req = fuzzCase(SEED, index, routes, pools);
      const started = performance.now();
      let answer: Answer;
      try {
        answer = await send(agent, port, req);
      } catch (error) {
        figures.fiveHundreds++;
        fail(index, req, `no answer: ${(error as Error).message}`);
        continue;
      }
      const elapsed = performance.now() - started;
      figures.cases++;
      if (!figures.byRoute.has(req.route)) figures.byRoute.set(req.route, new Set());
      figures.byRoute.get(req.route)!.add(answer.status);
      if (answer.status >= 500) {
        figures.fiveHundreds++;
        fail(index, req, `${answer.status} ${answer.body.slice(0, 300)}`);
      }
      if (elapsed > STALL_MS) {
        figures.stalls++;
        fail(index, req, `took ${Math.round(elapsed)} ms`);
      }
      const problem = envelopeProblem(req.method, answer);
      if (problem !== undefined) {
        figures.badEnvelopes++;
        fail(index, req, `${answer.status}: ${problem}; ${answer.body.slice(0, 200)}`);
      }
      harvest(pools, answer);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  agent.destroy();
  return figures;
}

for (const kind of await storeKinds()) {
  describe(`fuzz on ${kind}`, () => {
    let server: LiveServer;
    let routes: string[];
    before(async () => {
      // A production server: test mode's reset (TRUNCATE of every table) is
      // not a route there.
      server = await startLiveServer(kind);
    });
    after(async () => {
      await server?.close();
    });

    it(`${CASES[kind]} seeded hostile requests: no 5xx, no stall, every error in the envelope`, async (t) => {
      routes = routesOf(server.app.printRoutes({ commonPrefix: false }));
      assert.ok(routes.length >= 30, `routes read from the router: ${routes.join(', ')}`);
      const figures = await runFuzz(server, routes, CASES[kind]);
      const summary = `fuzz ${kind}: ${figures.cases} cases, ${figures.fiveHundreds} 5xx, ${figures.stalls} stalls, ${figures.badEnvelopes} bad envelopes (seed ${SEED})`;
      t.diagnostic(summary);
      process.stdout.write(`# ${summary}\n`);
      assert.equal(figures.cases, CASES[kind], figures.failures.join('\n'));
      assert.deepEqual(
        {
          fiveHundreds: figures.fiveHundreds,
          stalls: figures.stalls,
          badEnvelopes: figures.badEnvelopes,
        },
        { fiveHundreds: 0, stalls: 0, badEnvelopes: 0 },
        figures.failures.join('\n'),
      );
      // Every route was reached, and the route matched (not a 404 for the path itself).
      for (const route of routes) {
        const statuses = figures.byRoute.get(route);
        assert.ok(statuses !== undefined && statuses.size > 0, `route never fuzzed: ${route}`);
      }
    });

    it('the server is healthy afterwards and a job still goes through', async () => {
      const health = await fetch(`${server.url}/ojs/v1/health`);
      assert.equal(health.status, 200);
      const post = (path: string, body: unknown) =>
        fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const enqueued = await post('/ojs/v1/jobs', {
        type: 'after.fuzz',
        args: [1],
        options: { queue: 'after-fuzz' },
      });
      assert.equal(enqueued.status, 201);
      const { job } = (await enqueued.json()) as { job: { id: string } };
      const fetched = await post('/ojs/v1/workers/fetch', {
        queues: ['after-fuzz'],
        worker_id: 'after',
      });
      const { jobs } = (await fetched.json()) as { jobs: { id: string; attempt: number }[] };
      assert.equal(jobs[0]?.id, job.id);
      const acked = await post('/ojs/v1/workers/ack', {
        job_id: job.id,
        worker_id: 'after',
        attempt: jobs[0]!.attempt,
      });
      assert.equal(acked.status, 200);
      const state = (await (await fetch(`${server.url}/ojs/v1/jobs/${job.id}`)).json()) as {
        job: { state: string };
      };
      assert.equal(state.job.state, 'completed');
    });
  });
}
