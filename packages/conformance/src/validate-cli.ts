/**
 * `ojs validate [FILE|-]`: the Parser tier as a command. Exit codes: 0 valid, 1 invalid (any
 * problem, including a JSON syntax error), 2 usage error (bad option, unreadable file).
 */
import { readFile } from 'node:fs/promises';
import type { CliIo } from './cli.ts';
import {
  type DocumentKind,
  type ValidationIssue,
  validateDocument,
  validateTransitions,
} from './validate.ts';

export interface ValidateIo extends CliIo {
  /** Reads standard input completely. */
  readStdin?: () => Promise<string>;
}

export const VALIDATE_USAGE = `Usage: ojs validate [FILE|-] [options]

Validates OJS job envelopes (Parser tier). FILE holds one JSON object or an array of them;
"-" or no FILE reads standard input. Every missing or invalid field is reported with its JSON
path, the rule it breaks and the spec requirement.

Options:
  --kind auto|envelope|request
                   what the documents are. envelope: a full job (specversion, id, type,
                   queue, args required); request: an enqueue body (type and args required,
                   options allowed). auto (default): envelope when specversion or a
                   server-managed field (state, attempt, created_at, enqueued_at) is present
  --envelope       same as --kind envelope
  --request        same as --kind request
  --transitions    FILE is a sequence of job states - ["available", "active", ...],
                   [{"state": ...}, ...] or {"states": [...]} - checked against the lifecycle
                   transition table
  --strict         with --transitions: the L0-LC-002 table only, without the transitions
                   Levels 1-2 add (visibility timeout requeue, expiry, dead letter retry)
  --format text|json
                   output format (default: text)
  --quiet          print nothing; only the exit code tells
  --help           show this help

Exit codes: 0 valid, 1 invalid, 2 usage error.
`;

interface ValidateOptions {
  file: string;
  kind: DocumentKind | 'auto';
  transitions: boolean;
  strict: boolean;
  format: 'text' | 'json';
  quiet: boolean;
  help: boolean;
}

class UsageError extends Error {}

export function parseValidateArgs(argv: string[]): ValidateOptions {
  const options: ValidateOptions = {
    file: '-',
    kind: 'auto',
    transitions: false,
    strict: false,
    format: 'text',
    quiet: false,
    help: false,
  };
  let fileGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-' || !arg.startsWith('-')) {
      if (fileGiven)
        throw new UsageError(`only one FILE may be given (got "${options.file}" and "${arg}")`);
      options.file = arg;
      fileGiven = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = (eq === -1 ? arg : arg.slice(0, eq)).replace(/^--?/, '');
    const value = (): string => {
      if (eq !== -1) return arg.slice(eq + 1);
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('-'))
        throw new UsageError(`--${name} needs a value`);
      i++;
      return next;
    };
    switch (name) {
      case 'help':
      case 'h':
        options.help = true;
        break;
      case 'kind': {
        const kind = value();
        if (kind !== 'auto' && kind !== 'envelope' && kind !== 'request')
          throw new UsageError('--kind must be auto, envelope or request');
        options.kind = kind;
        break;
      }
      case 'envelope':
        options.kind = 'envelope';
        break;
      case 'request':
        options.kind = 'request';
        break;
      case 'transitions':
        options.transitions = true;
        break;
      case 'strict':
        options.strict = true;
        break;
      case 'quiet':
      case 'q':
        options.quiet = true;
        break;
      case 'format': {
        const format = value();
        if (format !== 'text' && format !== 'json')
          throw new UsageError('--format must be text or json');
        options.format = format;
        break;
      }
      default:
        throw new UsageError(`unknown option ${arg}`);
    }
  }
  if (options.strict && !options.transitions)
    throw new UsageError('--strict only applies to --transitions');
  return options;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream)
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}

const defaultIo: ValidateIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  readStdin: () => {
    if (process.stdin.isTTY) {
      return Promise.reject(new Error('it is a terminal; give a FILE or pipe the JSON in'));
    }
    return readAll(process.stdin);
  },
};

