/**
 * The seed format's behavioural checks (seed §5.8): the built-in worker the runner starts for
 * a test whose `setup` names a handler, the attempts of the captured job it observes (fetch,
 * ack/nack, how long each attempt was active, the delay between attempts, the state after),
 * and the clean-up of that job. runner.ts runs them as a test's `assertion` block.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { isJobState, isTerminal } from '@ojs/core';
import { failure } from './assertions.ts';
import { describeTiming, formatMs, timingMatches } from './durations.ts';
import { matchSeed } from './seed-matchers.ts';
import { elapsed, type StepState, send } from './steps.ts';
import type { JsonObject, SeedAssertion, SeedTiming, StepResult } from './types.ts';
import { isJsonObject } from './types.ts';
import { BuiltinWorker, type WorkerEvent } from './worker.ts';

const STATE_POLL_MS = 50;
/** Extra time allowed for an attempt to start or end beyond what the assertion expects. */
const ATTEMPT_SLACK_MS = 10_000;

type Ctx = StepState;

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

/** How long to wait for an attempt to start or end: the slack plus the timing's maximum. */
function waitLimit(budgetEnd: number, timing: SeedTiming | undefined): number {
  const expected = timing && Number.isFinite(timing.max) ? timing.max : 0;
  return Math.min(budgetEnd, performance.now() + ATTEMPT_SLACK_MS + expected);
}

/** Evaluates behavioural assertions against the worker's timeline and the job's state. */
async function evaluateAssertions(
  assertions: SeedAssertion[],
  jobId: string,
  worker: BuiltinWorker,
  ctx: Ctx,
  budgetEnd: number,
): Promise<StepResult[]> {
  const results: StepResult[] = [];
  const byAttempt = new Map(assertions.map((a) => [a.attempt, a]));
  const last = Math.max(...assertions.map((a) => a.attempt));
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
    const startLimit = waitLimit(budgetEnd, assertion?.delay_after_failure);
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
    const endLimit = waitLimit(budgetEnd, assertion?.active_for);
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

function captured(state: StepState): string | undefined {
  const value = state.captures.get('job_id');
  return typeof value === 'string' ? value : undefined;
}

/** What a seed test observes through the built-in worker. */
export interface Behaviour {
  /** Set when the test's `setup` names a handler: the worker's queues and configuration. */
  worker?: { queues: string[]; config: JsonObject };
  assertions: SeedAssertion[];
  /** The whole test's budget (seed `timeout`), from its start. */
  timeoutMs: number;
  /** Cancel the captured job at the end if it is still live (input or assertions given). */
  cleanup: boolean;
}

export interface WorkerSettings {
  baseUrl: string;
  timeoutMs: number;
  /** Parallel fetch loops of the built-in worker (default 4). */
  workerConcurrency?: number;
}

/** One test's run of its behaviour: the worker, and the job the assertions follow. */
export class BehaviourRun {
  readonly behaviour: Behaviour;
  readonly #started: number;
  #worker: BuiltinWorker | undefined;
  #jobId: string | undefined;

  constructor(behaviour: Behaviour, started: number) {
    this.behaviour = behaviour;
    this.#started = started;
  }

  /** Starts the built-in worker, if the test has one. */
  start(settings: WorkerSettings, notes: string[]): void {
    const spec = this.behaviour.worker;
    if (spec === undefined) return;
    this.#worker = new BuiltinWorker({
      baseUrl: settings.baseUrl,
      queues: spec.queues,
      config: spec.config,
      concurrency: settings.workerConcurrency,
      timeoutMs: settings.timeoutMs,
    });
    this.#worker.start();
    notes.push(`built-in worker ${this.#worker.workerId} on queues ${spec.queues.join(', ')}`);
  }

  /** The `assertion` block: the captured job's attempts, observed through the worker. */
  async assertAttempts(state: StepState): Promise<StepResult[]> {
    this.#jobId = captured(state) ?? this.#jobId;
    const { assertions } = this.behaviour;
    if (assertions.length === 0 || !this.#worker) return [];
    if (this.#jobId === undefined) {
      return [
        {
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
        },
      ];
    }
    const budgetEnd = this.#started + this.behaviour.timeoutMs;
    return evaluateAssertions(assertions, this.#jobId, this.#worker, state, budgetEnd);
  }

  /** Stops the worker (noting what it was refused) and cancels the job if still live. */
  /** The job to clean up: the one the assertions followed, else the one captured by now. */
  rememberJob(state: StepState): void {
    this.#jobId ??= captured(state);
  }

  async finish(state: StepState, notes: string[]): Promise<void> {
    const worker = this.#worker;
    if (worker) {
      await worker.stop();
      for (const e of worker.events) {
        if (e.kind === 'error' || (e.status !== undefined && e.status !== 200)) {
          notes.push(`worker: ${describeEvent(e)}${e.job_id ? ` (job ${e.job_id})` : ''}`);
        }
      }
    }
    const jobId = this.#jobId;
    if (jobId !== undefined && this.behaviour.cleanup) {
      // Leave no live job behind for the next test (a held test.timeout job, for example).
      const job = await readJob(state, jobId);
      const jobState = job?.state;
      if (isJobState(jobState) && !isTerminal(jobState)) {
        const path = `/ojs/v1/jobs/${encodeURIComponent(jobId)}`;
        await send(state, 'DELETE', path, {}, undefined).catch(() => undefined);
      }
    }
  }
}
