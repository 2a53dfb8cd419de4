/**
 * ioredis against node-redis (`redis` v5) for the Redis store's call
 * pattern (decision 0085): a small Lua script with 20 arguments (a job's
 * id, a ~300-byte JSON document and 18 short columns, as the store's apply
 * calls carry) called with EVALSHA and, as the store does since its
 * functions library, with FCALL; 50 calls in flight, each client's own
 * pipelining, and explicit pipelines of 50. Prints ops/s, the client
 * process's CPU per call (process.cpuUsage) and redis-server's (from
 * /proc), median of alternating rounds; then whether one call with a very
 * large argument list (a batch enqueue of thousands of jobs is one call of
 * ~13 arguments per job) goes through each client. Not part of `npm test`.
 *
 *   node packages/bench/src/redis-clients.ts                 # 100,000 calls per case, 3 rounds
 *   node packages/bench/src/redis-clients.ts --ops 20000 --rounds 2
 *
 * Loopback only; uses the key `ojs-bench-clients-<pid>` and the function
 * library `ojsbench_clients_<pid>` and deletes both at the end.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { cpuSeconds } from './proc.ts';
import { isLoopbackHost } from './procs.ts';
import { REDIS_HOST, REDIS_URL, redisInfo } from './redis.ts';

const USAGE = `Usage: node packages/bench/src/redis-clients.ts [flags]

  --ops N        timed calls per case and round (default 100000)
  --rounds N     alternating rounds; medians are printed (default 3)
  --inflight N   calls in flight in the in-flight cases (default 50)
  --batch N      calls per explicit pipeline (default 50)
  --big X        on: also try one call with 10,000-200,000 arguments per client (default on)
  -h, --help     this text
`;

function fail(message: string): never {
  process.stderr.write(`redis-clients: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let values: Record<string, string | boolean | undefined>;
try {
  ({ values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    allowPositionals: false,
    options: {
      ops: { type: 'string', default: '100000' },
      rounds: { type: 'string', default: '3' },
      inflight: { type: 'string', default: '50' },
      batch: { type: 'string', default: '50' },
      big: { type: 'string', default: 'on' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (error) {
  fail((error as Error).message);
}
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
function int(flag: string, min: number, max: number): number {
  const raw = String(values[flag]).replaceAll('_', '');
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max)
    fail(`--${flag}: '${values[flag]}' is not an integer in ${min}..${max}`);
  return n;
}
const OPS = int('ops', 1000, 10_000_000);
const ROUNDS = int('rounds', 1, 20);
const INFLIGHT = int('inflight', 1, 10_000);
const BATCH = int('batch', 1, 10_000);
if (values.big !== 'on' && values.big !== 'off') fail(`--big: '${values.big}' is not on or off`);
const BIG = values.big === 'on';
if (!isLoopbackHost(REDIS_HOST)) fail(`REDIS_HOST ${REDIS_HOST} is not a loopback address`);

const KEY = `ojs-bench-clients-${process.pid}`;
const LIB = `ojsbench_clients_${process.pid}`;
const FN = `${LIB}_put`;
const BODY = 'redis.call("HSET", KEYS[1], ARGV[1], ARGV[2]) return {1, #ARGV}';
const SCRIPT = BODY;
const LIBRARY = `#!lua name=${LIB}
redis.register_function('${FN}', function(KEYS, ARGV) ${BODY} end)`;

const DOC = JSON.stringify({
  specversion: '1.0',
  id: '01a223d8-363b-7047-95cc-23db4927a7d5',
  type: 'bench.noop',
  queue: 'bench',
  args: [{ i: 1, t: 1795897701865.123, to: 'user@example.com', n: 1 }],
  meta: {},
  state: 'available',
  priority: 0,
  attempt: 0,
  visibility_timeout_ms: 300000,
  created_at: '2026-11-28T20:28:21.947Z',
  enqueued_at: '2026-11-28T20:28:21.947Z',
});
/** The 20 arguments of call i: id (1,000 distinct, so the hash stays small), document, 18 columns. */
function argsOf(i: number): string[] {
  return [
    `job-${i % 1000}`,
    DOC,
    'bench',
    'available',
    '0',
    'bench.noop',
    '1',
    '0',
    '',
    '1795897701865',
    '',
    '',
    '',
    '',
    '',
    '',
    '',
    's0',
    'q:bench',
    String(i),
  ];
}

