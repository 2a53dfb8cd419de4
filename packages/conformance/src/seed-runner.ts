/**
 * Executes seed-format tests (seed §5): protocol steps with `expect`/`capture`/`wait`, and
 * behavioural `assertions` observed through the built-in worker.
 *
 * Order inside a test: `requires` / `deprecated` checks (skip with a reason) -> reset hook ->
 * built-in worker started (when `setup` names a handler) -> `setup.jobs` / `setup.cron` ->
 * with `input`: input enqueued (captured as `job_id`), `assertions`, then `steps` (which verify
 * the outcome); without: `steps` (one captures `job_id`), then `assertions` -> `teardown` ->
 * worker stopped and the behavioural job cancelled if still live.
 * Unlike the official format, the first failing step ends the test: later steps depend on its
 * captures and would only add noise to the explanation.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { isJobState, isTerminal } from '@ojs/core';
import { failure } from './assertions.ts';
import { describeTiming, formatMs, timingMatches } from './durations.ts';
import { failureReason } from './explain.ts';
import type { HttpClient } from './http.ts';
import { seedRunStep } from './seed-loader.ts';
import { matchSeed } from './seed-matchers.ts';
import {
  elapsed,
  executeStep,
  isJsonObject,
  newStepState,
  resetServer,
  runPhase,
  type StepState,
  send,
} from './steps.ts';
import type {
  Json,
  JsonObject,
  SeedAssertion,
  SeedStep,
  SeedTestCase,
  StepResult,
  TestResult,
} from './types.ts';
import { BuiltinWorker, type WorkerEvent } from './worker.ts';

const STATE_POLL_MS = 50;
/** Extra time allowed for an attempt to start or end beyond what the assertion expects. */
const ATTEMPT_SLACK_MS = 10_000;

export interface SeedRunOptions {
  baseUrl: string;
  resetUrl?: string;
  timeoutMs: number;
  /** Parallel fetch loops of the built-in worker. */
  workerConcurrency?: number;
}

type Ctx = StepState;

/** Every string value of a `queue` key, anywhere in the value (for the worker's queue list). */
export function queuesIn(value: Json | undefined, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) queuesIn(item, out);
  else if (isJsonObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (key === 'queue' && typeof item === 'string' && !item.includes('{')) out.add(item);
      else queuesIn(item, out);
    }
  }
  return out;
}

/** Runs one seed step (steps.ts). */
export function executeSeedStep(
  step: SeedStep,
  phase: StepResult['phase'],
  ctx: Ctx,
): Promise<StepResult> {
  return executeStep(seedRunStep(step), phase, ctx);
}

/** A seed block: sequential, optionally stopping at the first failure. */
function runBlock(steps: SeedStep[], phase: StepResult['phase'], ctx: Ctx, stopOnFailure: boolean) {
  return runPhase(steps.map(seedRunStep), phase, ctx, stopOnFailure);
}

async function readJob(ctx: Ctx, jobId: string): Promise<JsonObject | undefined> {
  try {
    const response = await send(
      ctx,
      'GET',
      `/ojs/v1/jobs/${encodeURIComponent(jobId)}`,
      {},
      undefined,
    );
    if (response.status !== 200 || !isJsonObject(response.body)) return undefined;
    return isJsonObject(response.body.job) ? response.body.job : response.body;
  } catch {
    return undefined;
  }
}

function describeEvent(e: WorkerEvent): string {
  const attempt = e.attempt !== undefined ? ` of attempt ${e.attempt}` : '';
  switch (e.kind) {
    case 'fetch':
      return `fetched attempt ${e.attempt}`;
    case 'ack':
    case 'nack':
      return `${e.kind}${attempt} -> ${e.status}${e.state ? ` ${e.state}` : ''}`;
    default:
      return `${e.kind}${attempt}${e.message ? `: ${e.message}` : ''}`;
  }
}

interface AttemptEnd {
  at: number;
  state?: string;
  how: string;
}

