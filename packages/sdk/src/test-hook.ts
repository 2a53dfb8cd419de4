/**
 * The seam the testing helpers use to route every client to a fake or
 * inline backend while a test mode is active (features §18). Kept apart so
 * the client does not import the testing module.
 */
import type { Transport } from './types.ts';

let resolver: (() => Transport | undefined) | undefined;

export function setTestTransportResolver(fn: (() => Transport | undefined) | undefined): void {
  resolver = fn;
}

/** The transport of the active test mode, if any. */
export function activeTestTransport(): Transport | undefined {
  return resolver?.();
}
