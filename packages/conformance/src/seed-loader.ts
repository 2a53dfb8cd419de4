/**
 * Loading of seed-format test files (seed §5.2-§5.7) and the per-file format detection.
 *
 * The seed format is validated strictly: an unknown step, expectation or assertion key is a
 * load error (exit 2), because a misspelt `expct` would otherwise make a test pass vacuously.
 * Free-text keys (`description`, `comment`, `notes`) are allowed everywhere.
 */
import { isJobState, JOB_STATES } from '@ojs/core';
import type { Behaviour } from './behaviour.ts';
import { parseDurationMs, parseTiming } from './durations.ts';
import { SuiteLoadError } from './loader-error.ts';
import type { Block, TestPlan } from './plan.ts';
import type { RunStep } from './steps.ts';
import type {
  Json,
  JsonObject,
  SeedAssertion,
  SeedExpect,
  SeedSetup,
  SeedStep,
  SeedTestCase,
} from './types.ts';
import { EXT_LEVEL, isJsonObject } from './types.ts';

/** The standard test handlers every harness must provide (seed §5.4). */
export const STANDARD_HANDLERS = [
  'test.echo',
  'test.fail_once',
  'test.fail_twice',
  'test.fail_always',
  'test.slow',
  'test.timeout',
  'test.panic',
  'test.produce',
  'test.noop',
] as const;

export type StandardHandler = (typeof STANDARD_HANDLERS)[number];

const FREE_TEXT = new Set(['description', 'comment', 'notes']);
const TEST_KEYS = new Set([
  'format',
  'test_id',
  'level',
  'name',
  'description',
  'category',
  'tags',
  'requires',
  'setup',
  'input',
  'steps',
  'assertions',
  'teardown',
  'deprecated',
  'deprecated_reason',
  'timeout',
  'spec_refs',
  'notes',
  'comment',
]);
const STEP_KEYS = new Set([
  'id',
  'name',
  'action',
  'headers',
  'body',
  'expect',
  'capture',
  'wait',
  'poll',
]);
const EXPECT_KEYS = new Set(['status', 'headers', 'body']);
const SETUP_KEYS = new Set([
  'handler',
  'handlers',
  'behavior',
  'queues',
  'cron',
  'jobs',
  'config',
  'duration',
  'duration_ms',
  'result',
]);
const ASSERTION_KEYS = new Set([
  'attempt',
  'state_after',
  'delay_after_failure',
  'active_for',
  'result',
]);
const ACTION = /^([A-Za-z]+)\s+(\/\S*)$/;
const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * Decides the format of one decoded test file: `"format"` when given, else seed markers
 * (`"action": "POST /path"` steps, a `wait`, an `assertions` array, `input`, `setup.handler`).
 * No official suite file has any of these (checked against v0.4.0 in the tests).
 */
export function detectFormat(raw: unknown): 'seed' | 'official' {
  if (!isJsonObject(raw)) return 'official';
  if (raw.format === 'seed' || raw.format === 'official') return raw.format;
  if (Array.isArray(raw.assertions) || isJsonObject(raw.input)) return 'seed';
  const setup = raw.setup;
  if (isJsonObject(setup) && (typeof setup.handler === 'string' || Array.isArray(setup.handlers)))
    return 'seed';
  if (Array.isArray(raw.steps)) {
    for (const step of raw.steps) {
      if (!isJsonObject(step)) continue;
      if (typeof step.action === 'string' && ACTION.test(step.action.trim())) return 'seed';
      if (typeof step.wait === 'string') return 'seed';
    }
  }
  return 'official';
}

class Reader {
  readonly where: string;
  constructor(where: string) {
    this.where = where;
  }

  fail(message: string): never {
    throw new SuiteLoadError(`${this.where}: ${message}`);
  }

  keys(obj: JsonObject, allowed: Set<string>, what: string): void {
    for (const key of Object.keys(obj)) {
      if (!allowed.has(key) && !FREE_TEXT.has(key)) {
        this.fail(`unknown ${what} key "${key}" (allowed: ${[...allowed].join(', ')})`);
      }
    }
  }

  string(obj: JsonObject, key: string, required = false): string {
    const value = obj[key];
    if (value === undefined || value === null) {
      if (required) this.fail(`"${key}" is required`);
      return '';
    }
    if (typeof value !== 'string') this.fail(`"${key}" must be a string`);
    return value;
  }

