/**
 * The common model both suite formats are converted to (decision 0090): a test
 * as the one runner runs it. Its own module so the types it names (steps,
 * behaviour) need not be imported by types.ts, which they import.
 */
import type { Behaviour } from './behaviour.ts';
import type { RunStep } from './steps.ts';

/** A run of steps in one phase; `assertion` is the seed format's behavioural checks. */
export type Block =
  | { phase: 'input' | 'test'; steps: RunStep[]; stopOnFailure: boolean }
  | { phase: 'assertion' };

/** One test as the runner runs it, whatever its format. */
export interface TestPlan {
  format: 'official' | 'seed';
  test_id: string;
  name: string;
  level: number;
  category: string;
  file: string;
  /** Skipped with this reason (seed: deprecated). */
  deprecated?: string;
  /** Tests that must have passed first (seed). */
  requires: string[];
  /** A failure here makes the test an error and skips the blocks. */
  setup: RunStep[];
  /** Run in order; a failed block ends the run of blocks. */
  blocks: Block[];
  /** Always run; its failures do not count. */
  teardown: RunStep[];
  /** The built-in worker and the attempts it observes (seed). */
  behaviour?: Behaviour;
}
