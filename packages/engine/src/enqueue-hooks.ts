/**
 * The server's enqueue hook chain as operators configure it (decision
 * 0105): built-in hooks chosen by name, and hook modules of their own,
 * added to `engine.enqueueMiddleware` in the order given. Every binding
 * (HTTP single, batch and push-many; gRPC Enqueue, EnqueueBatch and
 * EnqueueMany; the SDK's in-process transport) runs that one chain.
 *
 * A spec is either a built-in, `NAME` or `NAME:ARGUMENT`, or the path of
 * an ES module (anything with a `/` or a `.js`/`.mjs`/`.cjs`/`.ts` ending).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { byteLength, isObject, OjsError } from '@ojs/core';
import type { EnqueueMiddleware, MiddlewareChain } from './middleware.ts';

export interface EnqueueHook {
  name: string;
  hook: EnqueueMiddleware;
}

const reject = (hook: string, message: string, details: Record<string, unknown> = {}) =>
  new OjsError('validation_error', message, { hook, ...details });

/**
 * `ojs_validate`: refuses a job whose `meta.ojs_validate` is set (anything
 * but `false` or `null`) with 422. The suites' probe of a server-side
 * rejecting hook (C21); on by default in test mode.
 */
function ojsValidate(): EnqueueMiddleware {
  return async (job, next) => {
    const flag = job.meta.ojs_validate;
    if (flag === undefined || flag === null || flag === false) return next(job);
    throw reject(
      'ojs_validate',
      `Job refused by the enqueue hook 'ojs_validate': meta.ojs_validate asks the server to reject it.`,
      { field: 'meta.ojs_validate' },
    );
  };
}

/** `required_meta:KEY,KEY`: refuses a job without each of these meta keys (an operator's opt-in). */
function requiredMeta(argument: string | undefined): EnqueueMiddleware {
  const keys = (argument ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  if (keys.length === 0) throw new Error(`required_meta needs keys, e.g. required_meta:tenant_id`);
  return async (job, next) => {
    const missing = keys.filter((key) => job.meta[key] === undefined);
    if (missing.length === 0) return next(job);
    throw reject('required_meta', `meta must carry ${missing.join(', ')}.`, {
      field: `meta.${missing[0]}`,
      missing,
    });
  };
}

/**
 * `max_args_bytes:N` or `max_args_bytes:QUEUE=N,...,*=N`: refuses a job
 * whose JSON args are larger than the bound of its queue (`*` for the
 * others; a queue with no bound is not measured).
 */
function maxArgsBytes(argument: string | undefined): EnqueueMiddleware {
  const bounds = new Map<string, number>();
  for (const part of (argument ?? '').split(',').filter((p) => p.trim() !== '')) {
    const [queue, value] = part.includes('=') ? part.split('=', 2) : ['*', part];
    const bytes = Number(value);
    if (!Number.isInteger(bytes) || bytes < 1) {
      throw new Error(`max_args_bytes: '${part}' is not QUEUE=BYTES with BYTES >= 1`);
    }
    bounds.set(queue!.trim(), bytes);
  }
  if (bounds.size === 0) throw new Error('max_args_bytes needs a bound, e.g. max_args_bytes:65536');
  return async (job, next) => {
    const bound = bounds.get(job.queue) ?? bounds.get('*');
    if (bound === undefined) return next(job);
    const size = byteLength(JSON.stringify(job.args));
    if (size <= bound) return next(job);
    throw reject(
      'max_args_bytes',
      `args are ${size} bytes; queue '${job.queue}' takes at most ${bound}.`,
      {
        field: 'args',
        actual_bytes: size,
        max_bytes: bound,
      },
    );
  };
}

export const BUILTIN_ENQUEUE_HOOKS: Readonly<
  Record<string, (argument: string | undefined) => EnqueueMiddleware>
> = {
  ojs_validate: ojsValidate,
  required_meta: requiredMeta,
  max_args_bytes: maxArgsBytes,
};

function isModulePath(spec: string): boolean {
  return spec.includes('/') || /\.(m|c)?[jt]s$/.test(spec);
}

/** A module's hooks: its default export (one function or an ordered list), else its exported functions. */
function hooksOfModule(spec: string, module: Record<string, unknown>): EnqueueHook[] {
  const named = (value: unknown, fallback: string): EnqueueHook => {
    if (typeof value === 'function') {
      const name = value.name !== '' && value.name !== 'default' ? value.name : fallback;
      return { name, hook: value as EnqueueMiddleware };
    }
    if (isObject(value) && typeof value.hook === 'function' && typeof value.name === 'string') {
      return { name: value.name, hook: value.hook as EnqueueMiddleware };
    }
    throw new Error(
      `enqueue hook module ${spec}: ${fallback} is not a middleware function (job, next) or {name, hook}.`,
    );
  };
  const base = spec
    .split('/')
    .pop()!
    .replace(/\.[^.]*$/, '');
  if (module.default !== undefined) {
    const list = Array.isArray(module.default) ? module.default : [module.default];
    return list.map((value, index) => named(value, `${base}#${index}`));
  }
  // A namespace lists its exports in name order: that is the chain order.
  const hooks = Object.entries(module)
    .filter(([, value]) => typeof value === 'function')
    .map(([key, value]) => named(value, key));
  if (hooks.length === 0) throw new Error(`enqueue hook module ${spec} exports no middleware.`);
  return hooks;
}

/** The hooks of the specs, in order; a bad spec is an error naming it (checked before serving). */
export async function loadEnqueueHooks(
  specs: readonly string[],
  cwd = process.cwd(),
): Promise<EnqueueHook[]> {
  const hooks: EnqueueHook[] = [];
  for (const spec of specs) {
    if (isModulePath(spec)) {
      const module = (await import(pathToFileURL(resolve(cwd, spec)).href)) as Record<
        string,
        unknown
      >;
      hooks.push(...hooksOfModule(spec, module));
      continue;
    }
    const colon = spec.indexOf(':');
    const name = colon < 0 ? spec : spec.slice(0, colon);
    const factory = BUILTIN_ENQUEUE_HOOKS[name];
    if (factory === undefined || !Object.hasOwn(BUILTIN_ENQUEUE_HOOKS, name)) {
      throw new Error(
        `Unknown enqueue hook '${spec}': a built-in (${Object.keys(BUILTIN_ENQUEUE_HOOKS).join(', ')}) or a module path.`,
      );
    }
    hooks.push({ name, hook: factory(colon < 0 ? undefined : spec.slice(colon + 1)) });
  }
  const seen = new Set<string>();
  for (const hook of hooks) {
    if (seen.has(hook.name)) throw new Error(`Two enqueue hooks are named '${hook.name}'.`);
    seen.add(hook.name);
  }
  return hooks;
}

/** Adds the hooks to the end of a chain, in order. */
export function addEnqueueHooks(
  chain: MiddlewareChain<EnqueueMiddleware>,
  hooks: readonly EnqueueHook[],
): void {
  for (const { name, hook } of hooks) chain.add(name, hook);
}