type Call = (i: number) => Promise<unknown>;
type Batch = (from: number, count: number) => Promise<unknown>;

interface Case {
  name: string;
  setup(): Promise<void>;
  /** One call at a time per in-flight slot, or undefined when the case is batch-only. */
  call?: Call;
  batch?: Batch;
  close(): Promise<void>;
}

let sha = '';

function ioredisCases(command: 'evalsha' | 'fcall'): Case[] {
  const make = (name: string, autoPipelining: boolean, mode: 'inflight' | 'pipeline'): Case => {
    let redis: Redis;
    const argv = (i: number): (string | number)[] =>
      command === 'evalsha' ? [sha, 1, KEY, ...argsOf(i)] : [FN, 1, KEY, ...argsOf(i)];
    return {
      name,
      async setup() {
        redis = new Redis(REDIS_URL, {
          lazyConnect: true,
          enableAutoPipelining: autoPipelining,
          maxRetriesPerRequest: 0,
        });
        redis.on('error', () => {});
        await redis.connect();
      },
      ...(mode === 'inflight'
        ? {
            call: (i: number) =>
              command === 'evalsha'
                ? redis.evalsha(sha, 1, KEY, ...argsOf(i))
                : redis.fcall(FN, 1, KEY, ...argsOf(i)),
          }
        : {
            batch: async (from: number, count: number) => {
              const pipeline = redis.pipeline();
              for (let k = 0; k < count; k++)
                pipeline.call(command === 'evalsha' ? 'EVALSHA' : 'FCALL', ...argv(from + k));
              const replies = (await pipeline.exec()) ?? [];
              for (const [error] of replies) if (error) throw error;
            },
          }),
      async close() {
        redis.disconnect();
      },
    };
  };
  const c = command.toUpperCase();
  return [
    make(`ioredis ${c}, ${INFLIGHT} in flight`, false, 'inflight'),
    make(
      `ioredis ${c}, ${INFLIGHT} in flight, enableAutoPipelining (the store's setting)`,
      true,
      'inflight',
    ),
    make(`ioredis ${c}, pipeline() of ${BATCH}`, false, 'pipeline'),
  ];
}

function nodeRedisCases(command: 'evalsha' | 'fcall'): Case[] {
  const make = (name: string, mode: 'inflight' | 'pipeline'): Case => {
    let client: ReturnType<typeof createClient>;
    const options = (i: number) => ({ keys: [KEY], arguments: argsOf(i) });
    return {
      name,
      async setup() {
        client = createClient({ url: REDIS_URL });
        client.on('error', () => {});
        await client.connect();
      },
      ...(mode === 'inflight'
        ? {
            call: (i: number) =>
              command === 'evalsha'
                ? client.evalSha(sha, options(i))
                : client.fCall(FN, options(i)),
          }
        : {
            batch: async (from: number, count: number) => {
              const multi = client.multi();
              for (let k = 0; k < count; k++) {
                if (command === 'evalsha') multi.evalSha(sha, options(from + k));
                else multi.fCall(FN, options(from + k));
              }
              await multi.execAsPipeline();
            },
          }),
      async close() {
        await client.close().catch(() => client.destroy());
      },
    };
  };
  const c = command.toUpperCase();
  return [
    make(`redis v5 ${c}, ${INFLIGHT} in flight (its own same-tick pipelining)`, 'inflight'),
    make(`redis v5 ${c}, multi().execAsPipeline() of ${BATCH}`, 'pipeline'),
  ];
}

interface Sample {
  ops_per_s: number;
  client_cpu_us_per_call: number;
  redis_cpu_us_per_call: number | null;
}

async function drive(c: Case, ops: number): Promise<void> {
  if (c.call) {
    let next = 0;
    const call = c.call;
    await Promise.all(
      Array.from({ length: Math.min(INFLIGHT, ops) }, async () => {
        while (next < ops) await call(next++);
      }),
    );
  } else {
    for (let from = 0; from < ops; from += BATCH) await c.batch!(from, Math.min(BATCH, ops - from));
  }
}

