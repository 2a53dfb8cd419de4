/**
 * glibc's malloc tuning for the server process (decision 0077).
 *
 * glibc serves allocations of 128 KiB and more with their own mmap, and
 * gives them back on free. But the first such free raises that threshold
 * to the freed size (up to 32 MiB) and the heap's trim threshold to twice
 * that: after one 10,000-job batch (its request body, its structured
 * clone to the store thread, its reply), every later allocation comes from
 * heaps glibc no longer trims. A server that took 1,000,000 jobs kept
 * ~40 MiB of such freed memory for as long as it ran. A fixed
 * MALLOC_MMAP_THRESHOLD_ turns that adjustment off.
 *
 * glibc reads the variable once, when the process starts, so `ojs serve`
 * sets it and replaces its own process image with `process.execve` (same
 * pid, same stdio, same signals: one process, not a parent and a child)
 * before it loads anything else.
 */

/** glibc's default threshold, fixed: setting it disables the dynamic adjustment. */
export const MMAP_THRESHOLD_BYTES = 128 * 1024;

/**
 * The environment to run the server with, or undefined to run as is: not
 * Linux, no `process.execve` (Node < 22.15 / 23.11), or the operator chose
 * the allocator already (the variable set, or another malloc preloaded).
 */
export function mallocTunedEnv(
  env: NodeJS.ProcessEnv,
  platform: string,
  canExec: boolean,
): NodeJS.ProcessEnv | undefined {
  if (platform !== 'linux' || !canExec) return undefined;
  if (env.MALLOC_MMAP_THRESHOLD_ !== undefined || env.LD_PRELOAD !== undefined) return undefined;
  return { ...env, MALLOC_MMAP_THRESHOLD_: String(MMAP_THRESHOLD_BYTES) };
}

/** Re-executes this process with the tuned environment when it needs one; returns otherwise. */
export function execWithMallocTuning(): void {
  const execve = (
    process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }
  ).execve;
  const env = mallocTunedEnv(process.env, process.platform, typeof execve === 'function');
  if (env === undefined || execve === undefined) return;
  execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env);
}
