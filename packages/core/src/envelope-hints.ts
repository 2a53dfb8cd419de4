/**
 * Input hygiene for job envelopes: a typo inside `options` is reported, not
 * silently ignored. Unknown TOP-LEVEL fields are preserved by the spec
 * (JF §9.2) and are not warned about; `options` is ours to interpret, so a
 * key there that no rule reads is almost always a mistake (`queu`,
 * `prority`). The job is still accepted (a newer client may send an option
 * this server does not know): the warning travels in the response.
 */

/** Every `options` key the envelope parser reads (HB §9.1 plus the OA additions and aliases). */
export const ENQUEUE_OPTION_KEYS: readonly string[] = [
  'queue',
  'priority',
  'timeout_ms',
  'timeout',
  'scheduled_at',
  'delay_until',
  'expires_at',
  'retry',
  'retry_policy',
  'unique',
  'tags',
  'visibility_timeout_ms',
  'visibility_timeout',
  'pending',
  'metadata',
  'rate_limit',
];

const KNOWN = new Set(ENQUEUE_OPTION_KEYS);

/** Edit distance with adjacent transpositions as one edit (`prot` -> `port`); names are short. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      }
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest of `candidates` to `name`, if it is close enough to be a typo. */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = distance(name.toLowerCase(), candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  // One edit for short names, two for longer ones: `queu`, `prority`, `retries`.
  return best !== undefined && bestDistance <= (name.length <= 4 ? 1 : 2) ? best : undefined;
}

/** One warning per unknown key inside `options`, with the likely intended key. */
export function optionWarnings(body: unknown): string[] {
  if (typeof body !== 'object' || body === null) return [];
  const options = (body as Record<string, unknown>).options;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return [];
  const warnings: string[] = [];
  for (const key of Object.keys(options)) {
    if (KNOWN.has(key)) continue;
    const guess = closestName(key, KNOWN);
    warnings.push(
      `options.${key} is not an enqueue option and was ignored${guess ? `; did you mean options.${guess}?` : ` (known: ${ENQUEUE_OPTION_KEYS.join(', ')}).`}`,
    );
  }
  return warnings;
}

/**
 * The option warnings of every job a workflow request describes: its
 * steps and jobs (nested workflows included) and its callbacks, each named
 * by its path (`steps[1].options.queu ...`). Graph steps' own `options`
 * (the step's job options) are checked the same way.
 */
export function workflowOptionWarnings(body: unknown, path = ''): string[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  const spec = body as Record<string, unknown>;
  const warnings: string[] = [];
  const at = (part: string) => (path === '' ? part : `${path}.${part}`);
  for (const key of ['steps', 'jobs'] as const) {
    const list = spec[key];
    if (!Array.isArray(list)) continue;
    list.forEach((item, index) => {
      const itemPath = at(`${key}[${index}]`);
      for (const warning of optionWarnings(item)) warnings.push(`${itemPath}.${warning}`);
      warnings.push(...workflowOptionWarnings(item, itemPath));
    });
  }
  const callbacks = spec.callbacks;
  if (typeof callbacks === 'object' && callbacks !== null) {
    for (const [name, callback] of Object.entries(callbacks)) {
      for (const warning of optionWarnings(callback)) {
        warnings.push(`${at(`callbacks.${name}`)}.${warning}`);
      }
    }
  }
  return warnings;
}

/** The hint for `args` sent as an object (the BullMQ `data` habit). */
export const OBJECT_ARGS_HINT =
  'args is a JSON array of positional arguments: wrap an object in [ ], e.g. "args": [{"to": "ada@example.com"}]; the handler reads it as args[0].';
