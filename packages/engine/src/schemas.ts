/**
 * Schema registry (features §9, seed 004 §6): JSON Schema 2020-12 documents
 * per (job type, version), kept as store settings so every server process
 * sees them, and validation of args at enqueue in the mode configured
 * (strict rejects with 422 naming every violation, warn accepts with
 * warnings, off only stores).
 */
import {
  byteLength,
  conflict,
  invalidRequest,
  isCodecEncoded,
  isObject,
  MAX_SCHEMA_BYTES,
  MAX_SCHEMA_NODES,
  notFound,
  OjsError,
  parseVersion,
  toIso,
  validateJobType,
} from '@ojs/core';
import type { Ajv2020, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import isSafeRegex from 'safe-regex2';
import type { EngineContext } from './context.ts';

export type ValidationMode = 'strict' | 'warn' | 'off';
export const VALIDATION_MODES: readonly ValidationMode[] = ['strict', 'warn', 'off'];

const NAMESPACE = 'schema';
const MODE_NAMESPACE = 'schema-mode';
const MAX_VERSION = 10 ** 18;

export interface SchemaEntry {
  type: string;
  /** As registered: a number when the path segment was an integer (the suite expects 1, not "1"). */
  version: string | number;
  version_num: number;
  schema: Record<string, unknown>;
  compatible_with?: string[];
  created_at: string;
}

type Obj = Record<string, unknown>;

/**
 * Draft-07 tuples (`items: [...]`) are common in the wild and in the suite;
 * 2020-12 spells them `prefixItems`. Translate so both compile.
 */
export function toDraft2020(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toDraft2020);
  if (!isObject(schema)) return schema;
  const out: Obj = {};
  for (const [key, value] of Object.entries(schema)) out[key] = toDraft2020(value);
  if (Array.isArray(schema.items)) {
    out.prefixItems = out.items;
    delete out.items;
    if (schema.additionalItems !== undefined) {
      out.items = out.additionalItems;
      delete out.additionalItems;
    }
  }
  return out;
}

/**
 * Bounds a schema before it is compiled: Ajv compiles on the event loop and
 * its generated validator runs on every enqueue of the type, both growing
 * with the schema (8,000 tuple items took 7.6 s to compile). Size and node
 * count are bounded (core limits.ts); every `pattern` or `patternProperties`
 * key must have star height 1 (safe-regex2), since a nested quantifier such
 * as `(a+)+$` backtracks exponentially on a crafted argument at enqueue;
 * `uniqueItems` needs scalar `items`, the one case Ajv checks in linear time.
 */
export function checkSchemaBounds(schema: Obj): void {
  const bytes = byteLength(JSON.stringify(schema));
  if (bytes > MAX_SCHEMA_BYTES) {
    throw invalidRequest(`schema is ${bytes} bytes; the limit is ${MAX_SCHEMA_BYTES}.`, {
      field: 'schema',
      max_bytes: MAX_SCHEMA_BYTES,
      actual_bytes: bytes,
    });
  }
  let nodes = 0;
  const unsafe = (pattern: unknown): never => {
    throw invalidRequest(
      `schema pattern ${JSON.stringify(pattern)} is not accepted: a nested quantifier can take exponential time to match.`,
      { field: 'schema', pattern },
    );
  };
  const walk = (value: unknown): void => {
    nodes++;
    if (nodes > MAX_SCHEMA_NODES) {
      throw invalidRequest(`schema has more than ${MAX_SCHEMA_NODES} values.`, {
        field: 'schema',
        max_nodes: MAX_SCHEMA_NODES,
      });
    }
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
    if (!isObject(value)) return;
    if (typeof value.pattern === 'string' && !isSafeRegex(value.pattern)) unsafe(value.pattern);
    if (value.uniqueItems === true && !scalarItems(value.items)) {
      // Ajv checks uniqueness of scalar items with a hash (linear), anything
      // else pairwise (quadratic: 20,000 objects took 10 s at enqueue).
      throw invalidRequest(
        'schema uses uniqueItems without `items` of a scalar type (string, number, integer, boolean or null); uniqueness of objects or arrays is not checked at enqueue.',
        { field: 'schema' },
      );
    }
    if (isObject(value.patternProperties)) {
      for (const key of Object.keys(value.patternProperties)) {
        if (!isSafeRegex(key)) unsafe(key);
      }
    }
    for (const item of Object.values(value)) walk(item);
  };
  walk(schema);
}