/** Evaluates behavioural assertions against the worker's timeline and the job's state. */
async function evaluateAssertions(
  test: SeedTestCase,
  jobId: string,
  worker: BuiltinWorker,
  ctx: Ctx,
  budgetEnd: number,
): Promise<StepResult[]> {
  const results: StepResult[] = [];
  const byAttempt = new Map(test.assertions.map((a) => [a.attempt, a]));
  const last = Math.max(...test.assertions.map((a) => a.attempt));
  worker.limitAttempts(jobId, last);
  const ends = new Map<number, AttemptEnd>();
  let lastSeen: JsonObject | undefined;

  const history = () => {
    const events = worker.eventsFor(jobId).map(describeEvent);
    const state = lastSeen
      ? ` job state: ${String(lastSeen.state)} (attempt ${String(lastSeen.attempt)});`
      : '';
    return `${state} worker: ${events.length > 0 ? events.join(', ') : 'no activity for this job'}`;
  };

  for (let attempt = 1; attempt <= last; attempt++) {
    const assertion: SeedAssertion | undefined = byAttempt.get(attempt);
    const stepStart = performance.now();
    const result: StepResult = {
      id: assertion ? `assertion-${assertion.index}` : `attempt-${attempt}`,
      phase: 'assertion',
      action: `attempt ${attempt}`,
      status: 'pass',
      duration_ms: 0,
      failures: [],
    };
    const fail = (path: string, expected: unknown, actual: unknown, message: string) =>
      result.failures.push(failure(path, expected, actual, message));

    // 1. Wait for the attempt to start.
    const startLimit = Math.min(
      budgetEnd,
      performance.now() +
        ATTEMPT_SLACK_MS +
        (assertion?.delay_after_failure && Number.isFinite(assertion.delay_after_failure.max)
          ? assertion.delay_after_failure.max
          : 0),
    );
    let started: WorkerEvent | undefined;
    let lastGet = 0;
    while (performance.now() < startLimit) {
      started = worker.eventsFor(jobId).find((e) => e.kind === 'fetch' && e.attempt === attempt);
      if (started) break;
      if (performance.now() - lastGet > 500) {
        lastGet = performance.now();
        lastSeen = (await readJob(ctx, jobId)) ?? lastSeen;
      }
      await sleep(STATE_POLL_MS / 2);
    }
    if (!started) {
      fail(
        'attempt',
        attempt,
        undefined,
        `attempt ${attempt} never started within ${formatMs(performance.now() - stepStart)};${history()}`,
      );
      result.status = 'fail';
      result.duration_ms = elapsed(stepStart);
      results.push(result);
      break;
    }

    // 2. delay_after_failure: previous attempt's end -> this attempt's fetch.
    if (assertion?.delay_after_failure) {
      const previous = ends.get(attempt - 1);
      if (!previous) {
        fail(
          'delay_after_failure',
          assertion.delay_after_failure.text,
          undefined,
          `the end of attempt ${attempt - 1} was not observed`,
        );
      } else {
        const delay = started.at - previous.at;
        if (!timingMatches(assertion.delay_after_failure, delay)) {
          fail(
            'delay_after_failure',
            assertion.delay_after_failure.text,
            formatMs(delay),
            `expected ${describeTiming(assertion.delay_after_failure)} for attempt ${attempt}, actual was ${formatMs(delay)} (outside tolerance)`,
          );
        }
      }
    }

    // 3. Wait for the attempt to end: ack/nack, a later fetch, or the server taking it back.
    const endLimit = Math.min(
      budgetEnd,
      performance.now() +
        ATTEMPT_SLACK_MS +
        (assertion?.active_for && Number.isFinite(assertion.active_for.max)
          ? assertion.active_for.max
          : 0),
    );
    let end: AttemptEnd | undefined;
    lastGet = 0;
    while (performance.now() < endLimit && end === undefined) {
      const events = worker.eventsFor(jobId);
      const done = events.find(
        (e) => (e.kind === 'ack' || e.kind === 'nack') && e.attempt === attempt,
      );
      const next = events.find((e) => e.kind === 'fetch' && (e.attempt ?? 0) > attempt);
      const held = events.some(
        (e) => (e.kind === 'hold' || e.kind === 'abandon') && e.attempt === attempt,
      );
      if (done) {
        end = { at: done.at, how: describeEvent(done) };
        if (done.state !== undefined) end.state = done.state;
        if (done.status !== 200) {
          fail(
            'worker',
            `${done.kind} accepted`,
            done.status,
            `the server refused the worker's ${done.kind} of attempt ${attempt}: ${done.message ?? done.status}`,
          );
        }
      } else if (next) {
        end = {
          at: next.at,
          state: 'available',
          how: `inferred: attempt ${next.attempt} was fetched`,
        };
      } else if (held && performance.now() - lastGet >= STATE_POLL_MS) {
        lastGet = performance.now();
        const job = await readJob(ctx, jobId);
        if (job) {
          lastSeen = job;
          const jobAttempt = typeof job.attempt === 'number' ? job.attempt : attempt;
          if (jobAttempt > attempt) {
            // Fetched again before the worker's fetch event was recorded: the
            // attempt ended with the job available (as for `next` above).
            end = {
              at: performance.now(),
              state: 'available',
              how: `inferred: the job is on attempt ${jobAttempt} (observed by polling the job)`,
            };
          } else if (job.state !== 'active') {
            end = { at: performance.now(), how: 'observed by polling the job' };
            if (typeof job.state === 'string') end.state = job.state;
          }
        }
      }
      if (end === undefined) await sleep(STATE_POLL_MS / 2);
    }
    if (!end) {
      fail(
        'attempt',
        `attempt ${attempt} to end`,
        undefined,
        `attempt ${attempt} did not end within ${formatMs(performance.now() - started.at)};${history()}`,
      );
      result.status = 'fail';
      result.duration_ms = elapsed(stepStart);
      results.push(result);
      break;
    }
    if (end.state === undefined) {
      const job = await readJob(ctx, jobId);
      if (job && typeof job.state === 'string') {
        lastSeen = job;
        end.state = job.state;
        end.how += ' (state read back from the job)';
      }
    }
    ends.set(attempt, end);
    const previousEnd = ends.get(attempt - 1);
    const after = previousEnd
      ? `, ${formatMs(started.at - previousEnd.at)} after attempt ${attempt - 1} ended`
      : '';
    result.notes = [
      `attempt ${attempt}: fetched${after}; active ${formatMs(end.at - started.at)}; ended: ${end.how}`,
    ];

    if (assertion?.active_for) {
      const active = end.at - started.at;
      if (!timingMatches(assertion.active_for, active)) {
        fail(
          'active_for',
          assertion.active_for.text,
          formatMs(active),
          `expected attempt ${attempt} to stay active ${describeTiming(assertion.active_for)}, actual was ${formatMs(active)} (outside tolerance)`,
        );
      }
    }
    if (assertion?.state_after !== undefined && end.state !== assertion.state_after) {
      fail(
        'state_after',
        assertion.state_after,
        end.state,
        `expected state "${assertion.state_after}" after attempt ${attempt}, got ${end.state === undefined ? 'no state' : `"${end.state}"`} (${end.how})`,
      );
    }
    if (assertion?.result !== undefined) {
      const job = await readJob(ctx, jobId);
      const actual = job ? (Object.hasOwn(job, 'result') ? job.result : undefined) : undefined;
      const reason = matchSeed(assertion.result, actual);
      if (reason !== null)
        fail('result', assertion.result, actual, `job result after attempt ${attempt}: ${reason}`);
    }
    if (result.failures.length > 0) result.status = 'fail';
    result.duration_ms = elapsed(stepStart);
    if (assertion) results.push(result);
  }
  return results;
}