function issueLine(issue: ValidationIssue): string {
  return `  ${issue.path}  ${issue.rule}  ${issue.message}${issue.ref ? `  [${issue.ref}]` : ''}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Entry point of `ojs validate`; returns the exit code. */
export async function validateMain(argv: string[], io: ValidateIo = defaultIo): Promise<number> {
  let options: ValidateOptions;
  try {
    options = parseValidateArgs(argv);
  } catch (err) {
    io.err(`error: ${(err as Error).message}\n\n${VALIDATE_USAGE}`);
    return 2;
  }
  if (options.help) {
    io.out(VALIDATE_USAGE);
    return 0;
  }
  const name = options.file === '-' ? 'stdin' : options.file;
  let text: string;
  try {
    if (options.file === '-') {
      if (!io.readStdin) throw new Error('standard input is not available');
      text = await io.readStdin();
    } else {
      text = await readFile(options.file, 'utf8');
    }
  } catch (err) {
    io.err(`error: cannot read ${name}: ${(err as Error).message}`);
    return 2;
  }
  const print = (line: string) => {
    if (!options.quiet) io.out(line);
  };

  let input: unknown;
  try {
    input = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    const issue: ValidationIssue = {
      path: '$',
      rule: 'json.syntax',
      message: (err as Error).message,
      ref: 'L0-WF-001',
    };
    if (options.format === 'json')
      print(JSON.stringify({ file: name, valid: false, issues: [issue] }, null, 2));
    else print(`${name}: invalid JSON\n${issueLine(issue)}`);
    return 1;
  }

  if (options.transitions) {
    const table = options.strict ? 'strict' : 'core';
    const issues = validateTransitions(input, { table });
    const valid = issues.length === 0;
    if (options.format === 'json') {
      print(JSON.stringify({ file: name, mode: 'transitions', table, valid, issues }, null, 2));
    } else if (valid) {
      print(`${name}: valid state sequence (${table} transition table)`);
    } else {
      print(
        `${name}: invalid state sequence, ${plural(issues.length, 'problem')} (${table} transition table)`,
      );
      for (const issue of issues) print(issueLine(issue));
    }
    return valid ? 0 : 1;
  }

  const docs = Array.isArray(input) ? input : [input];
  const results = docs.map((doc, i) => {
    const basePath = Array.isArray(input) ? `$[${i}]` : '$';
    const { kind, issues } = validateDocument(doc, { kind: options.kind, basePath });
    return { index: Array.isArray(input) ? i : null, kind, valid: issues.length === 0, issues };
  });
  const invalid = results.filter((r) => !r.valid);
  const valid = invalid.length === 0;
  if (options.format === 'json') {
    print(JSON.stringify({ file: name, mode: 'documents', valid, documents: results }, null, 2));
    return valid ? 0 : 1;
  }
  const kinds = [
    ...new Set(results.map((r) => (r.kind === 'envelope' ? 'job envelope' : 'enqueue request'))),
  ];
  const what = kinds.join(' / ') || 'document';
  if (!Array.isArray(input)) {
    if (valid) print(`${name}: valid ${what}`);
    else {
      print(`${name}: invalid ${what}, ${plural(results[0]!.issues.length, 'problem')}`);
      for (const issue of results[0]!.issues) print(issueLine(issue));
    }
  } else if (valid) {
    print(`${name}: ${plural(results.length, 'document')}, all valid (${what})`);
  } else {
    const problems = invalid.reduce((n, r) => n + r.issues.length, 0);
    print(
      `${name}: ${plural(problems, 'problem')} in ${invalid.length} of ${plural(results.length, 'document')}`,
    );
    for (const r of invalid) {
      print(`[${r.index}] invalid ${r.kind === 'envelope' ? 'job envelope' : 'enqueue request'}:`);
      for (const issue of r.issues) print(issueLine(issue));
    }
  }
  return valid ? 0 : 1;
}
