/**
 * Gives memory back after a burst, once the thread is quiet (decision 0075).
 *
 * V8 keeps the heap a burst grew (a 10,000-job batch grows the server's
 * heaps to ~120 MiB each; ~20 MiB of it is live afterwards) and pools the
 * freed pages instead of returning them. Its own memory reducer would give
 * them back, but in the server it never runs: its trace says "high alloc"
 * every 8 s on every thread, even the idle checkpointer, so the server sat
 * at ~450 MiB RSS for as long as it ran after one big batch.
 *
 * Here a thread samples its event-loop utilisation and heap size once a
 * second. When the loop has been quiet (under 5 % busy) for two samples
 * and the heap is well above what the last reduction left (the first one
 * runs at the first quiet moment after start), it runs one
 * memory-reducing full GC (`last-resort`: compacts and unmaps the pooled
 * pages; 60-100 ms on this machine). Under load it never runs; at most
 * once per `minSpacingMs`. The decision is `shouldReduceMemory`, a pure
 * function.
 */
import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface QuietGcOptions {
  /** How often the thread is sampled. */
  intervalMs?: number;
  /** Samples in a row under `quietUtilization` before a reduction. */
  quietSamples?: number;
  /** Event-loop utilisation (0..1) below which a sample counts as quiet. */
  quietUtilization?: number;
  /** Growth over the last reduction's heap size that is worth a reduction. */
  minGrowthBytes?: number;
  /** Least time between two reductions. */
  minSpacingMs?: number;
  /** Called after each reduction (heap sizes in bytes, the pause in ms); every caller's is. */
  onReduced?: (before: number, after: number, pauseMs: number) => void;
}

export interface QuietGcState {
  /** Quiet samples in a row, this one included. */
  quietSamples: number;
  /** V8's total heap size now. */
  heapBytes: number;
  /**
   * The total heap size the last reduction left; 0 before the first, so
   * the first quiet moment also clears what starting up left behind.
   */
  floorBytes: number;
  /** Milliseconds since the last reduction (or the start). */
  sinceLastMs: number;
}

const DEFAULTS = {
  intervalMs: 1000,
  quietSamples: 2,
  quietUtilization: 0.05,
  minGrowthBytes: 32 * 1024 * 1024,
  minSpacingMs: 10_000,
};

/** Reduce when the thread has been quiet long enough and the heap grew by half and then some. */
export function shouldReduceMemory(
  state: QuietGcState,
  options: Pick<QuietGcOptions, 'quietSamples' | 'minGrowthBytes' | 'minSpacingMs'> = {},
): boolean {
  const quietSamples = options.quietSamples ?? DEFAULTS.quietSamples;
  const minGrowth = options.minGrowthBytes ?? DEFAULTS.minGrowthBytes;
  const minSpacing = options.minSpacingMs ?? DEFAULTS.minSpacingMs;
  return (
    state.quietSamples >= quietSamples &&
    state.sinceLastMs >= minSpacing &&
    state.heapBytes > state.floorBytes * 1.5 + minGrowth
  );
}

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;
let exposedGc: Gc | undefined;

/**
 * V8's `gc` for this thread. `--expose-gc` set at run time applies to
 * contexts created afterwards, so the function comes from a new context;
 * it collects the whole isolate (the same trick as Jest's leak detector).
 */
function gcFunction(): Gc {
  if (exposedGc === undefined) {
    setFlagsFromString('--expose-gc');
    exposedGc = runInNewContext('gc') as Gc;
  }
  return exposedGc;
}

interface Sampler {
  users: number;
  listeners: Set<NonNullable<QuietGcOptions['onReduced']>>;
  stop: () => void;
}
/** One sampler per thread, however many servers the thread runs (tests run many). */
let sampler: Sampler | undefined;

/**
 * Starts the sampler on the calling thread, or joins the one running (the
 * first caller's settings hold); returns this caller's stop function. The
 * timer never keeps the thread alive.
 */
export function startQuietGc(options: QuietGcOptions = {}): () => void {
  sampler ??= runSampler(options);
  const own = sampler;
  own.users++;
  const listener = options.onReduced;
  if (listener !== undefined) own.listeners.add(listener);
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    if (listener !== undefined) own.listeners.delete(listener);
    if (--own.users === 0) {
      own.stop();
      if (sampler === own) sampler = undefined;
    }
  };
}

function runSampler(options: QuietGcOptions): Sampler {
  const gc = gcFunction();
  const intervalMs = options.intervalMs ?? DEFAULTS.intervalMs;
  const quietUtilization = options.quietUtilization ?? DEFAULTS.quietUtilization;
  const listeners = new Set<NonNullable<QuietGcOptions['onReduced']>>();
  let elu = performance.eventLoopUtilization();
  let floorBytes = 0;
  let lastAt = performance.now();
  let quietSamples = 0;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, elu).utilization;
    elu = now;
    quietSamples = busy < quietUtilization ? quietSamples + 1 : 0;
    const heapBytes = getHeapStatistics().total_heap_size;
    const at = performance.now();
    const state = { quietSamples, heapBytes, floorBytes, sinceLastMs: at - lastAt };
    if (!shouldReduceMemory(state, options)) return;
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    const done = performance.now();
    floorBytes = getHeapStatistics().total_heap_size;
    lastAt = done;
    quietSamples = 0;
    // The GC's own pause is not load: the next utilisation window starts after it.
    elu = performance.eventLoopUtilization();
    for (const listener of [...listeners]) listener(heapBytes, floorBytes, done - at);
  }, intervalMs);
  timer.unref();
  return { users: 0, listeners, stop: () => clearInterval(timer) };
}

/**
 * One memory-reducing full GC of this thread at its first quiet moment
 * (sampled every `intervalMs`, default 250 ms): what starting a server
 * leaves behind, about 10 MB of garbage and young-generation pages, is given
 * back then rather than never; the sampler above waits for a heap grown by
 * a burst (decision 0108). Returns a function that cancels it; the timer
 * never keeps the thread alive.
 */
export function reduceMemoryWhenQuiet(
  options: Pick<QuietGcOptions, 'intervalMs' | 'quietUtilization' | 'onReduced'> = {},
): () => void {
  const quietUtilization = options.quietUtilization ?? DEFAULTS.quietUtilization;
  let elu = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, elu).utilization;
    elu = now;
    if (busy >= quietUtilization) return;
    clearInterval(timer);
    const before = getHeapStatistics().total_heap_size;
    const at = performance.now();
    gcFunction()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    options.onReduced?.(before, getHeapStatistics().total_heap_size, performance.now() - at);
  }, options.intervalMs ?? 250);
  timer.unref();
  return () => clearInterval(timer);
}
