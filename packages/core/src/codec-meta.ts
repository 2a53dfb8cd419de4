/**
 * Codec metadata (encryption extension, digest §3): the server treats codec
 * data as opaque and never validates it, but two rules read its keys.
 *
 * The SDKs write flat meta keys that contain dots (`ojs.codec.key_id`);
 * readers that split paths on every dot (the conformance runner) look for
 * `meta.ojs.codec.key_id`. So output carries a nested mirror of the flat
 * keys (`withCodecMirror`, C20), and input drops that mirror again where
 * it repeats a flat key (`withoutCodecMirror`: flat keys win), so the
 * mirror is never stored as a key of its own.
 */
import { isObject } from './is-object.ts';

type Obj = Record<string, unknown>;

const PREFIX = 'ojs.codec.';

function hasFlatCodecKey(meta: Obj): boolean {
  for (const key in meta) if (key.startsWith(PREFIX)) return true;
  return false;
}

/**
 * `meta` with `meta.ojs.codec.*` added for each flat `ojs.codec.*` key, in
 * output only. The record is never changed: a new object is returned when
 * a mirror is added, else `meta` itself (the common case costs one scan of
 * the keys). A nested value already there is kept, and a `meta.ojs` (or
 * `meta.ojs.codec`) that is not an object is left alone.
 */
export function withCodecMirror(meta: Obj): Obj {
  if (!hasFlatCodecKey(meta)) return meta;
  const ojs = meta.ojs;
  if (ojs !== undefined && !isObject(ojs)) return meta;
  const codec = ojs?.codec;
  if (codec !== undefined && !isObject(codec)) return meta;
  const mirror: Obj = { ...codec };
  for (const key in meta) {
    if (!key.startsWith(PREFIX)) continue;
    const name = key.slice(PREFIX.length);
    if (name !== '' && !(name in mirror)) mirror[name] = meta[key];
  }
  return { ...meta, ojs: { ...ojs, codec: mirror } };
}

/**
 * `meta` as received, without the nested entries that mirror a flat
 * `ojs.codec.*` key (a body read back from the server and sent again):
 * the flat key wins, and `meta.ojs.codec` / `meta.ojs` are dropped when
 * nothing else is left in them. Nested entries with no flat twin are kept
 * verbatim. Returns `meta` itself when there is nothing to drop.
 */
export function withoutCodecMirror(meta: Obj): Obj {
  const ojs = meta.ojs;
  if (!isObject(ojs) || !isObject(ojs.codec) || !hasFlatCodecKey(meta)) return meta;
  const codec: Obj = {};
  let dropped = false;
  for (const [name, value] of Object.entries(ojs.codec)) {
    if (`${PREFIX}${name}` in meta) dropped = true;
    else codec[name] = value;
  }
  if (!dropped) return meta;
  const { codec: _codec, ...otherOjs } = ojs;
  const nextOjs: Obj = Object.keys(codec).length > 0 ? { ...otherOjs, codec } : otherOjs;
  const { ojs: _ojs, ...rest } = meta;
  return Object.keys(nextOjs).length > 0 ? { ...rest, ojs: nextOjs } : rest;
}

/**
 * Whether a job carries codec-encoded args: a codec chain in meta (the
 * SDK's `ojs.codec.encodings`, flat or nested), the suites' `meta.ojs_encoded`,
 * or the spec's `{ojs_encoded: true}` args envelope (C19). The server does
 * not validate such args against a schema: it cannot read them.
 */
export function isCodecEncoded(job: { args: readonly unknown[]; meta: Obj }): boolean {
  const { meta } = job;
  if (`${PREFIX}encodings` in meta || meta.ojs_encoded === true) return true;
  if (isObject(meta.ojs) && isObject(meta.ojs.codec) && 'encodings' in meta.ojs.codec) return true;
  const first = job.args[0];
  return isObject(first) && first.ojs_encoded === true;
}
