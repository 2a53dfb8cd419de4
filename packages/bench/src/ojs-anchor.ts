/**
 * Our system as one more adapter of ../shared/bench-anchors/common.js, so
 * its phases, clocks, time limits and output are exactly those of the
 * BullMQ / graphile-worker anchors. common.js forks this file with
 * `--worker` for the worker process: producer and worker are separate
 * processes, as in the anchors.
 *
 * Started by bench.ts, configured by environment:
 *   OJS_BENCH_MODE         http | in-process | raw
 *   OJS_BENCH_URL          server URL (http, raw, grpc)
 *   OJS_BENCH_GRPC         host:port of the server's gRPC binding (grpc)
 *   OJS_BENCH_STORE        store spec (in-process): sqlite:PATH, postgres://...?schema=NAME or
 *                          redis://HOST:PORT/DB?prefix=NAME
 *   OJS_BENCH_SQLITE_SYNC  FULL | NORMAL (in-process SQLite; the server's default is FULL)
 *   OJS_BENCH_LABEL        name printed in the result
 *   OJS_BENCH_ANCHORS_DIR  directory of common.js
 * plus common.js's own: N, SEQ, LAT, SKIP, PHASE_TIMEOUT_S, TOTAL_TIMEOUT_S.
 *
 * Modes:
 *   http        OjsClient.enqueue / enqueueBatch over HTTP; OjsWorker (concurrency 50,
 *               no-op handler, SDK defaults otherwise) over HTTP.
 *   in-process  the same client and worker over InProcessTransport: the producer
 *               process and the worker process each run an Engine on the same store
 *               (SQLite: the same file; PostgreSQL: the same schema; Redis: the same
 *               key prefix). No server.
 *   grpc        the same client and worker over GrpcTransport (@ojs/sdk/grpc) to the
 *               server's gRPC binding: unary Enqueue/EnqueueBatch, Fetch (long poll on
 *               x-ojs-wait-ms), one Ack per job.
 *   raw         enqueue through OjsClient over HTTP; the worker is a plain loop:
 *               POST fetch (count 50, wait_ms 1000), then one POST ack per job, all in flight.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Engine } from '@ojs/engine';
import { type Job, OJS_MEDIA_TYPE, OjsClient, OjsWorker, type Transport } from '@ojs/sdk';

type Payload = { i: number; t: number };
interface Hooks {
  onStart(data: Payload): void;
  onEnd(): void;
}
interface Common {
  main(adapter: unknown, file: string): void;
}

const MODE = process.env.OJS_BENCH_MODE ?? 'http';
const URL_ = process.env.OJS_BENCH_URL ?? '';
const GRPC = process.env.OJS_BENCH_GRPC ?? '';
const STORE = process.env.OJS_BENCH_STORE ?? '';
const SYNC = process.env.OJS_BENCH_SQLITE_SYNC === 'NORMAL' ? 'NORMAL' : 'FULL';
const LABEL = process.env.OJS_BENCH_LABEL ?? `ojs (${MODE})`;
const ANCHORS_DIR = process.env.OJS_BENCH_ANCHORS_DIR ?? '';
const QUEUE = 'bench';
const TYPE = 'bench.noop';
const HEADERS = { 'content-type': OJS_MEDIA_TYPE };

if (!['http', 'in-process', 'raw', 'grpc'].includes(MODE)) {
  throw new Error(`bad OJS_BENCH_MODE ${MODE}`);
}
if (MODE === 'grpc' && GRPC === '') throw new Error('OJS_BENCH_GRPC is required');
if (MODE !== 'in-process' && URL_ === '') throw new Error('OJS_BENCH_URL is required');
if (MODE === 'in-process' && STORE === '') throw new Error('OJS_BENCH_STORE is required');

const require = createRequire(import.meta.url);
const common = require(join(ANCHORS_DIR, 'common.js')) as Common;

/** An engine on the store, as an application embedding OJS would run it. */
async function openEngine(): Promise<{ engine: Engine; close(): Promise<void> }> {
  const { Engine } = await import('@ojs/engine');
  let store: ConstructorParameters<typeof Engine>[0]['store'];
  if (STORE.startsWith('redis://')) {
    const { RedisStore } = await import('@ojs/store-redis');
    // As the server's createStore() builds it from a spec: URL and prefix.
    const url = new URL(STORE);
    const prefix = url.searchParams.get('prefix') ?? undefined;
    url.search = '';
    store = new RedisStore({
      url: url.toString(),
      prefix,
      onError: (e, context) => process.stderr.write(`store: ${context}: ${e.message}\n`),
    });
  } else if (STORE.startsWith('postgres')) {
    const { PostgresStore } = await import('@ojs/store-postgres');
    // Same settings as the server's createStore(): connection string only.
    store = new PostgresStore({
      connectionString: STORE,
      onError: (e, context) => process.stderr.write(`store: ${context}: ${e.message}\n`),
    });
  } else {
    const { SqliteStore } = await import('@ojs/store-sqlite');
    store = new SqliteStore({ path: STORE.replace(/^sqlite:/, ''), synchronous: SYNC });
  }
  await store.init();
  const engine = new Engine({ store });
  engine.start();
  return {
    engine,
    close: async () => {
      await engine.stop();
      await store.close();
    },
  };
}