async function measure(c: Case, redisPid: number | null): Promise<Sample> {
  await c.setup();
  try {
    await drive(c, Math.min(5000, OPS)); // warm-up: JIT, connection
    const cpu0 = process.cpuUsage();
    const redis0 = cpuSeconds(redisPid);
    const t0 = performance.now();
    await drive(c, OPS);
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const redis1 = cpuSeconds(redisPid);
    return {
      ops_per_s: Math.round((OPS * 1000) / ms),
      client_cpu_us_per_call: Math.round(((cpu.user + cpu.system) / OPS) * 100) / 100,
      redis_cpu_us_per_call:
        redis0 === null || redis1 === null
          ? null
          : Math.round((((redis1 - redis0) * 1e6) / OPS) * 100) / 100,
    };
  } finally {
    await c.close();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * One call with `n` arguments: does it go through each client (the store
 * sends a batch enqueue as one call)? Each attempt on a fresh connection;
 * an exception thrown outside the call's promise (ioredis's auto-pipelining
 * does that) is caught here and reported instead of ending the process.
 */
async function bigCalls(): Promise<Record<string, Record<string, string>>> {
  const out: Record<string, Record<string, string>> = {};
  const sizes = [10_000, 50_000, 100_000, 200_000];
  const args = (n: number) => Array.from({ length: n }, (_, i) => (i === 1 ? 'x' : `a${i}`));
  let uncaught: Error | undefined;
  const onUncaught = (error: Error) => {
    uncaught ??= error;
  };
  process.on('uncaughtException', onUncaught);
  const describe = (error: unknown) =>
    `${(error as Error).name}: ${(error as Error).message}`.slice(0, 100);
  type Attempt = { open(): Promise<(a: string[]) => Promise<unknown>>; close(): Promise<void> };
  const ioredis = (auto: boolean, style: 'spread' | 'array'): Attempt => {
    let redis: Redis;
    return {
      async open() {
        redis = new Redis(REDIS_URL, {
          lazyConnect: true,
          enableAutoPipelining: auto,
          maxRetriesPerRequest: 0,
        });
        redis.on('error', () => {});
        await redis.connect();
        return (a) =>
          style === 'spread'
            ? redis.fcall(FN, 1, KEY, ...a)
            : redis.call('FCALL', [FN, 1, KEY, ...a]);
      },
      async close() {
        redis.disconnect();
      },
    };
  };
  const nodeRedis = (style: 'typed' | 'raw'): Attempt => {
    let client: ReturnType<typeof createClient>;
    return {
      async open() {
        client = createClient({ url: REDIS_URL });
        client.on('error', () => {});
        await client.connect();
        return (a) =>
          style === 'typed'
            ? client.fCall(FN, { keys: [KEY], arguments: a })
            : client.sendCommand(['FCALL', FN, '1', KEY, ...a]);
      },
      async close() {
        await client.close().catch(() => client.destroy());
      },
    };
  };
  const attempts: [string, () => Attempt][] = [
    ['ioredis fcall(fn, 1, key, ...args)', () => ioredis(false, 'spread')],
    ['ioredis fcall(fn, 1, key, ...args), enableAutoPipelining', () => ioredis(true, 'spread')],
    ["ioredis call('FCALL', [fn, 1, key, ...args])", () => ioredis(false, 'array')],
    [
      "ioredis call('FCALL', [fn, 1, key, ...args]), enableAutoPipelining",
      () => ioredis(true, 'array'),
    ],
    ['redis v5 fCall(fn, {keys, arguments: args})', () => nodeRedis('typed')],
    ["redis v5 sendCommand(['FCALL', fn, '1', key, ...args])", () => nodeRedis('raw')],
  ];
  try {
    for (const [label, make] of attempts) {
      out[label] = {};
      for (const n of sizes) {
        const attempt = make();
        uncaught = undefined;
        let result: string;
        try {
          const call = await attempt.open();
          const a = args(n);
          const reply = await Promise.race([
            call(a).then(
              () => 'ok',
              (error: unknown) => `rejected (${describe(error)})`,
            ),
            new Promise<string>((resolve) => setTimeout(() => resolve('no answer in 5 s'), 5000)),
          ]);
          await new Promise((resolve) => setTimeout(resolve, 50));
          result = uncaught ? `${reply}, then uncaught ${describe(uncaught)}` : reply;
        } catch (error) {
          result = `threw (${describe(error)})`;
        } finally {
          await attempt.close();
        }
        out[label]![String(n)] = result;
      }
    }
  } finally {
    process.off('uncaughtException', onUncaught);
  }
  return out;
}

async function main(): Promise<void> {
  const info = await redisInfo();
  const admin = new Redis(REDIS_URL, { maxRetriesPerRequest: 0 });
  admin.on('error', () => {});
  sha = (await admin.script('LOAD', SCRIPT)) as string;
  await admin.call('FUNCTION', 'LOAD', 'REPLACE', LIBRARY);
  const require = createRequire(import.meta.url);
  const versions = {
    node: process.version,
    ioredis: (require('ioredis/package.json') as { version: string }).version,
    redis: (require('redis/package.json') as { version: string }).version,
    redis_server: info.version,
  };
  process.stderr.write(
    `redis-clients: ${JSON.stringify(versions)}; ${OPS.toLocaleString('en-US')} calls per case, ${ROUNDS} rounds, 20 arguments per call\n`,
  );
  try {
    const cases = [
      ...ioredisCases('evalsha'),
      ...nodeRedisCases('evalsha'),
      ...ioredisCases('fcall'),
      ...nodeRedisCases('fcall'),
    ];
    const samples = new Map<string, Sample[]>(cases.map((c) => [c.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order between rounds so neither client always runs first.
      const order = round % 2 === 0 ? cases : [...cases].reverse();
      for (const c of order) {
        const s = await measure(c, info.pid);
        samples.get(c.name)!.push(s);
        process.stderr.write(
          `  round ${round + 1} ${c.name}: ${s.ops_per_s.toLocaleString('en-US')}/s, client ${s.client_cpu_us_per_call} us/call, redis ${s.redis_cpu_us_per_call ?? '?'} us/call\n`,
        );
      }
    }
    const rows = cases.map((c) => {
      const s = samples.get(c.name)!;
      const redisCpu = s.map((x) => x.redis_cpu_us_per_call).filter((x) => x !== null);
      return {
        case: c.name,
        ops_per_s: Math.round(median(s.map((x) => x.ops_per_s))),
        client_cpu_us_per_call: median(s.map((x) => x.client_cpu_us_per_call)),
        redis_cpu_us_per_call: redisCpu.length ? median(redisCpu) : null,
      };
    });
    const width = Math.max(...rows.map((r) => r.case.length));
    process.stdout.write(
      `\n${'case'.padEnd(width)}  ${'ops/s'.padStart(8)}  ${'client CPU us/call'.padStart(18)}  ${'redis CPU us/call'.padStart(17)}\n`,
    );
    for (const r of rows) {
      process.stdout.write(
        `${r.case.padEnd(width)}  ${r.ops_per_s.toLocaleString('en-US').padStart(8)}  ${r.client_cpu_us_per_call.toFixed(2).padStart(18)}  ${(r.redis_cpu_us_per_call === null ? '?' : r.redis_cpu_us_per_call.toFixed(2)).padStart(17)}\n`,
      );
    }
    const big = BIG ? await bigCalls() : undefined;
    if (big) {
      process.stdout.write('\none call with N arguments:\n');
      for (const [label, results] of Object.entries(big))
        process.stdout.write(
          `  ${label}: ${Object.entries(results)
            .map(([n, r]) => `${Number(n).toLocaleString('en-US')} ${r}`)
            .join('; ')}\n`,
        );
    }
    process.stdout.write(
      `${JSON.stringify({ versions, ops: OPS, rounds: ROUNDS, inflight: INFLIGHT, batch: BATCH, load_average: (await import('node:os')).loadavg(), rows, big })}\n`,
    );
  } finally {
    await admin.del(KEY).catch(() => {});
    await admin.call('FUNCTION', 'DELETE', LIB).catch(() => {});
    admin.disconnect();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`redis-clients: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
