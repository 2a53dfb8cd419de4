/**
 * The one step model both suite formats load into, and the one runner that executes it
 * (decision 0090). A step is an HTTP request (or a WAIT) with a delay before it, an optional
 * polling window, captures, and an expectation in one of two dialects:
 *
 * - `official` (digest §1.5-§1.10): templates `{{steps.<id>.response.body.<path>}}` read earlier
 *   steps' JSON bodies, substituted in the serialised body text; assertions are
 *   `status`/`status_in`/`headers`/`body` (assertions.ts, the reference runner's semantics);
 * - `seed` (seed §5): `{{name}}` placeholders read captures and time templates, substituted in
 *   values, headers and the expectation; `expect` is matched with the seed matchers.
 *
 * What the dialects share is here: delay, WAIT, polling until the expectation holds, sending,
 * parsing the reply, captures, parallel groups (`parallel_with`) and stopping a phase at the
 * first failure.
 */

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { OJS_MEDIA_TYPE } from '@ojs/core';
import {
  checkBody,
  checkExpect,
  checkHeaders,
  checkStatus,
  failure,
  headerValue,
} from './assertions.ts';
import { formatMs } from './durations.ts';
import { type HttpClient, TimeoutError } from './http.ts';
import { resolvePath } from './jsonpath.ts';
import { resolveText, resolveValue, type TemplateContext } from './seed-templates.ts';
import { resolveTemplates } from './templates.ts';
import type {
  AssertionFailure,
  Json,
  JsonObject,
  SeedExpect,
  StepAssertions,
  StepResponse,
  StepResult,
} from './types.ts';
import { isJsonObject } from './types.ts';

export { OJS_MEDIA_TYPE };

const POLL_INTERVAL_MS = 200;
/** Raw response text kept in results when the body is not JSON. */
const MAX_TEXT_BODY = 4096;
const STANDARD_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const CLOSED_CONNECTION_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

export type Expectation =
  | { dialect: 'official'; assertions: StepAssertions }
  | { dialect: 'seed'; expect: SeedExpect; index: number };

export interface RunStep {
  id: string;
  /** As shown in results: the official action, or the seed step's method. */
  action: string;
  /** What is sent; `WAIT` sends nothing. */
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Json;
  /** Slept before the step. */
  delay_ms: number;
  /** How long a WAIT step waits (after the delay). */
  wait_ms: number;
  /** Resend until the expectation holds, for up to this long (0: once). */
  poll_ms: number;
  /** Steps run concurrently with this one (official format). */
  parallel_with: string[];
  /** Captures of the seed format: name -> `status`, `headers.X`, `body.path`. */
  capture: Record<string, string>;
  expect: Expectation;
}

export interface StepOptions {
  /** Server base URL; a trailing slash is trimmed. */
  baseUrl: string;
  /** Per-request timeout. */
  timeoutMs: number;
}

/** What the steps of one test share. */
export interface StepState {
  options: StepOptions;
  client: HttpClient;
  /** Official: JSON-object response bodies by step id, the only source its templates read. */
  bodies: Map<string, JsonObject>;
  /** Seed: captured values. */
  captures: Map<string, Json>;
}

export function newStepState(options: StepOptions, client: HttpClient): StepState {
  return { options, client, bodies: new Map(), captures: new Map() };
}

export function elapsed(start: number): number {
  return Math.round(performance.now() - start);
}

function parseBody(text: string): Json | string | undefined {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text.length > MAX_TEXT_BODY ? `${text.slice(0, MAX_TEXT_BODY)}...` : text;
  }
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as NodeJS.ErrnoException).code;
  return code !== undefined && !err.message.includes(code)
    ? `${code}: ${err.message}`
    : err.message;
}

