/**
 * Shapes shared by the loader, runner and report. Test files are the official OJS conformance
 * JSON format; only the fields the reference runner honours are modelled (conformance digest
 * §1.3), everything else in a file is kept out of these types on purpose.
 */

/** A JSON value as produced by JSON.parse. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

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
  phase: 'setup' | 'test' | 'teardown';
  action: string;
  url?: string;
  status: StepStatus;
  duration_ms: number;
  response?: StepResponse;
  failures: AssertionFailure[];
  /** Non-fatal remarks, e.g. a transport error tolerated for a non-standard method. */
  notes?: string[];
}

export type TestStatus = 'pass' | 'fail' | 'error';

export interface TestResult {
  test_id: string;
  name: string;
  level: number;
  category: string;
  file: string;
  status: TestStatus;
  duration_ms: number;
  steps: StepResult[];
}
