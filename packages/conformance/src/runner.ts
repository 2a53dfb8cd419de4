/**
 * The one runner of both suite formats (digest §1.2-§1.7, seed §5; decision 0090). The
 * loaders' tests are converted to one model (`TestPlan`: setup, blocks, teardown, of the steps
 * of steps.ts) by `officialPlan` and `seedPlan`, and run here. Tests run strictly one after
 * another because they share server state; the optional reset hook is called before each one.
 * Within an official test a failing step does not stop later steps, matching the reference
 * runner, so one server bug can surface as several failed assertions with unresolved
 * templates; in a seed test the first failure ends the blocks. Seed tests add the built-in
 * worker and behavioural assertions (behaviour.ts).
 */
import { performance } from 'node:perf_hooks';
import { BehaviourRun } from './behaviour.ts';
import { failureReason } from './explain.ts';
import { HttpClient } from './http.ts';
import { officialPlan } from './loader.ts';
import type { Block, TestPlan } from './plan.ts';
import { seedPlan, seedRunStep } from './seed-loader.ts';
import {
  elapsed,
  executeStep,
  newStepState,
  resetServer,
  runPhase,
  type StepState,
} from './steps.ts';
import {
  type AnyTestCase,
  isSeedTest,
  type SeedStep,
  type StepResult,
  type TestResult,
} from './types.ts';

export { groupSteps, OJS_MEDIA_TYPE } from './steps.ts';

export interface RunOptions {
  /** Server base URL; a trailing slash is trimmed. */
  baseUrl: string;
  /** POSTed (no body) before every test; result and errors are ignored. */
  resetUrl?: string;
  /** Per-request timeout. */
  timeoutMs: number;
  /** Called as each test finishes, e.g. for progress output. */
  onTestResult?: (result: TestResult) => void;
  /** Shared client; one is created (and closed) per run when omitted. */
  client?: HttpClient;
  /** Parallel fetch loops of the seed format's built-in worker (default 4). */
  workerConcurrency?: number;
}

/** The fields a result repeats from its test, in the reports' order. */
function identity({ test_id, name, level, category, file }: TestPlan) {
  return { test_id, name, level, category, file };
}

function skipped(plan: TestPlan, reason: string, deprecated = false): TestResult {
  const result: TestResult = {
    ...identity(plan),
    status: 'skip',
    duration_ms: 0,
    steps: [],
    format: 'seed',
    reason,
  };
  if (deprecated) result.deprecated = true;
  return result;
}

/** Why a test is not run: deprecated, or a required test that did not pass. */
function skipReason(plan: TestPlan, prior: ReadonlyMap<string, TestResult>) {
  if (plan.deprecated !== undefined) return `deprecated: ${plan.deprecated}`;
  for (const id of plan.requires) {
    const dep = prior.get(id);
    if (dep === undefined) return `requires ${id}, which was not found in the suites`;
    if (dep.status !== 'pass') {
      const what = { fail: 'failed', error: 'errored', skip: 'was skipped', pass: '' }[dep.status];
      return `requires ${id}, which ${what}`;
    }
  }
  return undefined;
}

/** Runs one block; a `test` block stopped by a failure says which steps it left out. */
async function runBlock(
  block: Block,
  state: StepState,
  behaviour: BehaviourRun | undefined,
  notes: string[],
): Promise<StepResult[]> {
  if (block.phase === 'assertion') return behaviour ? behaviour.assertAttempts(state) : [];
  const results = await runPhase(block.steps, block.phase, state, block.stopOnFailure);
  const ran = results.length;
  if (block.phase === 'test' && ran < block.steps.length) {
    notes.push(`steps ${ran + 1}-${block.steps.length} not run after the failure of step ${ran}`);
  }
  return results;
}

/**
 * Runs one test, of either format: reset, the built-in worker (seed), setup (a failure = error),
 * the blocks, teardown (failures ignored). `prior` holds the results of tests already run.
 */
export async function runTest(
  test: AnyTestCase,
  options: RunOptions,
  client: HttpClient,
  prior: ReadonlyMap<string, TestResult> = new Map(),
): Promise<TestResult> {
  const plan = isSeedTest(test) ? seedPlan(test) : officialPlan(test);
  const skip = skipReason(plan, prior);
  if (skip !== undefined) return skipped(plan, skip, plan.deprecated !== undefined);
  const start = performance.now();
  const state = newStepState(options, client);
  await resetServer(state, options.resetUrl);
  const steps: StepResult[] = [];
  const notes: string[] = [];
  const behaviour = plan.behaviour && new BehaviourRun(plan.behaviour, start);
  let setupFailed = false;
  try {
    behaviour?.start(options, notes);
    const setup = await runPhase(plan.setup, 'setup', state, true);
    steps.push(...setup);
    setupFailed = setup.some((r) => r.status === 'fail');
    for (const block of setupFailed ? [] : plan.blocks) {
      const results = await runBlock(block, state, behaviour, notes);
      steps.push(...results);
      if (results.some((r) => r.status === 'fail')) break;
    }
    behaviour?.rememberJob(state);
    steps.push(...(await runPhase(plan.teardown, 'teardown', state, false)));
  } finally {
    await behaviour?.finish(state, notes);
  }
  const failed = steps.some((r) => r.phase !== 'teardown' && r.status === 'fail');
  const result: TestResult = {
    ...identity(plan),
    status: setupFailed ? 'error' : failed ? 'fail' : 'pass',
    duration_ms: elapsed(start),
    steps,
  };
  if (plan.format === 'official') return result;
  result.format = 'seed';
  const reason = failureReason(steps);
  if (result.status !== 'pass' && reason !== undefined) result.reason = reason;
  if (notes.length > 0) result.notes = notes;
  return result;
}

/** A seed-format test (runTest takes either format). */
export const runSeedTest = runTest;
export type SeedRunOptions = RunOptions;

/** Runs one seed step (steps.ts). */
export function executeSeedStep(
  step: SeedStep,
  phase: StepResult['phase'],
  state: StepState,
): Promise<StepResult> {
  return executeStep(seedRunStep(step), phase, state);
}

/** Runs the tests sequentially, in the given order; each file in its own format. */
export async function runTests(tests: AnyTestCase[], options: RunOptions): Promise<TestResult[]> {
  const client = options.client ?? new HttpClient();
  const results: TestResult[] = [];
  const byId = new Map<string, TestResult>();
  try {
    for (const test of tests) {
      const result = await runTest(test, options, client, byId);
      results.push(result);
      // With duplicate ids (official suites have some) a failure must not be masked.
      const previous = byId.get(result.test_id);
      if (previous === undefined || previous.status === 'pass') byId.set(result.test_id, result);
      options.onTestResult?.(result);
    }
  } finally {
    if (options.client === undefined) client.close();
  }
  return results;
}
