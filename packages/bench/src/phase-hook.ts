/**
 * Phase boundaries of ../shared/bench-anchors/common.js, for the per-phase
 * CPU readings (decision 0095). common.js runs every phase through its
 * `runPhase(name, fn)` and says nothing outside; `phase-probe.ts`, loaded
 * with `--import` into the producer process (ours and the anchors' alike),
 * rewrites that one function as the file is compiled, so that before and
 * after each phase it awaits `globalThis.__ojsBenchPhase(name, edge)`: the
 * bench reads every process's CPU while the producer waits, outside the
 * phase's own clock. The shared file itself is never changed.
 */

/** The declaration of runPhase in common.js, as recorded in ../shared. */
export const RUN_PHASE_DECLARATION = 'const runPhase = async (name, fn) => {';

/**
 * common.js with its runPhase wrapped: the original body becomes
 * `runPhaseBody`, and runPhase awaits the hook around it (a skipped phase
 * has no boundary). Undefined when the declaration is not found (another
 * common.js): the caller then reports no per-phase CPU rather than a wrong one.
 */
export function injectPhaseHook(source: string): string | undefined {
  const at = source.indexOf(RUN_PHASE_DECLARATION);
  if (at < 0 || source.indexOf(RUN_PHASE_DECLARATION, at + 1) >= 0) return undefined;
  const wrapper =
    'const runPhase = async (name, fn) => {' +
    ' if (CFG.SKIP.includes(name)) return;' +
    " const hook = globalThis.__ojsBenchPhase; if (hook) await hook(name, 'start');" +
    " try { return await runPhaseBody(name, fn); } finally { if (hook) await hook(name, 'end'); }" +
    ' };\n  const runPhaseBody = async (name, fn) => {';
  return source.slice(0, at) + wrapper + source.slice(at + RUN_PHASE_DECLARATION.length);
}

/** A phase boundary, as the probe sends it to the bench over the IPC channel. */
export interface PhaseMessage {
  ojsBenchPhase: { id: number; pid: number; phase: string; edge: 'start' | 'end' };
}

export function isPhaseMessage(m: unknown): m is PhaseMessage {
  const p = (m as PhaseMessage | null)?.ojsBenchPhase;
  return (
    typeof p === 'object' &&
    p !== null &&
    typeof p.phase === 'string' &&
    (p.edge === 'start' || p.edge === 'end')
  );
}
