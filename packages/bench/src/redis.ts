/**
 * Redis readings of the bench (`--stores redis`): redis-server's pid and
 * memory (INFO server process_id, INFO memory used_memory), the memory of
 * one key prefix's keys (SCAN + MEMORY USAGE ... SAMPLES 0, grouped by what
 * they hold), and a BullMQ
 * backlog of the same depth as ours, so that Redis memory per queued job
 * has an anchor too. Loopback only (bench.ts checks the host).
 */
import { performance } from 'node:perf_hooks';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';

export const REDIS_HOST = process.env.REDIS_HOST ?? '127.0.0.1';
export const REDIS_PORT = Number(process.env.REDIS_PORT ?? 6379);
/** Database 0: the one BullMQ's anchor script uses. */
export const REDIS_URL = `redis://${REDIS_HOST}:${REDIS_PORT}/0`;

export async function withRedisClient<T>(fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 3000,
  });
  redis.on('error', () => {});
  await redis.connect();
  try {
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

/** Bytes Redis has read from and written to all its clients so far (INFO stats). */
export async function redisNetBytes(): Promise<{ in: number; out: number } | null> {
  try {
    return await withRedisClient(async (redis) => {
      const stats = await redis.info('stats');
      const read = (field: string) => Number(infoField(stats, field));
      const bytes = { in: read('total_net_input_bytes'), out: read('total_net_output_bytes') };
      return Number.isFinite(bytes.in) && Number.isFinite(bytes.out) ? bytes : null;
    });
  } catch {
    return null;
  }
}

export interface RedisInfo {
  /** redis-server's pid (INFO server process_id), to read its CPU from /proc. */
  pid: number | null;
  version: string | null;
  /** INFO memory used_memory, bytes. */
  used_memory: number | null;
  /** INFO memory used_memory_rss, bytes. */
  used_memory_rss: number | null;
}

export async function redisInfo(): Promise<RedisInfo> {
  return withRedisClient(async (redis) => {
    const server = await redis.info('server');
    const memory = await redis.info('memory');
    const num = (text: string, field: string) => {
      const v = infoField(text, field);
      return v === undefined ? null : Number(v);
    };
    return {
      pid: num(server, 'process_id'),
      version: infoField(server, 'redis_version') ?? null,
      used_memory: num(memory, 'used_memory'),
      used_memory_rss: num(memory, 'used_memory_rss'),
    };
  });
}

/** used_memory now, bytes (null if Redis does not answer). */
export async function usedMemory(): Promise<number | null> {
  try {
    return (await redisInfo()).used_memory;
  } catch {
    return null;
  }
}

export interface KeyMemory {
  keys: number;
  /** Sum of MEMORY USAGE (SAMPLES 0: every element counted) of the matched keys, bytes. */
  bytes: number;
  /** The same by group (see `group`), bytes and keys. */
  groups: Record<string, { keys: number; bytes: number }>;
}

/**
 * Memory of the keys matching `pattern`: SCAN, then MEMORY USAGE of each
 * key (pipelined). Unlike used_memory this counts only these keys, whatever
 * else the Redis holds or is doing meanwhile.
 */
export async function keyMemory(
  pattern: string,
  group: (key: string) => string,
): Promise<KeyMemory> {
  return withRedisClient(async (redis) => {
    const out: KeyMemory = { keys: 0, bytes: 0, groups: {} };
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length === 0) continue;
      const pipeline = redis.pipeline();
      for (const key of keys) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
      const replies = (await pipeline.exec()) ?? [];
      keys.forEach((key, i) => {
        const bytes = Number(replies[i]?.[1] ?? 0);
        const g = group(key);
        const slot = out.groups[g] ?? { keys: 0, bytes: 0 };
        slot.keys++;
        slot.bytes += bytes;
        out.groups[g] = slot;
        out.keys++;
        out.bytes += bytes;
      });
    } while (cursor !== '0');
    return out;
  });
}

/** Groups of our store's keys (`{prefix}:j:<id>` jobs, `:ev`/`:evd` the event log, the rest indexes). */
export function ourKeyGroup(key: string): string {
  const rest = key.slice(key.indexOf('}:') + 2);
  if (rest.startsWith('j:')) return 'job hashes';
  if (rest === 'ev' || rest === 'evd') return 'events';
  return 'indexes and the rest';
}