const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/** `items` whose `type` admits only scalars. */
function scalarItems(items: unknown): boolean {
  if (!isObject(items)) return false;
  const types = Array.isArray(items.type) ? items.type : [items.type];
  return types.length > 0 && types.every((t) => typeof t === 'string' && SCALAR_TYPES.has(t));
}

/** Sortable storage key: zero-padded version number, so listings come out in version order. */
const versionKey = (type: string, versionNum: number) =>
  `${type}@${String(versionNum).padStart(String(MAX_VERSION).length, '0')}`;

export function parseSchemaVersion(text: string): { version: string | number; versionNum: number } {
  const versionNum = parseVersion(text);
  if (versionNum === null) {
    throw invalidRequest(`'${text}' is not a schema version like 1, 2.0 or 1.2.3.`, {
      field: 'version',
    });
  }
  return { version: /^\d+$/.test(text) ? Number(text) : text, versionNum };
}

export class SchemaRegistry {
  readonly #engine: EngineContext;
  // Loaded with the first schema: ajv is about 1.5 MB of memory that a server whose
  // jobs have no schema never uses (decision 0108).
  #ajv?: Ajv2020;
  readonly #compiled = new Map<string, ValidateFunction>();
  readonly #defaultMode: ValidationMode;

  constructor(engine: EngineContext, defaultMode: ValidationMode) {
    this.#engine = engine;
    this.#defaultMode = defaultMode;
  }