/** Sends one request and parses the reply. */
export async function send(
  state: StepState,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<StepResponse> {
  const out = { ...headers };
  if (body !== undefined && headerValue(out, 'content-type') === undefined) {
    out['Content-Type'] = OJS_MEDIA_TYPE;
  }
  const res = await state.client.request({
    method,
    url: state.options.baseUrl.replace(/\/+$/, '') + path,
    headers: out,
    body,
    timeoutMs: state.options.timeoutMs,
  });
  return { status: res.status, headers: res.headers, body: parseBody(res.body) };
}

interface Prepared {
  path: string;
  headers: Record<string, string>;
  body?: string;
  expect: Expectation;
  /** Placeholders that could not be resolved. */
  unresolved: string[];
}

/** Substitutes the step's templates, in its dialect. */
function prepare(step: RunStep, state: StepState): Prepared {
  if (step.expect.dialect === 'official') {
    const prepared: Prepared = {
      path: resolveTemplates(step.path, state.bodies),
      headers: { ...step.headers },
      expect: step.expect,
      unresolved: [],
    };
    if (step.body !== undefined) {
      prepared.body = resolveTemplates(JSON.stringify(step.body), state.bodies);
    }
    return prepared;
  }
  const ctx: TemplateContext = { captures: state.captures, nowMs: Date.now() };
  const path = resolveText(step.path, ctx, encodeURIComponent);
  const unresolved = [...path.unresolved];
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(step.headers)) {
    const r = resolveText(value, ctx);
    headers[name] = r.value;
    unresolved.push(...r.unresolved);
  }
  const body = step.body === undefined ? undefined : resolveValue(step.body, ctx);
  if (body) unresolved.push(...body.unresolved);
  const expect = resolveValue(step.expect.expect as JsonObject, ctx);
  unresolved.push(...expect.unresolved);
  const prepared: Prepared = {
    path: path.value,
    headers,
    expect: { ...step.expect, expect: expect.value as SeedExpect },
    unresolved,
  };
  if (body !== undefined) prepared.body = JSON.stringify(body.value);
  return prepared;
}

/** The expectation's failures for a reply; an official step's JSON body becomes readable. */
function check(step: RunStep, expect: Expectation, response: StepResponse, state: StepState) {
  if (expect.dialect === 'seed') return checkExpect(expect.index, expect.expect, response);
  const objectBody = isJsonObject(response.body) ? response.body : undefined;
  if (objectBody !== undefined) state.bodies.set(step.id, objectBody);
  else state.bodies.delete(step.id);
  const { assertions } = expect;
  return [
    ...checkStatus(assertions, response.status),
    ...checkHeaders(assertions.headers, response.headers),
    ...checkBody(assertions.body, objectBody, state.bodies),
  ];
}

/**
 * A request that got no reply. The reference runner sends `ASSERT` and lowercase actions as
 * real requests and ignores their assertions; a server that rejects such a request by closing
 * the connection is acceptable (official dialect only).
 */
function requestFailed(
  step: RunStep,
  method: string,
  err: unknown,
  timeoutMs: number,
): { failures: AssertionFailure[]; notes?: string[] } {
  let message: string;
  if (step.expect.dialect === 'seed') {
    message = err instanceof TimeoutError ? 'request timed out' : errorText(err);
  } else {
    message = err instanceof TimeoutError ? `timed out after ${timeoutMs} ms` : errorText(err);
    const { assertions } = step.expect;
    const hasStatus = assertions.status != null || assertions.status_in != null;
    const code = (err as NodeJS.ErrnoException).code;
    const closed =
      (code !== undefined && CLOSED_CONNECTION_CODES.has(code)) ||
      (err instanceof Error && /closed|hang up/i.test(err.message));
    if (!hasStatus && !STANDARD_METHODS.has(method) && closed) {
      return {
        failures: [],
        notes: [`${method} request failed (${message}); tolerated for a non-standard method`],
      };
    }
  }
  const failed = `${method} request failed: ${message}`;
  // The official report shows these two texts as they are; the seed's quotes them like values.
  return {
    failures: [
      step.expect.dialect === 'seed'
        ? failure('request', 'an HTTP response', message, failed)
        : { path: 'request', expected: 'an HTTP response', actual: message, message: failed },
    ],
  };
}

/** One capture: `status`, `headers.X`, `body`, `body.path` or `body[...]`. */
function captured(source: string, response: StepResponse): { value: Json } | { error: string } {
  if (source === 'status') return { value: response.status };
  if (source.startsWith('headers.')) {
    const value = headerValue(response.headers, source.slice('headers.'.length));
    return value === undefined ? { error: `no ${source.slice(8)} header` } : { value };
  }
  const body = response.body;
  if (body === undefined || typeof body === 'string') return { error: 'the body is not JSON' };
  if (source === 'body') return { value: body };
  const path = source.startsWith('body[') ? `$${source.slice(4)}` : `$.${source.slice(5)}`;
  const resolved = resolvePath(body, path);
  if (resolved.kind === 'value' && resolved.value !== null) return { value: resolved.value };
  return { error: resolved.kind === 'error' ? resolved.message : `${source} is missing` };
}