/** Groups of BullMQ's keys (`bull:<queue>:<id>` job hashes, `:events` its stream, the rest lists/sets). */
export function bullmqKeyGroup(queue: string) {
  return (key: string): string => {
    const rest = key.slice(`bull:${queue}:`.length);
    if (/^\d+$/.test(rest)) return 'job hashes';
    if (rest === 'events') return 'events';
    return 'indexes and the rest';
  };
}

export interface RedisMemoryReading {
  used_memory: number | null;
  keys: KeyMemory | null;
}

export async function readRedisMemory(
  pattern: string,
  group: (key: string) => string,
): Promise<RedisMemoryReading> {
  const used_memory = await usedMemory();
  let keys: KeyMemory | null = null;
  try {
    keys = await keyMemory(pattern, group);
  } catch {
    keys = null;
  }
  return { used_memory, keys };
}

export interface BullmqBacklogResult {
  queue: string;
  backlog: number;
  batch: number;
  fill_jobs_per_s: number;
  queued_after_fill: number | null;
  memory_before: RedisMemoryReading;
  memory_at_backlog: RedisMemoryReading;
  /** used_memory once the queue was obliterated. */
  used_memory_after_removal: number | null;
  error?: string;
}

/**
 * BullMQ's side of the Redis memory figure: `backlog` jobs of the bench's
 * payload queued with Queue.addBulk in batches of `batch` (no worker), Redis
 * memory read before and at depth, then the queue obliterated.
 */
export async function runBullmqBacklog(
  backlog: number,
  batch: number,
  timeoutMs: number,
  log: (line: string) => void,
): Promise<BullmqBacklogResult> {
  const name = `ojs-bench-backlog-${process.pid}`;
  const group = bullmqKeyGroup(name);
  const pattern = `bull:${name}:*`;
  const queue = new Queue(name, {
    connection: { host: REDIS_HOST, port: REDIS_PORT, maxRetriesPerRequest: null },
  });
  try {
    await queue.obliterate({ force: true }).catch(() => {});
    const memory_before = await readRedisMemory(pattern, group);
    let filled = 0;
    let error: string | undefined;
    const t0 = performance.now();
    let nextLog = 0;
    while (filled < backlog) {
      if (performance.now() - t0 > timeoutMs) {
        error = 'PHASE_TIMEOUT';
        break;
      }
      const count = Math.min(batch, backlog - filled);
      const jobs = Array.from({ length: count }, (_, k) => {
        const i = filled + k;
        return {
          name: 'noop',
          data: {
            i,
            t: performance.timeOrigin + performance.now(),
            to: 'user@example.com',
            n: i % 97,
          },
        };
      });
      await queue.addBulk(jobs);
      filled += count;
      if (filled >= nextLog) {
        log(`filled ${filled}/${backlog}`);
        nextLog += Math.max(batch, Math.floor(backlog / 5));
      }
    }
    const ms = performance.now() - t0;
    const queued_after_fill = await queue.getWaitingCount().catch(() => null);
    const memory_at_backlog = await readRedisMemory(pattern, group);
    await queue.obliterate({ force: true });
    const used_memory_after_removal = await usedMemory();
    return {
      queue: name,
      backlog: filled,
      batch,
      fill_jobs_per_s: ms > 0 ? Math.round((filled * 1000 * 10) / ms) / 10 : 0,
      queued_after_fill,
      memory_before,
      memory_at_backlog,
      used_memory_after_removal,
      ...(error === undefined ? {} : { error }),
    };
  } finally {
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
  }
}

/** Bytes per queued job between two readings (null when either is missing). */
export function bytesPerJob(
  before: number | null | undefined,
  after: number | null | undefined,
  jobs: number,
): number | null {
  if (before === null || before === undefined || after === null || after === undefined || jobs <= 0)
    return null;
  return (after - before) / jobs;
}

/** MiB per 1,000,000 jobs at `bytesPerJob`. */
export const mibPerMillion = (perJob: number | null): number | null =>
  perJob === null ? null : Math.round(((perJob * 1_000_000) / 2 ** 20) * 10) / 10;
