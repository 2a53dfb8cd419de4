/**
 * Loading and selection of conformance test files (digest §1.1): every `*.json` under the given
 * paths (symlinked directories are not followed, as with Go's filepath.Walk), parsed strictly
 * enough that a malformed file aborts the run, sorted by `test_id`. The format is detected per
 * file (`detectFormat`): official files become `TestCase`, seed-format files `SeedTestCase`.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SuiteLoadError } from './loader-error.ts';
import type { TestPlan } from './plan.ts';
import { detectFormat, parseSeedTest } from './seed-loader.ts';
import type { RunStep } from './steps.ts';
import {
  type AnyTestCase,
  EXT_LEVEL,
  isJsonObject,
  isSeedTest,
  type Json,
  type JsonObject,
  type Step,
  type StepAssertions,
  type TestCase,
} from './types.ts';

export { SuiteLoadError };

/** The suites shipped with the package, used when no `--suites` is given. */
export const BUNDLED_SUITES = fileURLToPath(new URL('../suites/', import.meta.url));

export interface TestFilter {
  /**
   * Official files: exactly this level (reference runner). Seed-format files: this level and
   * every level below it (seed §8.3, "--level 1 runs Level 0 and Level 1").
   */
  level?: number;
  /** Levels 0..maxLevel, whatever the format. */
  maxLevel?: number;
  /** Official: exact `category`. Seed: `category` or any tag. */
  category?: string;
  testId?: string;
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
  if (!isJsonObject(value)) throw new SuiteLoadError(`${where}: "assertions" must be an object`);
  const out: StepAssertions = { status: value.status, status_in: value.status_in };
  for (const key of ['headers', 'body'] as const) {
    const part = value[key];
    if (part === undefined || part === null) continue;
    if (!isJsonObject(part))
      throw new SuiteLoadError(`${where}: "assertions.${key}" must be an object`);
    out[key] = part;
  }
  return out;
}