async function transportFor(): Promise<{ transport?: Transport; close(): Promise<void> }> {
  if (MODE === 'grpc') {
    const { GrpcTransport } = await import('@ojs/sdk/grpc');
    const transport = new GrpcTransport({ address: GRPC });
    // GrpcTransport loads @grpc/grpc-js and the .proto files on its first
    // call: made here, before the phases, as the in-process mode opens its
    // store here (a one-time start-up cost, not a cost per job).
    await transport.health();
    return { transport, close: () => transport.close() };
  }
  if (MODE !== 'in-process') return { close: async () => {} };
  const { InProcessTransport } = await import('@ojs/sdk/in-process');
  const { engine, close } = await openEngine();
  return { transport: new InProcessTransport(engine), close };
}

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${URL_}${path}`, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status >= 400)
    throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

interface ProducerCtx {
  client: OjsClient;
  close(): Promise<void>;
}

interface WorkerHandle {
  stop(): Promise<void>;
}

/** The raw worker: fetch count 50, then ACK each job (50 in flight), until stopped. */
function rawWorker(hooks: Hooks, concurrency: number): WorkerHandle {
  let running = true;
  const workerId = `raw-${process.pid}`;
  const loop = (async () => {
    while (running) {
      let jobs: Job[];
      try {
        ({ jobs } = (await post('/ojs/v1/workers/fetch', {
          queues: [QUEUE],
          count: concurrency,
          worker_id: workerId,
          wait_ms: 1000,
        })) as { jobs: Job[] });
      } catch (error) {
        process.stderr.write(`raw worker fetch: ${String(error)}\n`);
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      await Promise.all(
        jobs.map(async (job) => {
          hooks.onStart(job.args[0] as Payload);
          await post('/ojs/v1/workers/ack', {
            job_id: job.id,
            worker_id: workerId,
            attempt: job.attempt,
          });
          hooks.onEnd();
        }),
      );
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

const adapter = {
  name: LABEL,
  versions: () => ({ node: process.version }),
  describe: () => ({
    mode: MODE,
    queue: QUEUE,
    store: STORE === '' ? undefined : STORE.replace(/\/\/[^@/]*@/, '//'),
    url: URL_ === '' ? undefined : URL_,
    grpc: GRPC === '' ? undefined : GRPC,
    sqlite_synchronous: MODE === 'in-process' && STORE.startsWith('sqlite:') ? SYNC : undefined,
  }),

  async producerSetup(): Promise<ProducerCtx> {
    const { transport, close } = await transportFor();
    const client = new OjsClient(transport ? { transport } : { url: URL_ });
    return { client, close };
  },
  async enqueueOne(ctx: ProducerCtx, data: Payload) {
    await ctx.client.enqueue(TYPE, [data], { queue: QUEUE });
  },
  async enqueueBulk(ctx: ProducerCtx, batch: Payload[]) {
    await ctx.client.enqueueBatch(
      batch.map((data) => ({ type: TYPE, args: [data], options: { queue: QUEUE } })),
    );
  },
  async countPending(ctx: ProducerCtx) {
    const s = await ctx.client.queueStats(QUEUE);
    return (
      (s.available ?? 0) +
      (s.active ?? 0) +
      (s.scheduled ?? 0) +
      (s.retryable ?? 0) +
      (s.pending ?? 0)
    );
  },
  async producerTeardown(ctx: ProducerCtx) {
    await ctx.close();
  },

  async workerSetup() {
    // The worker process ends with its parent (common.js's producer), whatever happens to it.
    process.on('disconnect', () => process.exit(3));
    // The worker starts inside its first phase: gRPC's one-time load
    // (grpc-js, the .proto files: shared by every GrpcTransport of the
    // process) is done here, before it, as the producer's is.
    if (MODE === 'grpc') await (await transportFor()).close();
    return {};
  },
  async startWorker(_wctx: unknown, concurrency: number, hooks: Hooks): Promise<WorkerHandle> {
    if (MODE === 'raw') return rawWorker(hooks, concurrency);
    // Like the anchors' startWorker, this connects (in-process: opens the store and engine).
    const { transport, close } = await transportFor();
    const worker = new OjsWorker({
      ...(transport ? { transport } : { url: URL_ }),
      queues: [QUEUE],
      concurrency,
      handleSignals: false,
      logLevel: 'error',
    });
    worker.register(TYPE, (ctx) => {
      hooks.onStart(ctx.args[0] as Payload);
      return undefined;
    });
    // Counted once the ACK was answered (as BullMQ's 'completed' event).
    worker.on('jobCompleted', () => hooks.onEnd());
    await worker.start();
    return {
      stop: async () => {
        await worker.stop();
        await close();
      },
    };
  },
  async stopWorker(_wctx: unknown, handle: WorkerHandle) {
    await handle.stop();
  },
  async workerTeardown() {},
};

common.main(adapter, fileURLToPath(import.meta.url));