  strings(obj: JsonObject, key: string): string[] {
    const value = obj[key];
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
      this.fail(`"${key}" must be an array of strings`);
    }
    return value as string[];
  }

  duration(obj: JsonObject, key: string): number {
    const value = obj[key];
    if (value === undefined || value === null) return 0;
    const ms = typeof value === 'string' ? parseDurationMs(value) : null;
    if (ms === null) this.fail(`"${key}" must be an ISO 8601 duration such as "PT5S"`);
    return ms;
  }
}

function parseLevelValue(value: unknown, r: Reader): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 4)
    return value;
  if (typeof value === 'string') {
    const text = value.trim().toLowerCase();
    if (text === 'ext' || text === 'extension') return EXT_LEVEL;
    if (/^[0-4]$/.test(text)) return Number(text);
  }
  return r.fail(`"level" must be an integer 0-4 (or "ext"), got ${JSON.stringify(value)}`);
}

function parseExpect(value: Json | undefined, r: Reader): SeedExpect {
  if (!isJsonObject(value)) return r.fail('"expect" must be an object');
  r.keys(value, EXPECT_KEYS, 'expect');
  const out: SeedExpect = {};
  if (value.status !== undefined) out.status = value.status;
  for (const key of ['headers', 'body'] as const) {
    const part = value[key];
    if (part === undefined || part === null) continue;
    if (!isJsonObject(part)) r.fail(`"expect.${key}" must be an object`);
    out[key] = part;
  }
  return out;
}

function parseCapture(value: Json | undefined, r: Reader): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value)) return r.fail('"capture" must be an object');
  const out: Record<string, string> = {};
  for (const [name, source] of Object.entries(value)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) r.fail(`capture name "${name}" is not a name`);
    if (typeof source !== 'string' || !/^(status$|body($|[.[])|headers\.)/.test(source)) {
      r.fail(`capture "${name}" must read "status", "body.<path>" or "headers.<Name>"`);
    }
    out[name] = source;
  }
  return out;
}

function parseStep(raw: Json, index: number, r0: Reader): SeedStep {
  const r = new Reader(`${r0.where}[${index - 1}]`);
  if (!isJsonObject(raw)) return r.fail('step must be an object');
  r.keys(raw, STEP_KEYS, 'step');
  const action = r.string(raw, 'action', true).trim();
  const id = r.string(raw, 'id') || r.string(raw, 'name') || `step-${index}`;
  const headers: Record<string, string> = {};
  if (raw.headers !== undefined && raw.headers !== null) {
    if (!isJsonObject(raw.headers)) r.fail('"headers" must be an object');
    for (const [name, value] of Object.entries(raw.headers)) {
      if (typeof value !== 'string') r.fail(`header "${name}" must be a string`);
      headers[name] = value;
    }
  }
  const step: SeedStep = {
    index,
    id,
    action,
    method: 'WAIT',
    path: '',
    headers,
    expect: {},
    capture: parseCapture(raw.capture, r),
    wait_ms: r.duration(raw, 'wait'),
    poll_ms: r.duration(raw, 'poll'),
  };
  if (action.toUpperCase() === 'WAIT') {
    if (raw.expect !== undefined) r.fail('a WAIT step has no "expect"');
    return step;
  }
  const match = ACTION.exec(action);
  if (!match) {
    return r.fail(
      `"action" must be "METHOD /path" (e.g. "POST /ojs/v1/jobs") or "WAIT", got "${action}"`,
    );
  }
  step.method = match[1]!.toUpperCase();
  step.path = match[2]!;
  if (raw.expect === undefined) r.fail('"expect" is required (seed §5.5)');
  step.expect = parseExpect(raw.expect, r);
  if (raw.body !== undefined && raw.body !== null) step.body = raw.body;
  return step;
}

function parseSteps(value: Json | undefined, r: Reader): SeedStep[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return r.fail('steps must be an array');
  return value.map((raw, i) => parseStep(raw, i + 1, r));
}

