/**
 * Job arguments on a command line: each positional value is JSON when it
 * parses (`42`, `true`, `'{"to":"ada"}'`), else a string; `--args` takes the
 * whole array. An object given as the whole array is refused with the same
 * hint as the server's: OJS args are positional, wrap the object in [ ].
 */
import { UsageError } from '../context.ts';

export function parseArgValues(values: string[], whole: unknown): unknown[] {
  if (typeof whole === 'string') {
    if (values.length > 0)
      throw new UsageError('Give args either as values or as --args, not both.');
    let parsed: unknown;
    try {
      parsed = JSON.parse(whole);
    } catch (error) {
      throw new UsageError(`--args is not JSON: ${(error as Error).message}`);
    }
    if (!Array.isArray(parsed)) {
      throw new UsageError(
        `--args must be a JSON array of positional arguments; wrap an object in [ ]: --args '[${whole.trim()}]'.`,
      );
    }
    return parsed;
  }
  return values.map((value) => {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  });
}

export function parseJsonObject(name: string, text: unknown): Record<string, unknown> | undefined {
  if (typeof text !== 'string') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${name} is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`${name} must be a JSON object.`);
  }
  return parsed as Record<string, unknown>;
}
