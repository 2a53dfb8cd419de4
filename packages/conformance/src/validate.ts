/**
 * Parser tier (seed §3.1): validation of OJS job envelopes and enqueue requests, and of state
 * sequences against the lifecycle transition table. A thin adapter: the rules are core's own
 * (the envelope parser the server runs, in its collecting mode, `@ojs/core` envelope.ts,
 * envelope-wire.ts and state-sequence.ts; decision 0090).
 *
 * Every problem is reported - not just the first - with the JSON path of the field, a stable
 * rule name and the spec requirement it comes from:
 *
 * | rule                 | meaning                                                          |
 * |----------------------|------------------------------------------------------------------|
 * | required             | a required field is missing (or null, which counts as absent)    |
 * | type                 | wrong JSON type                                                  |
 * | enum                 | value outside the allowed set                                    |
 * | pattern              | string does not match the field's pattern (type, queue)          |
 * | max_bytes            | UTF-8 length above the limit (type, queue, tags: 255; meta: 64 KiB) |
 * | max_items            | array too long (tags: 100)                                       |
 * | format.uuidv7        | not a lowercase UUIDv7                                           |
 * | format.datetime      | not an RFC 3339 timestamp with a time zone                       |
 * | format.duration      | not an ISO 8601 duration                                         |
 * | format.version       | not a version such as "2.0" or 2                                 |
 * | minimum / maximum    | number out of range (priority, max_attempts, coefficient, ...)   |
 * | min_items            | array too short                                                  |
 * | min_length           | empty string (non_retryable_errors items)                        |
 * | additional_property  | unknown key in a closed object (retry and unique policies)       |
 * | dependent_required   | a field required by another one is missing (meta_keys)          |
 * | reference            | a field names something that does not exist (args_keys)          |
 * | no_type_annotation   | language-specific type annotations inside args                   |
 * | transition           | a state change the lifecycle table does not allow                |
 *
 * Two document kinds exist: a job **envelope** (the stored/wire job; the five attributes
 * specversion, id, type, queue, args are required, L0-ENV-001) and an enqueue **request** (the
 * body of PUSH; only type and args are required, options may be nested under `options`).
 * `auto` picks envelope when the document has `specversion` or a system-managed field
 * (`state`, `attempt`, `created_at`, `enqueued_at`), request otherwise.
 */
import {
  checkJobDocument,
  checkStateSequence,
  type EnvelopeKind,
  type EnvelopeProblem,
  type JobState,
  nextStates,
  Problems,
  type TransitionTable,
} from '@ojs/core';

export { childPath } from '@ojs/core';

export type DocumentKind = EnvelopeKind;
export type ValidationIssue = EnvelopeProblem;

export interface ValidateOptions {
  kind?: DocumentKind | 'auto';
  /** Path prefix for issues, `$` by default (`$[3]` for array elements). */
  basePath?: string;
}

const SYSTEM_FIELDS = ['state', 'attempt', 'created_at', 'enqueued_at'];
const present = (v: unknown) => v !== undefined && v !== null;

/** Picks the kind `auto` resolves to for a document. */
export function detectKind(doc: unknown): DocumentKind {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return 'request';
  const fields = doc as Record<string, unknown>;
  if (present(fields.specversion)) return 'envelope';
  return SYSTEM_FIELDS.some((f) => present(fields[f])) ? 'envelope' : 'request';
}

/** The envelope's attributes first, in the order L0-ENV-001 lists them; then as found. */
const FIRST = ['specversion', 'id', 'type', 'queue', 'args'];

function rank(path: string, base: string): number {
  const field = /^[.[]"?([A-Za-z0-9_$]+)/.exec(
    path.slice(base.length).replace(/^\.options(?=\.)/, ''),
  );
  const at = field ? FIRST.indexOf(field[1]!) : -1;
  return at === -1 ? FIRST.length : at;
}

/** Validates one envelope or enqueue request; returns the kind used and every issue found. */
export function validateDocument(
  doc: unknown,
  settings: ValidateOptions = {},
): { kind: DocumentKind; issues: ValidationIssue[] } {
  const base = settings.basePath ?? '$';
  const kind = !settings.kind || settings.kind === 'auto' ? detectKind(doc) : settings.kind;
  const problems = new Problems(true, base);
  checkJobDocument(doc, kind, problems);
  const issues = problems.found
    .map((issue, i) => ({ issue, i, rank: rank(issue.path, base) }))
    .sort((a, b) => a.rank - b.rank || a.i - b.i)
    .map((entry) => entry.issue);
  return { kind, issues };
}

export interface TransitionOptions {
  /**
   * `core` (default): L0-LC-002 plus the transitions Levels 1-2 require - active -> available
   * (visibility timeout, L1-VT), scheduled/available/pending -> discarded (expiry, L2-TTL) and
   * discarded -> available (dead letter retry, L1-DLQ). `strict`: L0-LC-002 only.
   */
  table?: TransitionTable;
  basePath?: string;
}

export function allowedNext(from: JobState, table: TransitionTable = 'core'): readonly JobState[] {
  return nextStates(from, table);
}

/** Validates a sequence of job states against the transition table (core's check). */
export function validateTransitions(
  input: unknown,
  options: TransitionOptions = {},
): ValidationIssue[] {
  const problems = new Problems(true, options.basePath ?? '$');
  checkStateSequence(input, options.table ?? 'core', problems);
  return problems.found;
}
