/**
 * Loaded with `node --import` into the producer process of a bench run
 * (bench.ts, through procs.ts runNodeScript): wraps common.js's runPhase
 * (phase-hook.ts) so that each phase boundary is sent to the bench over the
 * IPC channel and the phase waits until the bench has read every process's
 * CPU. The worker process that common.js forks inherits the flag: there the
 * hook is not installed (`--worker`), and runPhase is never called anyway.
 */
import Module from 'node:module';
import { injectPhaseHook, RUN_PHASE_DECLARATION } from './phase-hook.ts';

type Compile = (content: string, filename: string, ...rest: unknown[]) => unknown;
const proto = Module.prototype as unknown as { _compile: Compile };
const compile = proto._compile;
proto._compile = function (this: unknown, content: string, filename: string, ...rest: unknown[]) {
  if (filename.endsWith('/common.js') && content.includes('function runProducer')) {
    const injected = injectPhaseHook(content);
    if (injected === undefined)
      process.stderr.write(
        `phase-probe: '${RUN_PHASE_DECLARATION}' not found once in ${filename}: no per-phase CPU\n`,
      );
    else content = injected;
  }
  return compile.call(this, content, filename, ...rest);
};

if (!process.argv.includes('--worker') && typeof process.send === 'function') {
  let next = 0;
  const waiting = new Map<number, () => void>();
  process.on('message', (m: { ojsBenchPhaseAck?: number }) => {
    if (typeof m?.ojsBenchPhaseAck !== 'number') return;
    waiting.get(m.ojsBenchPhaseAck)?.();
    waiting.delete(m.ojsBenchPhaseAck);
    // The channel must not keep the producer alive between boundaries.
    if (waiting.size === 0) process.channel?.unref();
  });
  process.channel?.unref();
  (globalThis as { __ojsBenchPhase?: unknown }).__ojsBenchPhase = (
    phase: string,
    edge: 'start' | 'end',
  ) =>
    new Promise<void>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      process.channel?.ref();
      process.send!({ ojsBenchPhase: { id, pid: process.pid, phase, edge } });
    });
}