function parseSetup(value: Json | undefined, r0: Reader): SeedSetup | null {
  if (value === undefined || value === null) return null;
  const r = new Reader(`${r0.where}: setup`);
  if (!isJsonObject(value)) return r.fail('must be an object');
  r.keys(value, SETUP_KEYS, 'setup');
  const handlers = [...r.strings(value, 'handlers')];
  const single = r.string(value, 'handler');
  if (single) handlers.unshift(single);
  for (const name of handlers) {
    if (!(STANDARD_HANDLERS as readonly string[]).includes(name)) {
      r.fail(`unknown handler "${name}" (standard handlers: ${STANDARD_HANDLERS.join(', ')})`);
    }
  }
  const config: JsonObject = {};
  if (value.config !== undefined && value.config !== null) {
    if (!isJsonObject(value.config)) r.fail('"config" must be an object');
    Object.assign(config, value.config);
  }
  for (const key of ['duration', 'duration_ms', 'result'] as const) {
    if (value[key] !== undefined) config[key] = value[key]!;
  }
  if (config.duration !== undefined) {
    if (typeof config.duration !== 'string' || parseDurationMs(config.duration) === null)
      r.fail('"duration" must be a duration such as "PT2S"');
  }
  for (const key of ['cron', 'jobs'] as const) {
    const list = value[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list) || !list.every(isJsonObject)) {
      return r.fail(`"${key}" must be an array of objects`);
    }
    if (list.length > 0) config[key] = list;
  }
  const setup: SeedSetup = { handlers, queues: r.strings(value, 'queues'), config };
  const behavior = r.string(value, 'behavior');
  if (behavior) setup.behavior = behavior;
  return setup;
}

function parseAssertions(value: Json | undefined, r0: Reader): SeedAssertion[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return r0.fail('"assertions" must be an array');
  let previous = 0;
  return value.map((raw, i) => {
    const r = new Reader(`${r0.where}: assertions[${i}]`);
    if (!isJsonObject(raw)) return r.fail('must be an object');
    r.keys(raw, ASSERTION_KEYS, 'assertion');
    const attempt = raw.attempt;
    if (typeof attempt !== 'number' || !Number.isInteger(attempt) || attempt < 1) {
      return r.fail('"attempt" must be a positive integer');
    }
    if (attempt <= previous) r.fail('assertions must be in increasing attempt order');
    previous = attempt;
    const out: SeedAssertion = { index: i + 1, attempt };
    if (raw.state_after !== undefined) {
      if (!isJobState(raw.state_after)) {
        return r.fail(`"state_after" must be one of ${JOB_STATES.join(', ')}`);
      }
      out.state_after = raw.state_after;
    }
    for (const key of ['delay_after_failure', 'active_for'] as const) {
      const text = raw[key];
      if (text === undefined) continue;
      if (typeof text !== 'string') return r.fail(`"${key}" must be a string such as "~1s"`);
      try {
        out[key] = parseTiming(text);
      } catch (err) {
        r.fail(`"${key}": ${(err as Error).message}`);
      }
    }
    if (out.delay_after_failure !== undefined && attempt === 1) {
      r.fail('"delay_after_failure" needs a previous attempt (attempt >= 2)');
    }
    if (raw.result !== undefined) out.result = raw.result;
    return out;
  });
}

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

/** A POST of a setup job or cron entry (or the input job) that must succeed. */
function postStep(index: number, path: string, body: Json): SeedStep {
  return {
    index,
    id: `setup-${index}`,
    action: `POST ${path}`,
    method: 'POST',
    path,
    headers: {},
    body,
    expect: { status: { $in: [200, 201] } },
    capture: {},
    wait_ms: 0,
    poll_ms: 0,
  };
}

/**
 * A seed test in the common model (seed §5): `setup.jobs` and `setup.cron` as setup steps;
 * with `input`, the input job (captured as `job_id`), the assertions, then the steps that
 * verify the outcome; without, the steps (one captures `job_id`), then the assertions. The
 * first failing step ends the test: later steps depend on its captures and would only add
 * noise to the explanation.
 */
