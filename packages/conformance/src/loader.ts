/**
 * Loading and selection of official conformance test files (digest §1.1): every `*.json` under
 * the given paths (symlinked directories are not followed, as with Go's filepath.Walk), parsed
 * strictly enough that a malformed file aborts the run, sorted by `test_id`.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  EXT_LEVEL,
  type Json,
  type JsonObject,
  type Step,
  type StepAssertions,
  type TestCase,
} from './types.ts';

/** Configuration problem: unreadable path, invalid JSON or a field of the wrong type. */
export class SuiteLoadError extends Error {
  override name = 'SuiteLoadError';
}

export interface TestFilter {
  level?: number;
  category?: string;
  testId?: string;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `level` may be a number or a string; "ext"/"extension" means level 99. */
export function parseLevel(value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string') {
    const text = value.trim().toLowerCase();
    if (text === 'ext' || text === 'extension') return EXT_LEVEL;
    if (/^-?\d+$/.test(text)) return Number(text);
  }
  throw new SuiteLoadError(`invalid level ${JSON.stringify(value)}`);
}

function optionalString(obj: JsonObject, key: string, where: string): string {
  const value = obj[key];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new SuiteLoadError(`${where}: "${key}" must be a string`);
  return value;
}

function optionalNumber(obj: JsonObject, key: string, where: string): number {
  const value = obj[key];
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || value < 0) {
    throw new SuiteLoadError(`${where}: "${key}" must be a non-negative number`);
  }
  return value;
}

function parseAssertions(value: Json | undefined, where: string): StepAssertions {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw new SuiteLoadError(`${where}: "assertions" must be an object`);
  const out: StepAssertions = { status: value.status, status_in: value.status_in };
  for (const key of ['headers', 'body'] as const) {
    const part = value[key];
    if (part === undefined || part === null) continue;
    if (!isObject(part))
      throw new SuiteLoadError(`${where}: "assertions.${key}" must be an object`);
    out[key] = part;
  }
  return out;
}

function parseStep(raw: Json, where: string): Step {
  if (!isObject(raw)) throw new SuiteLoadError(`${where}: step must be an object`);
  const headers: Record<string, string> = {};
  if (raw.headers !== undefined && raw.headers !== null) {
    if (!isObject(raw.headers)) throw new SuiteLoadError(`${where}: "headers" must be an object`);
    for (const [name, value] of Object.entries(raw.headers)) {
      if (typeof value !== 'string')
        throw new SuiteLoadError(`${where}: header "${name}" must be a string`);
      headers[name] = value;
    }
  }
  let parallel: string[] = [];
  const pw = raw.parallel_with;
  if (typeof pw === 'string') parallel = pw === '' ? [] : [pw];
  else if (Array.isArray(pw) && pw.every((p) => typeof p === 'string')) parallel = pw as string[];
  else if (pw !== undefined && pw !== null) {
    throw new SuiteLoadError(`${where}: "parallel_with" must be a step id or a list of ids`);
  }
  const step: Step = {
    id: optionalString(raw, 'id', where),
    action: optionalString(raw, 'action', where),
    path: optionalString(raw, 'path', where),
    headers,
    delay_ms: optionalNumber(raw, 'delay_ms', where),
    duration_ms: optionalNumber(raw, 'duration_ms', where),
    assertions: parseAssertions(raw.assertions, where),
    parallel_with: parallel,
  };
  // A JSON null body is "no body", like a nil interface in the Go runner.
  if (raw.body !== undefined && raw.body !== null) step.body = raw.body;
  return step;
}

function parseSteps(value: Json | undefined, where: string): Step[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new SuiteLoadError(`${where}: steps must be an array`);
  return value.map((raw, i) => parseStep(raw, `${where}[${i}]`));
}

function parsePhase(value: Json | undefined, where: string): Step[] {
  if (value === undefined || value === null) return [];
  if (!isObject(value)) throw new SuiteLoadError(`${where} must be an object`);
  return parseSteps(value.steps, `${where}.steps`);
}

/** Validates one decoded test file. */
export function parseTestCase(raw: unknown, file: string): TestCase {
  if (!isObject(raw)) throw new SuiteLoadError(`${file}: test file must be a JSON object`);
  let level: number;
  try {
    level = parseLevel(raw.level ?? 0);
  } catch (err) {
    throw new SuiteLoadError(`${file}: ${(err as Error).message}`);
  }
  return {
    test_id: optionalString(raw, 'test_id', file),
    level,
    category: optionalString(raw, 'category', file),
    name: optionalString(raw, 'name', file),
    description: optionalString(raw, 'description', file),
    file,
    setup: parsePhase(raw.setup, `${file}: setup`),
    steps: parseSteps(raw.steps, `${file}: steps`),
    teardown: parsePhase(raw.teardown, `${file}: teardown`),
  };
}

/** Lists `*.json` files under `root` in lexical order; symlinked directories are skipped. */
async function collectFiles(root: string, out: string[]): Promise<void> {
  const entries = await readdir(root, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const full = path.join(root, entry.name);
    if (entry.isDirectory()) await collectFiles(full, out);
    else if (entry.name.endsWith('.json')) {
      if (entry.isFile()) out.push(full);
      else if (entry.isSymbolicLink() && (await stat(full).catch(() => null))?.isFile())
        out.push(full);
    }
  }
}

async function loadFile(file: string): Promise<TestCase> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new SuiteLoadError(`${file}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new SuiteLoadError(`${file}: invalid JSON: ${(err as Error).message}`);
  }
  return parseTestCase(raw, file);
}

/** Loads every test under the given files/directories, sorted by test_id (stable by path). */
export async function loadSuites(roots: string[]): Promise<TestCase[]> {
  const files: string[] = [];
  for (const root of roots) {
    const info = await stat(root).catch((err: Error) => {
      throw new SuiteLoadError(`cannot read suites path ${root}: ${err.message}`);
    });
    if (info.isDirectory()) await collectFiles(root, files);
    else files.push(root);
  }
  const tests = await Promise.all(files.map(loadFile));
  return tests.sort((a, b) => (a.test_id < b.test_id ? -1 : a.test_id > b.test_id ? 1 : 0));
}

/** Exact-match filters; every given filter must hold. */
export function selectTests(tests: TestCase[], filter: TestFilter): TestCase[] {
  return tests.filter(
    (t) =>
      (filter.level === undefined || t.level === filter.level) &&
      (filter.category === undefined || t.category === filter.category) &&
      (filter.testId === undefined || t.test_id === filter.testId),
  );
}