  async #compile(schema: Obj): Promise<ValidateFunction> {
    const key = JSON.stringify(schema);
    let fn = this.#compiled.get(key);
    if (fn === undefined) {
      if (this.#ajv === undefined) {
        const { Ajv2020 } = await import('ajv/dist/2020.js');
        this.#ajv ??= new Ajv2020({ allErrors: true, strict: false });
      }
      fn = this.#ajv.compile(toDraft2020(schema) as Obj);
      this.#compiled.set(key, fn);
    }
    return fn;
  }

  async register(type: string, versionText: string, body: unknown): Promise<SchemaEntry> {
    // A schema for a type no job can have would never apply.
    try {
      validateJobType(type, 'type');
    } catch (error) {
      if (error instanceof OjsError) throw invalidRequest(error.message, error.details);
      throw error;
    }
    const { version, versionNum } = parseSchemaVersion(versionText);
    const schema = isObject(body) ? (body.schema ?? body.args_schema) : undefined;
    if (!isObject(schema)) {
      throw invalidRequest('The body needs a JSON Schema object in `schema` (or `args_schema`).', {
        field: 'schema',
      });
    }
    checkSchemaBounds(schema);
    try {
      await this.#compile(schema);
    } catch (error) {
      throw invalidRequest(`schema is not a valid JSON Schema: ${(error as Error).message}`, {
        field: 'schema',
        schema_error: (error as Error).message,
      });
    }
    const entry: SchemaEntry = {
      type,
      version,
      version_num: versionNum,
      schema,
      created_at: toIso(this.#engine.now()),
    };
    const compatible = isObject(body) ? body.compatible_with : undefined;
    if (compatible !== undefined) {
      if (!Array.isArray(compatible) || !compatible.every((v) => parseVersion(v) !== null)) {
        throw invalidRequest('compatible_with must be an array of versions.', {
          field: 'compatible_with',
        });
      }
      entry.compatible_with = compatible.map(String);
    }
    const stored = await this.#engine.store.putSetting(
      NAMESPACE,
      versionKey(type, versionNum),
      entry as unknown as Obj,
      null,
      this.#engine.now(),
    );
    this.#engine.settings.invalidate(NAMESPACE);
    if (stored === null) {
      throw conflict(
        `A schema for ${type} version ${versionText} is already registered; delete it first.`,
        {
          type,
          version,
        },
      );
    }
    return entry;
  }

  async list(type: string): Promise<SchemaEntry[]> {
    const records = await this.#engine.store.listSettings(NAMESPACE, `${type}@`);
    return records.map((r) => r.value as unknown as SchemaEntry).reverse();
  }

  async get(type: string, versionText: string): Promise<SchemaEntry> {
    const { versionNum } = parseSchemaVersion(versionText);
    const record = await this.#engine.store.getSetting(NAMESPACE, versionKey(type, versionNum));
    if (record === null) throw notFound('schema', `${type}/${versionText}`);
    return record.value as unknown as SchemaEntry;
  }

  async latest(type: string): Promise<SchemaEntry> {
    const [newest] = await this.list(type);
    if (newest === undefined) throw notFound('schema', type);
    return newest;
  }

  async delete(type: string, versionText: string): Promise<SchemaEntry> {
    const entry = await this.get(type, versionText);
    await this.#engine.store.deleteSetting(NAMESPACE, versionKey(type, entry.version_num));
    this.#engine.settings.invalidate(NAMESPACE);
    return entry;
  }

  async setMode(type: string, mode: unknown): Promise<ValidationMode> {
    if (typeof mode !== 'string' || !VALIDATION_MODES.includes(mode as ValidationMode)) {
      throw invalidRequest('mode must be one of strict, warn, off.', { field: 'mode' });
    }
    const store = this.#engine.store;
    const existing = await store.getSetting(MODE_NAMESPACE, type);
    await store.putSetting(
      MODE_NAMESPACE,
      type,
      { mode },
      existing?.rev ?? null,
      this.#engine.now(),
    );
    this.#engine.settings.invalidate(MODE_NAMESPACE);
    return mode as ValidationMode;
  }

  async modeFor(type: string): Promise<ValidationMode> {
    const record = await this.#engine.settings.get(MODE_NAMESPACE, type);
    return (record?.value.mode as ValidationMode | undefined) ?? this.#defaultMode;
  }

  /**
   * Validates args against the schema of the job's version (the latest one
   * for an unversioned job). Returns warnings in warn mode; throws 422 in
   * strict mode; nothing when no schema is registered.
   */
  async check(job: {
    type: string;
    args: unknown[];
    meta: Record<string, unknown>;
    version_num?: number;
  }): Promise<string[]> {
    // Codec-encoded args are opaque to the server (encryption §3.1).
    if (isCodecEncoded(job)) return [];
    const mode = await this.modeFor(job.type);
    if (mode === 'off') return [];
    // The enqueue path reads through the settings cache.
    const records = await this.#engine.settings.list(NAMESPACE, `${job.type}@`);
    const entries = records.map((r) => r.value as unknown as SchemaEntry).reverse();
    const entry =
      job.version_num === undefined
        ? entries[0]
        : entries.find((e) => e.version_num === job.version_num);
    if (entry === undefined) return [];
    const validate = await this.#compile(entry.schema);
    if (validate(job.args)) return [];
    const violations = (validate.errors ?? []).map((e: ErrorObject) => ({
      path: `args${e.instancePath.replaceAll('/', '.').replace(/\.(\d+)/g, '[$1]')}`,
      message: e.message ?? 'is invalid',
      schema_path: e.schemaPath,
    }));
    const text = violations.map((v) => `${v.path} ${v.message}`);
    if (mode === 'warn') return text;
    throw new OjsError(
      'validation_error',
      `args do not match the schema for ${job.type} version ${entry.version}: ${text.join('; ')}.`,
      { validation_errors: violations, type: job.type, version: entry.version },
    );
  }
}