export function seedPlan(test: SeedTestCase): TestPlan {
  const setup: SeedStep[] = [];
  for (const job of (test.setup?.config.jobs as Json[] | undefined) ?? [])
    setup.push(postStep(setup.length + 1, '/ojs/v1/jobs', job));
  for (const cron of (test.setup?.config.cron as Json[] | undefined) ?? [])
    setup.push(postStep(setup.length + 1, '/ojs/v1/cron', cron));
  const steps: Block = { phase: 'test', steps: test.steps.map(seedRunStep), stopOnFailure: true };
  let blocks: Block[] = [steps, { phase: 'assertion' }];
  if (test.input) {
    const input = { ...postStep(1, '/ojs/v1/jobs', test.input), id: 'input' };
    input.capture = { job_id: 'body.job.id' };
    const inputBlock: Block = { phase: 'input', steps: [seedRunStep(input)], stopOnFailure: true };
    blocks = [inputBlock, { phase: 'assertion' }, steps];
  }
  const behaviour: Behaviour = {
    assertions: test.assertions,
    timeoutMs: test.timeout_ms,
    cleanup: test.input !== undefined || test.assertions.length > 0,
  };
  if (test.setup && test.setup.handlers.length > 0) {
    const queues = new Set(['default', ...test.setup.queues]);
    queuesIn(test.input, queues);
    for (const step of test.steps) queuesIn(step.body, queues);
    queuesIn(test.setup.config.jobs, queues);
    queuesIn(test.setup.config.cron, queues);
    behaviour.worker = { queues: [...queues], config: test.setup.config };
  }
  const plan: TestPlan = {
    format: 'seed',
    test_id: test.test_id,
    name: test.name,
    level: test.level,
    category: test.category,
    file: test.file,
    requires: test.requires,
    setup: setup.map(seedRunStep),
    blocks,
    teardown: test.teardown.map(seedRunStep),
    behaviour,
  };
  if (test.deprecated) plan.deprecated = test.deprecated_reason ?? '';
  return plan;
}

/** A seed step in the common step model (steps.ts): its `wait` is the delay before it. */
export function seedRunStep(step: SeedStep): RunStep {
  return {
    id: step.id,
    action: step.method,
    method: step.method,
    path: step.path,
    headers: step.headers,
    ...(step.body === undefined ? {} : { body: step.body }),
    delay_ms: step.wait_ms,
    wait_ms: 0,
    poll_ms: step.poll_ms,
    parallel_with: [],
    capture: step.capture,
    expect: { dialect: 'seed', expect: step.expect, index: step.index },
  };
}

/** Validates one decoded seed-format test file. */
export function parseSeedTest(raw: unknown, file: string): SeedTestCase {
  const r = new Reader(file);
  if (!isJsonObject(raw)) return r.fail('test file must be a JSON object');
  r.keys(raw, TEST_KEYS, 'test');
  const testId = r.string(raw, 'test_id', true);
  if (raw.level === undefined) r.fail('"level" is required');
  const tags = r.strings(raw, 'tags');
  let teardownRaw: Json | undefined = raw.teardown;
  if (isJsonObject(teardownRaw)) teardownRaw = teardownRaw.steps;
  const test: SeedTestCase = {
    format: 'seed',
    test_id: testId,
    level: parseLevelValue(raw.level, r),
    name: r.string(raw, 'name'),
    description: r.string(raw, 'description'),
    category: r.string(raw, 'category') || tags[0] || '',
    tags,
    requires: r.strings(raw, 'requires'),
    file,
    setup: parseSetup(raw.setup, r),
    steps: parseSteps(raw.steps, new Reader(`${file}: steps`)),
    assertions: parseAssertions(raw.assertions, r),
    teardown: parseSteps(teardownRaw, new Reader(`${file}: teardown`)),
    deprecated: raw.deprecated === true,
    timeout_ms: r.duration(raw, 'timeout') || DEFAULT_TIMEOUT_MS,
  };
  if (raw.deprecated !== undefined && typeof raw.deprecated !== 'boolean')
    r.fail('"deprecated" must be a boolean');
  if (test.deprecated) {
    const reason = r.string(raw, 'deprecated_reason');
    if (!reason) return r.fail('a deprecated test needs "deprecated_reason" (seed §9.4)');
    test.deprecated_reason = reason;
  }
  if (raw.input !== undefined && raw.input !== null) {
    if (!isJsonObject(raw.input)) return r.fail('"input" must be a job envelope object');
    test.input = raw.input;
  }
  if (test.assertions.length > 0) {
    const capturesJobId = test.steps.some((s) => 'job_id' in s.capture);
    if (test.input === undefined && !capturesJobId) {
      r.fail('"assertions" need an "input" job or a step that captures "job_id"');
    }
    if (test.setup === null || test.setup.handlers.length === 0) {
      r.fail('"assertions" need "setup.handler" so the built-in worker executes the job');
    }
  }
  if (test.steps.length === 0 && test.assertions.length === 0) {
    r.fail('a test needs "steps" or "assertions"');
  }
  return test;
}