function skipped(test: SeedTestCase, reason: string): TestResult {
  const result: TestResult = {
    test_id: test.test_id,
    name: test.name,
    level: test.level,
    category: test.category,
    file: test.file,
    status: 'skip',
    duration_ms: 0,
    steps: [],
    format: 'seed',
    reason,
  };
  if (test.deprecated) result.deprecated = true;
  return result;
}

/** Runs one seed-format test; `prior` holds the results of tests already run (for `requires`). */
export async function runSeedTest(
  test: SeedTestCase,
  options: SeedRunOptions,
  client: HttpClient,
  prior: ReadonlyMap<string, TestResult>,
): Promise<TestResult> {
  if (test.deprecated) return skipped(test, `deprecated: ${test.deprecated_reason}`);
  for (const id of test.requires) {
    const dep = prior.get(id);
    if (dep === undefined)
      return skipped(test, `requires ${id}, which was not found in the suites`);
    if (dep.status !== 'pass') {
      const what = { fail: 'failed', error: 'errored', skip: 'was skipped', pass: '' }[dep.status];
      return skipped(test, `requires ${id}, which ${what}`);
    }
  }
  const start = performance.now();
  const ctx = newStepState(options, client);
  await resetServer(ctx, options.resetUrl);
  const steps: StepResult[] = [];
  const notes: string[] = [];
  let worker: BuiltinWorker | undefined;
  let setupFailed = false;
  let jobId: string | undefined;
  try {
    if (test.setup && test.setup.handlers.length > 0) {
      const queues = new Set(['default', ...test.setup.queues]);
      queuesIn(test.input, queues);
      for (const step of test.steps) queuesIn(step.body, queues);
      queuesIn(test.setup.config.jobs, queues);
      queuesIn(test.setup.config.cron, queues);
      worker = new BuiltinWorker({
        baseUrl: options.baseUrl,
        queues: [...queues],
        config: test.setup.config,
        concurrency: options.workerConcurrency,
        timeoutMs: options.timeoutMs,
      });
      worker.start();
      notes.push(`built-in worker ${worker.workerId} on queues ${[...queues].join(', ')}`);
    }
    const setupSteps: SeedStep[] = [];
    const make = (i: number, path: string, body: Json): SeedStep => ({
      index: i,
      id: `setup-${i}`,
      action: `POST ${path}`,
      method: 'POST',
      path,
      headers: {},
      body,
      expect: { status: { $in: [200, 201] } },
      capture: {},
      wait_ms: 0,
      poll_ms: 0,
    });
    for (const job of (test.setup?.config.jobs as Json[] | undefined) ?? [])
      setupSteps.push(make(setupSteps.length + 1, '/ojs/v1/jobs', job));
    for (const cron of (test.setup?.config.cron as Json[] | undefined) ?? [])
      setupSteps.push(make(setupSteps.length + 1, '/ojs/v1/cron', cron));
    const setup = await runBlock(setupSteps, 'setup', ctx, true);
    steps.push(...setup);
    setupFailed = setup.some((s) => s.status === 'fail');

    let failed = false;
    const runSteps = async () => {
      const stepResults = await runBlock(test.steps, 'test', ctx, true);
      steps.push(...stepResults);
      failed = stepResults.some((s) => s.status === 'fail');
      const ran = stepResults.length;
      if (failed && ran < test.steps.length) {
        notes.push(
          `steps ${ran + 1}-${test.steps.length} not run after the failure of step ${ran}`,
        );
      }
    };
    const runAssertions = async () => {
      const captured = ctx.captures.get('job_id');
      if (typeof captured === 'string') jobId = captured;
      if (test.assertions.length === 0 || !worker) return;
      if (jobId === undefined) {
        steps.push({
          id: 'assertions',
          phase: 'assertion',
          action: 'ASSERT',
          status: 'fail',
          duration_ms: 0,
          failures: [
            failure(
              'job_id',
              'a captured job id',
              undefined,
              'no job id was captured for the behavioural assertions',
            ),
          ],
        });
        failed = true;
        return;
      }
      const results = await evaluateAssertions(test, jobId, worker, ctx, start + test.timeout_ms);
      steps.push(...results);
      failed = results.some((s) => s.status === 'fail');
    };
    if (!setupFailed && test.input) {
      // With an input job the assertions observe it first and the steps verify the outcome.
      const enqueue: SeedStep = {
        ...make(1, '/ojs/v1/jobs', test.input),
        id: 'input',
        capture: { job_id: 'body.job.id' },
      };
      const r = await executeSeedStep(enqueue, 'input', ctx);
      steps.push(r);
      failed = r.status === 'fail';
      if (!failed) await runAssertions();
      if (!failed) await runSteps();
    } else if (!setupFailed) {
      // Without one, the steps create the job (capturing job_id) and the assertions follow.
      await runSteps();
      if (!failed) await runAssertions();
    }
    if (jobId === undefined) {
      const captured = ctx.captures.get('job_id');
      if (typeof captured === 'string') jobId = captured;
    }
    if (test.teardown.length > 0)
      steps.push(...(await runBlock(test.teardown, 'teardown', ctx, false)));
  } finally {
    if (worker) {
      await worker.stop();
      for (const e of worker.events) {
        if (e.kind === 'error' || (e.status !== undefined && e.status !== 200)) {
          notes.push(`worker: ${describeEvent(e)}${e.job_id ? ` (job ${e.job_id})` : ''}`);
        }
      }
    }
    if (jobId !== undefined && (test.input !== undefined || test.assertions.length > 0)) {
      // Leave no live job behind for the next test (a held test.timeout job, for example).
      const job = await readJob(ctx, jobId);
      const state = job?.state;
      if (isJobState(state) && !isTerminal(state)) {
        await send(ctx, 'DELETE', `/ojs/v1/jobs/${encodeURIComponent(jobId)}`, {}, undefined).catch(
          () => undefined,
        );
      }
    }
  }
  const counted = steps.filter((s) => s.phase !== 'teardown');
  const anyFailed = counted.some((s) => s.status === 'fail');
  const result: TestResult = {
    test_id: test.test_id,
    name: test.name,
    level: test.level,
    category: test.category,
    file: test.file,
    status: setupFailed ? 'error' : anyFailed ? 'fail' : 'pass',
    duration_ms: elapsed(start),
    steps,
    format: 'seed',
  };
  const reason = failureReason(steps);
  if (result.status !== 'pass' && reason !== undefined) result.reason = reason;
  if (notes.length > 0) result.notes = notes;
  return result;
}