/** Runs one step: delay, WAIT or send (resending while polling), check, capture. */
export async function executeStep(
  step: RunStep,
  phase: StepResult['phase'],
  state: StepState,
): Promise<StepResult> {
  const start = performance.now();
  const result: StepResult = {
    id: step.id,
    phase,
    action: step.action,
    status: 'pass',
    duration_ms: 0,
    failures: [],
  };
  if (step.delay_ms > 0) await sleep(step.delay_ms);
  if (step.method === 'WAIT') {
    if (step.wait_ms > 0) await sleep(step.wait_ms);
    result.duration_ms = elapsed(start);
    return result;
  }
  const deadline = performance.now() + step.poll_ms;
  for (let tries = 1; ; tries++) {
    const request = prepare(step, state);
    result.url = state.options.baseUrl.replace(/\/+$/, '') + request.path;
    if (request.unresolved.length > 0) {
      const names = [...new Set(request.unresolved)].map((n) => `{${n}}`).join(', ');
      result.failures = [
        failure(
          'template',
          names,
          undefined,
          `${names} could not be resolved (no earlier step captured it, or a time offset is malformed)`,
        ),
      ];
      break;
    }
    try {
      const response = await send(state, step.method, request.path, request.headers, request.body);
      result.response = response;
      result.failures = check(step, request.expect, response, state);
    } catch (err) {
      const outcome = requestFailed(step, step.method, err, state.options.timeoutMs);
      result.failures = outcome.failures;
      if (outcome.notes) result.notes = outcome.notes;
    }
    if (result.failures.length === 0 || performance.now() + POLL_INTERVAL_MS > deadline) {
      if (step.poll_ms > 0 && tries > 1) {
        result.notes = [`sent ${tries} times while polling (poll ${formatMs(step.poll_ms)})`];
      }
      break;
    }
    await sleep(POLL_INTERVAL_MS);
  }
  if (result.failures.length === 0 && result.response) {
    for (const [name, source] of Object.entries(step.capture)) {
      const got = captured(source, result.response);
      if ('value' in got) state.captures.set(name, got.value);
      else {
        const message = `cannot capture ${name} from ${source}: ${got.error}`;
        result.failures.push(failure(`capture ${name}`, source, undefined, message));
      }
    }
  }
  if (result.failures.length > 0) result.status = 'fail';
  result.duration_ms = elapsed(start);
  return result;
}

/**
 * Splits steps into execution groups: a step plus everything linked to it through
 * `parallel_with` (in either direction, transitively) runs concurrently; others run alone.
 */
export function groupSteps<S extends { id: string; parallel_with: string[] }>(steps: S[]): S[][] {
  const groups: S[][] = [];
  const taken = new Set<number>();
  for (let i = 0; i < steps.length; i++) {
    if (taken.has(i)) continue;
    const members = [i];
    taken.add(i);
    for (let m = 0; m < members.length; m++) {
      const member = steps[members[m]!]!;
      steps.forEach((other, j) => {
        if (taken.has(j)) return;
        if (member.parallel_with.includes(other.id) || other.parallel_with.includes(member.id)) {
          taken.add(j);
          members.push(j);
        }
      });
    }
    members.sort((a, b) => a - b);
    groups.push(members.map((index) => steps[index]!));
  }
  return groups;
}

/** Runs a phase's steps in order (parallel groups together); optionally stops at a failure. */
export async function runPhase(
  steps: RunStep[],
  phase: StepResult['phase'],
  state: StepState,
  stopOnFailure: boolean,
): Promise<StepResult[]> {
  const results: StepResult[] = [];
  for (const group of groupSteps(steps)) {
    const groupResults =
      group.length === 1
        ? [await executeStep(group[0]!, phase, state)]
        : await Promise.all(group.map((step) => executeStep(step, phase, state)));
    results.push(...groupResults);
    if (stopOnFailure && groupResults.some((r) => r.status === 'fail')) break;
  }
  return results;
}

/** POSTs the reset URL (no body); the outcome is ignored, as by the reference runner. */
export async function resetServer(state: StepState, resetUrl: string | undefined): Promise<void> {
  if (!resetUrl) return;
  await state.client
    .request({ method: 'POST', url: resetUrl, headers: {}, timeoutMs: state.options.timeoutMs })
    .catch(() => undefined);
}