function parseStep(raw: Json, where: string): Step {
  if (!isJsonObject(raw)) throw new SuiteLoadError(`${where}: step must be an object`);
  const headers: Record<string, string> = {};
  if (raw.headers !== undefined && raw.headers !== null) {
    if (!isJsonObject(raw.headers))
      throw new SuiteLoadError(`${where}: "headers" must be an object`);
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

/** An official test in the common model: one block of steps that a failure does not stop. */
export function officialPlan(test: TestCase): TestPlan {
  return {
    format: 'official',
    test_id: test.test_id,
    name: test.name,
    level: test.level,
    category: test.category,
    file: test.file,
    requires: [],
    setup: test.setup.map(officialRunStep),
    blocks: [{ phase: 'test', steps: test.steps.map(officialRunStep), stopOnFailure: false }],
    teardown: test.teardown.map(officialRunStep),
  };
}

/** An official step in the common step model (steps.ts); an empty action is a GET, as in Go. */
export function officialRunStep(step: Step): RunStep {
  return {
    id: step.id,
    action: step.action,
    method: step.action === '' ? 'GET' : step.action,
    path: step.path,
    headers: step.headers,
    ...(step.body === undefined ? {} : { body: step.body }),
    delay_ms: step.delay_ms,
    wait_ms: step.duration_ms,
    poll_ms: 0,
    parallel_with: step.parallel_with,
    capture: {},
    expect: { dialect: 'official', assertions: step.assertions },
  };
}

function parseSteps(value: Json | undefined, where: string): Step[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new SuiteLoadError(`${where}: steps must be an array`);
  return value.map((raw, i) => parseStep(raw, `${where}[${i}]`));
}

function parsePhase(value: Json | undefined, where: string): Step[] {
  if (value === undefined || value === null) return [];
  if (!isJsonObject(value)) throw new SuiteLoadError(`${where} must be an object`);
  return parseSteps(value.steps, `${where}.steps`);
}

/** Validates one decoded test file. */
export function parseTestCase(raw: unknown, file: string): TestCase {
  if (!isJsonObject(raw)) throw new SuiteLoadError(`${file}: test file must be a JSON object`);
  let level: number;
  try {
    level = parseLevel(raw.level ?? 0);
  } catch (err) {
    throw new SuiteLoadError(`${file}: ${(err as Error).message}`);
  }
  return {
    format: 'official',
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

/**
 * Suite metadata of the seed §8.1 layout: a `manifest.json` (suite version, test count) and
 * `handlers/*.json` (handler definitions). They are not tests when they have no `test_id`.
 */
function isSuiteMetadata(file: string, raw: unknown): boolean {
  if (!isJsonObject(raw) || raw.test_id !== undefined) return false;
  return (
    path.basename(file) === 'manifest.json' || path.basename(path.dirname(file)) === 'handlers'
  );
}

type Loaded =
  | { kind: 'test'; test: AnyTestCase }
  | { kind: 'metadata'; file: string; raw: JsonObject };

async function loadFile(file: string): Promise<Loaded> {
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
  if (isSuiteMetadata(file, raw)) return { kind: 'metadata', file, raw: raw as JsonObject };
  const test = detectFormat(raw) === 'seed' ? parseSeedTest(raw, file) : parseTestCase(raw, file);
  return { kind: 'test', test };
}

export interface LoadedSuites {
  tests: AnyTestCase[];
  /** `version` of every suite manifest.json found, in path order. */
  versions: string[];
  /** `test_count` declared by each suite manifest, keyed by its file. */
  declaredCounts: Map<string, number>;
}

/** Loads tests and suite metadata under the given files/directories. */
export async function loadSuitesWithInfo(roots: string[]): Promise<LoadedSuites> {
  const files: string[] = [];
  for (const root of roots) {
    const info = await stat(root).catch((err: Error) => {
      throw new SuiteLoadError(`cannot read suites path ${root}: ${err.message}`);
    });
    if (info.isDirectory()) await collectFiles(root, files);
    else files.push(root);
  }
  const loaded = await Promise.all(files.map(loadFile));
  const tests: AnyTestCase[] = [];
  const versions: string[] = [];
  const declaredCounts = new Map<string, number>();
  for (const item of loaded) {
    if (item.kind === 'test') tests.push(item.test);
    else if (path.basename(item.file) === 'manifest.json') {
      if (typeof item.raw.version === 'string') versions.push(item.raw.version);
      if (typeof item.raw.test_count === 'number')
        declaredCounts.set(item.file, item.raw.test_count);
    }
  }
  if (versions.length === 0) {
    // A sub-directory (e.g. suites/seed/level-1) takes the version of its suite's manifest.
    for (const root of roots) {
      const version = await ancestorSuiteVersion(root);
      if (version !== undefined) versions.push(version);
    }
  }
  tests.sort((a, b) => (a.test_id < b.test_id ? -1 : a.test_id > b.test_id ? 1 : 0));
  return { tests, versions, declaredCounts };
}

/** `version` of the nearest suite manifest.json (with `test_count`) up to 3 levels above. */
async function ancestorSuiteVersion(root: string): Promise<string | undefined> {
  let dir = path.resolve(root);
  for (let i = 0; i < 3; i++) {
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
    try {
      const raw: unknown = JSON.parse(await readFile(path.join(dir, 'manifest.json'), 'utf8'));
      if (
        isJsonObject(raw) &&
        typeof raw.version === 'string' &&
        typeof raw.test_count === 'number'
      )
        return raw.version;
    } catch {
      // No (readable) manifest here; keep walking up.
    }
  }
  return undefined;
}

/** Loads every test under the given files/directories, sorted by test_id (stable by path). */
export async function loadSuites(roots: string[]): Promise<AnyTestCase[]> {
  return (await loadSuitesWithInfo(roots)).tests;
}

function levelMatches(test: AnyTestCase, filter: TestFilter): boolean {
  if (filter.maxLevel !== undefined && !(test.level <= filter.maxLevel)) return false;
  if (filter.level === undefined) return true;
  if (!isSeedTest(test)) return test.level === filter.level;
  // "ext" (99) stays exact; a core level selects that level and the ones below it.
  return filter.level === EXT_LEVEL ? test.level === EXT_LEVEL : test.level <= filter.level;
}

function categoryMatches(test: AnyTestCase, category: string | undefined): boolean {
  if (category === undefined) return true;
  if (test.category === category) return true;
  return isSeedTest(test) && test.tags.includes(category);
}

/**
 * Every given filter must hold. Seed-format tests pull in the tests they `require` (seed §5.3),
 * and the result is ordered so that a required test always runs before the tests needing it.
 */
export function selectTests<T extends AnyTestCase>(tests: T[], filter: TestFilter): T[] {
  const selected = tests.filter(
    (t) =>
      levelMatches(t, filter) &&
      categoryMatches(t, filter.category) &&
      (filter.testId === undefined || t.test_id === filter.testId),
  );
  return withRequirements(selected, tests);
}

/** Adds required seed tests (transitively) and orders dependencies first; cycles are errors. */
export function withRequirements<T extends AnyTestCase>(selected: T[], all: T[]): T[] {
  const byId = new Map<string, T>();
  for (const test of all) if (!byId.has(test.test_id)) byId.set(test.test_id, test);
  const ordered: T[] = [];
  const done = new Set<T>();
  const visiting = new Set<T>();
  const visit = (test: T, chain: string[]) => {
    if (done.has(test)) return;
    if (visiting.has(test)) {
      throw new SuiteLoadError(`requires cycle: ${[...chain, test.test_id].join(' -> ')}`);
    }
    visiting.add(test);
    if (isSeedTest(test)) {
      for (const id of test.requires) {
        const dep = byId.get(id);
        // A requirement missing from the suites is reported by the runner as a skip.
        if (dep !== undefined) visit(dep, [...chain, test.test_id]);
      }
    }
    visiting.delete(test);
    done.add(test);
    ordered.push(test);
  };
  for (const test of selected) visit(test, []);
  return ordered;
}
