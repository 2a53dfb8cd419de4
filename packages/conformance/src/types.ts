/**
 * Shapes shared by the loader, runner and report. Test files are the official OJS conformance
 * JSON format; only the fields the reference runner honours are modelled (conformance digest
 * §1.3), everything else in a file is kept out of these types on purpose.
 */

/** A JSON value as produced by JSON.parse. */
import { isObject } from '@ojs/core';
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** Core's object test, typed for parsed JSON. */
export const isJsonObject = (value: unknown): value is JsonObject => isObject(value);

/** Level number used for tests declared as "ext"/"extension". */
export const EXT_LEVEL = 99;

export interface StepAssertions {
  status?: Json;
  status_in?: Json;
  headers?: JsonObject;
  body?: JsonObject;
}

export interface Step {
  id: string;
  action: string;
  path: string;
  headers: Record<string, string>;
  /** undefined = the step sends no body. */
  body?: Json;
  delay_ms: number;
  duration_ms: number;
  assertions: StepAssertions;
  /** Ids of steps that run concurrently with this one. */
  parallel_with: string[];
}

export interface TestCase {
  /** Absent or 'official' for the official format. */
  format?: 'official';
  test_id: string;
  level: number;
  category: string;
  name: string;
  description: string;
  /** Path of the file the test was loaded from. */
  file: string;
  setup: Step[];
  steps: Step[];
  teardown: Step[];
}

/** One failed expectation inside a step. */
export interface AssertionFailure {
  /** "status", "header <Name>", a JSONPath, "$or", or "request". */
  path: string;
  expected: string;
  actual: string;
  message: string;
}

export interface StepResponse {
  status: number;
  headers: Record<string, string>;
  /** Parsed JSON when the body is JSON, raw text otherwise. */
  body: Json | string | undefined;
}

export type StepStatus = 'pass' | 'fail';

export interface StepResult {
  id: string;
  /** `input` and `assertion` only occur in seed-format tests. */
  phase: 'setup' | 'test' | 'teardown' | 'input' | 'assertion';
  action: string;
  url?: string;
  status: StepStatus;
  duration_ms: number;
  response?: StepResponse;
  failures: AssertionFailure[];
  /** Non-fatal remarks, e.g. a transport error tolerated for a non-standard method. */
  notes?: string[];
}

/** `skip` only occurs for seed-format tests (unmet `requires`, deprecated tests). */
export type TestStatus = 'pass' | 'fail' | 'error' | 'skip';

export interface TestResult {
  test_id: string;
  name: string;
  level: number;
  category: string;
  file: string;
  status: TestStatus;
  duration_ms: number;
  steps: StepResult[];
  /** 'seed' for seed-format tests; absent for the official format. */
  format?: 'seed';
  /** One-line explanation of a failure, error or skip (seed §8.4 `reason`). */
  reason?: string;
  /** Deprecated tests (seed §9.4) are reported but never count toward conformance. */
  deprecated?: boolean;
  /** Built-in worker activity and other remarks, in order. */
  notes?: string[];
}

// ---------------------------------------------------------------------------------------------
// Seed format (seed §5)

export interface SeedExpect {
  status?: Json;
  headers?: JsonObject;
  /** Dotted paths relative to the body root (`job.id`), or `$.`-prefixed JSONPath. */
  body?: JsonObject;
}

export interface SeedStep {
  /** 1-based position in its block. */
  index: number;
  /** `id`/`name` of the step when given, else `step-<index>`. */
  id: string;
  /** The action as written, e.g. `POST /ojs/v1/jobs`. */
  action: string;
  /** Upper-case method; `WAIT` for a step that only waits. */
  method: string;
  path: string;
  headers: Record<string, string>;
  /** undefined = no request body. */
  body?: Json;
  expect: SeedExpect;
  /** Capture name -> source (`body.job.id`, `headers.Location`, `status`). */
  capture: Record<string, string>;
  wait_ms: number;
  /** Re-send the step until `expect` holds, at most this long (format extension). */
  poll_ms: number;
}

export interface SeedTiming {
  text: string;
  min: number;
  max: number;
  target?: number;
}

export interface SeedAssertion {
  index: number;
  attempt: number;
  state_after?: string;
  delay_after_failure?: SeedTiming;
  active_for?: SeedTiming;
  /** Matcher for the job's `result` after this attempt (format extension). */
  result?: Json;
}

export interface SeedSetup {
  /** Handler names the test declares (the built-in worker serves all nine standard ones). */
  handlers: string[];
  behavior?: string;
  queues: string[];
  /** Handler configuration: `duration` / `duration_ms` (test.slow), `result` (test.produce). */
  config: JsonObject;
}

export interface SeedTestCase {
  format: 'seed';
  test_id: string;
  level: number;
  name: string;
  description: string;
  category: string;
  tags: string[];
  requires: string[];
  file: string;
  setup: SeedSetup | null;
  input?: JsonObject;
  steps: SeedStep[];
  assertions: SeedAssertion[];
  teardown: SeedStep[];
  deprecated: boolean;
  deprecated_reason?: string;
  /** Upper bound for the behavioural part of the test. */
  timeout_ms: number;
}

/** A loaded test of either format. */
export type AnyTestCase = TestCase | SeedTestCase;

export function isSeedTest(test: AnyTestCase): test is SeedTestCase {
  return test.format === 'seed';
}
