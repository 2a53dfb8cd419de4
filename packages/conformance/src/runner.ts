/**
 * Runs conformance tests against a server (digest §1.2-§1.7, seed §5). Tests run strictly one
 * after another because they share server state; the optional reset hook is called before
 * each one. Both formats' steps are converted to one step model and run by steps.ts; an
 * official test is reset, setup (a failure = error), steps, teardown. Within an official test a
 * failing step does not stop later steps, matching the reference runner, so one server bug can
 * surface as several failed assertions with unresolved templates. Seed tests add the built-in
 * worker and behavioural assertions (seed-runner.ts).
 */
import { performance } from 'node:perf_hooks';
import { HttpClient } from './http.ts';
import { officialRunStep } from './loader.ts';
import { runSeedTest } from './seed-runner.ts';
import { elapsed, newStepState, resetServer, runPhase } from './steps.ts';
import {
  type AnyTestCase,
  isSeedTest,
  type StepResult,
  type TestCase,
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

/** Runs one official test: reset, setup (failure = error), steps, teardown (failures ignored). */
export async function runTest(
  test: TestCase,
  options: RunOptions,
  client: HttpClient,
): Promise<TestResult> {
  const start = performance.now();
  const state = newStepState(options, client);
  await resetServer(state, options.resetUrl);
  const steps: StepResult[] = [];
  const setup = await runPhase(test.setup.map(officialRunStep), 'setup', state, true);
  steps.push(...setup);
  const setupFailed = setup.some((r) => r.status === 'fail');
  if (!setupFailed) {
    steps.push(...(await runPhase(test.steps.map(officialRunStep), 'test', state, false)));
  }
  steps.push(...(await runPhase(test.teardown.map(officialRunStep), 'teardown', state, false)));
  const failed = steps.some((r) => r.phase === 'test' && r.status === 'fail');
  return {
    test_id: test.test_id,
    name: test.name,
    level: test.level,
    category: test.category,
    file: test.file,
    status: setupFailed ? 'error' : failed ? 'fail' : 'pass',
    duration_ms: elapsed(start),
    steps,
  };
}

/** Runs the tests sequentially, in the given order; each file in its own format. */
export async function runTests(tests: AnyTestCase[], options: RunOptions): Promise<TestResult[]> {
  const client = options.client ?? new HttpClient();
  const results: TestResult[] = [];
  const byId = new Map<string, TestResult>();
  try {
    for (const test of tests) {
      const result = isSeedTest(test)
        ? await runSeedTest(test, options, client, byId)
        : await runTest(test, options, client);
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
