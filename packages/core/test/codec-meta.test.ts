/**
 * Codec metadata (encryption §3.4, C20): the nested mirror of flat
 * `ojs.codec.*` keys in output only, flat keys winning on re-ingest, and
 * what marks a job's args as codec-encoded.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isCodecEncoded,
  parseEnqueueRequest,
  toWire,
  withCodecMirror,
  withoutCodecMirror,
} from '../src/index.ts';

const DEFAULTS = { visibilityTimeoutMs: 30_000 };

const flat = {
  'ojs.codec.encodings': ['gzip/plain', 'binary/encrypted'],
  'ojs.codec.key_id': 'k1',
  'ojs.codec.nonce': 'bm9uY2U=',
  trace_id: 't',
};

describe('codec meta mirror', () => {
  it('adds meta.ojs.codec beside the flat keys, leaving the input untouched', () => {
    const input = structuredClone(flat);
    const out = withCodecMirror(input);
    assert.deepEqual(input, flat);
    assert.deepEqual(out, {
      ...flat,
      ojs: {
        codec: {
          encodings: ['gzip/plain', 'binary/encrypted'],
          key_id: 'k1',
          nonce: 'bm9uY2U=',
        },
      },
    });
  });

  it('returns plain meta itself: nothing added to jobs without codec keys', () => {
    const plain = { a: 1, ojs: { other: true } };
    assert.equal(withCodecMirror(plain), plain);
    const empty = {};
    assert.equal(withCodecMirror(empty), empty);
  });

  it('keeps existing nested values and never overwrites a non-object meta.ojs', () => {
    const merged = withCodecMirror({ ...flat, ojs: { codec: { key_id: 'nested' }, x: 1 } });
    assert.deepEqual(merged.ojs, {
      x: 1,
      codec: { key_id: 'nested', encodings: flat['ojs.codec.encodings'], nonce: 'bm9uY2U=' },
    });
    const scalar = { ...flat, ojs: 'v1' };
    assert.equal(withCodecMirror(scalar), scalar);
    const scalarCodec = { ...flat, ojs: { codec: 7 } };
    assert.equal(withCodecMirror(scalarCodec), scalarCodec);
  });

  it('re-ingest: the mirror of flat keys is dropped, flat keys win, other nested keys stay', () => {
    assert.deepEqual(withoutCodecMirror(withCodecMirror(flat)), flat);
    const conflicting = { ...flat, ojs: { codec: { key_id: 'other', aad: 'x' }, y: 2 } };
    assert.deepEqual(withoutCodecMirror(conflicting), {
      ...flat,
      ojs: { codec: { aad: 'x' }, y: 2 },
    });
    const nestedOnly = { ojs: { codec: { key_id: 'n' } } };
    assert.equal(withoutCodecMirror(nestedOnly), nestedOnly);
  });

  it('toWire mirrors; parsing an output body stores the flat keys only', () => {
    const job = parseEnqueueRequest({ type: 'a.b', args: ['x'], meta: flat }, 0, DEFAULTS);
    assert.deepEqual(job.meta, flat);
    const wire = toWire(job);
    assert.deepEqual((wire.meta as Record<string, unknown>).ojs, withCodecMirror(flat).ojs);
    assert.deepEqual(job.meta, flat, 'the record is not changed by its output');
    const again = parseEnqueueRequest({ type: 'a.b', args: ['x'], meta: wire.meta }, 0, DEFAULTS);
    assert.deepEqual(again.meta, flat);
  });

  it('isCodecEncoded: codec chain in meta (flat or nested), meta.ojs_encoded, or an encoded args envelope', () => {
    assert.equal(isCodecEncoded({ args: ['x'], meta: flat }), true);
    assert.equal(
      isCodecEncoded({ args: ['x'], meta: { ojs: { codec: { encodings: [] } } } }),
      true,
    );
    assert.equal(isCodecEncoded({ args: ['eA=='], meta: { ojs_encoded: true } }), true);
    assert.equal(
      isCodecEncoded({
        args: [{ ojs_encoded: true, encoding: 'binary/encrypted', data: 'eA==' }],
        meta: {},
      }),
      true,
    );
    assert.equal(isCodecEncoded({ args: [{ a: 1 }], meta: { ojs_encoded: 'yes' } }), false);
    assert.equal(isCodecEncoded({ args: [], meta: {} }), false);
  });
});
