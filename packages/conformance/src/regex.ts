/**
 * Test files were written for Go's RE2 engine. The common syntax is shared with JavaScript; the
 * RE2-only bits that plausibly occur in patterns (leading inline flags such as `(?i)`, `\A`,
 * `\z`) are translated here so such patterns behave as they would in the reference runner.
 */

const cache = new Map<string, RegExp | Error>();

/** Compiles an RE2-style pattern; returns an Error for invalid patterns instead of throwing. */
export function compileRegex(pattern: string): RegExp | Error {
  const cached = cache.get(pattern);
  if (cached !== undefined) return cached;
  let source = pattern;
  let flags = '';
  const inline = /^\(\?([imsU]+)\)/.exec(source);
  if (inline) {
    source = source.slice(inline[0].length);
    // RE2's U (ungreedy) has no JS equivalent; the other letters map directly.
    flags = [...new Set(inline[1]!.replace(/U/g, ''))].join('');
  }
  source = source.replace(/\\A/g, '^').replace(/\\z/g, '$');
  let compiled: RegExp | Error;
  try {
    compiled = new RegExp(source, flags);
  } catch (err) {
    compiled = err instanceof Error ? err : new Error(String(err));
  }
  cache.set(pattern, compiled);
  return compiled;
}
