/**
 * Codecs (encryption extension, `urn:ojs:ext:encryption`, decision 0104):
 * the SDK encodes a job's args before they leave the process and decodes
 * them before the handler runs; the server stores them opaque.
 *
 * A chain encodes in order and decodes in reverse. The encoded args are
 * one element, `{ojs_encoded: true, encoding, data: base64}`, and meta gets
 * the flat keys `ojs.codec.encodings` (the chain, in encode order),
 * `ojs.codec.key_id` and `ojs.codec.nonce` (the JS and Python SDKs' keys).
 * AES-256-GCM as the spec defines it: 32-byte key, a random 12-byte nonce
 * per job, a 16-byte tag, blob `0x01 | nonce | ciphertext | tag`. Gzip is
 * `gzip/plain` (CompressionStream), `zstd/plain` (node:zlib, Node >=
 * 22.15). Web Crypto and CompressionStream, so AES and gzip run where the
 * SDK runs (Node >= 18, browsers, Deno, Bun) with no dependency.
 */
import type { webcrypto } from 'node:crypto';
import { canonicalJson } from './generated/canonical-json.ts';
import { isObject } from './generated/is-object.ts';
import type { JobEnvelope } from './types.ts';

type Obj = Record<string, unknown>;

export const CODEC_META = {
  encodings: 'ojs.codec.encodings',
  keyId: 'ojs.codec.key_id',
  nonce: 'ojs.codec.nonce',
  /** The SHA-256 of the plaintext args the unique key is computed from. */
  uniqueArgs: 'ojs.codec.unique_args',
} as const;

/** Shown instead of args in logs and spans (encryption §3.1). */
export const ENCRYPTED_PLACEHOLDER = '[encrypted]';

/**
 * A job whose args cannot be decoded (an unknown key id or encoding, a
 * tampered blob): the job fails for good, retrying cannot help.
 */
export class CodecError extends Error {
  readonly code = 'codec_error';
  readonly retryable = false;
  constructor(message: string) {
    super(message);
    this.name = 'CodecError';
  }
}

/**
 * One step of a chain. `meta` is the job's meta: encode may write keys to
 * it. Encode may answer `null` to be left out of this job's chain (a
 * compression that would grow the payload, encryption §6: S).
 */
export interface Codec {
  /** The name written to `ojs.codec.encodings` and looked up on decode. */
  readonly encoding: string;
  encode(data: Uint8Array, meta: Obj): Promise<Uint8Array | null>;
  decode(data: Uint8Array, meta: Readonly<Obj>): Promise<Uint8Array>;
}

// ---------------------------------------------------------------- bytes

export function toBase64(bytes: Uint8Array): string {
  if (typeof Buffer !== 'undefined') return Buffer.from(bytes).toString('base64');
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

export function fromBase64(text: string): Uint8Array {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) {
    throw new CodecError('The encoded data is not base64.');
  }
  if (typeof Buffer !== 'undefined') return new Uint8Array(Buffer.from(text, 'base64'));
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

type Subtle = webcrypto.SubtleCrypto;
type CryptoKey = webcrypto.CryptoKey;
let subtle: Promise<{ subtle: Subtle; random(bytes: Uint8Array): Uint8Array }> | undefined;

/** Web Crypto: global on Node >= 19 and elsewhere; node:crypto's on Node 18. */
function webCrypto() {
  subtle ??= (async () => {
    const crypto =
      globalThis.crypto?.subtle === undefined
        ? (await import(/* webpackIgnore: true */ 'node:crypto')).webcrypto
        : (globalThis.crypto as unknown as webcrypto.Crypto);
    return {
      subtle: crypto.subtle,
      random: (bytes: Uint8Array) => crypto.getRandomValues(bytes),
    };
  })();
  return subtle;
}

/** A new random AES-256 key, base64 (what `ojs codec keygen` prints). */
export async function generateKey(): Promise<string> {
  const { random } = await webCrypto();
  return toBase64(random(new Uint8Array(32)));
}

async function sha256Hex(text: string): Promise<string> {
  const { subtle } = await webCrypto();
  const digest = new Uint8Array(await subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

// ---------------------------------------------------------------- AES-256-GCM

export interface AesGcmOptions {
  /** The keyring: key id -> 32-byte key (bytes or base64). Keep old keys while their jobs live. */
  keys: Readonly<Record<string, Uint8Array | string>>;
  /** The key new jobs are encrypted with; the others only decrypt. */
  currentKeyId: string;
}

const BLOB_VERSION = 0x01;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** `binary/encrypted`: AES-256-GCM with key rotation by `ojs.codec.key_id`. */
export class AesGcmCodec implements Codec {
  readonly encoding = 'binary/encrypted';
  readonly currentKeyId: string;
  readonly #raw = new Map<string, Uint8Array>();
  readonly #keys = new Map<string, Promise<CryptoKey>>();

  constructor(options: AesGcmOptions) {
    for (const [id, key] of Object.entries(options.keys)) {
      const bytes = typeof key === 'string' ? fromBase64(key) : key;
      if (bytes.length !== 32) {
        throw new Error(`AES-256-GCM key '${id}' has ${bytes.length} bytes; it needs 32.`);
      }
      this.#raw.set(id, bytes);
    }
    if (!this.#raw.has(options.currentKeyId)) {
      throw new Error(`The current key id '${options.currentKeyId}' is not in the keyring.`);
    }
    this.currentKeyId = options.currentKeyId;
  }

  #key(id: string): Promise<CryptoKey> {
    let key = this.#keys.get(id);
    if (key === undefined) {
      const raw = this.#raw.get(id);
      if (raw === undefined) {
        throw new CodecError(
          `The job was encrypted with key '${id}', which is not in the keyring.`,
        );
      }
      key = webCrypto().then(({ subtle }) =>
        subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']),
      );
      this.#keys.set(id, key);
    }
    return key;
  }

  async encode(data: Uint8Array, meta: Obj): Promise<Uint8Array> {
    const { subtle, random } = await webCrypto();
    const nonce = random(new Uint8Array(NONCE_BYTES));
    const key = await this.#key(this.currentKeyId);
    // Web Crypto returns ciphertext | tag: the blob's tail as the spec lays it out.
    const sealed = new Uint8Array(
      await subtle.encrypt({ name: 'AES-GCM', iv: nonce, tagLength: TAG_BYTES * 8 }, key, data),
    );
    const blob = new Uint8Array(1 + NONCE_BYTES + sealed.length);
    blob[0] = BLOB_VERSION;
    blob.set(nonce, 1);
    blob.set(sealed, 1 + NONCE_BYTES);
    meta[CODEC_META.keyId] = this.currentKeyId;
    meta[CODEC_META.nonce] = toBase64(nonce);
    return blob;
  }

  async decode(blob: Uint8Array, meta: Readonly<Obj>): Promise<Uint8Array> {
    const id = meta[CODEC_META.keyId];
    if (typeof id !== 'string') throw new CodecError(`meta has no ${CODEC_META.keyId}.`);
    if (blob.length < 1 + NONCE_BYTES + TAG_BYTES || blob[0] !== BLOB_VERSION) {
      throw new CodecError('The encrypted blob is not 0x01 | nonce | ciphertext | tag.');
    }
    const key = await this.#key(id);
    const { subtle } = await webCrypto();
    try {
      return new Uint8Array(
        await subtle.decrypt(
          { name: 'AES-GCM', iv: blob.subarray(1, 1 + NONCE_BYTES), tagLength: TAG_BYTES * 8 },
          key,
          blob.subarray(1 + NONCE_BYTES),
        ),
      );
    } catch {
      throw new CodecError(`The args do not decrypt with key '${id}' (wrong key or tampered).`);
    }
  }
}

// ---------------------------------------------------------------- gzip

async function through(
  data: Uint8Array,
  stream: CompressionStream | DecompressionStream,
): Promise<Uint8Array> {
  const writer = stream.writable.getWriter();
  const written = writer.write(new Uint8Array(data)).then(() => writer.close());
  const chunks: Uint8Array[] = [];
  const reader = stream.readable.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value as Uint8Array);
  }
  await written;
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/**
 * `gzip/plain`: compression, put before encryption in a chain (ciphertext
 * does not compress); left out of a job's chain when it would not shrink it.
 */
export class GzipCodec implements Codec {
  readonly encoding = 'gzip/plain';

  async encode(data: Uint8Array): Promise<Uint8Array | null> {
    const compressed = await through(data, new CompressionStream('gzip'));
    return compressed.length < data.length ? compressed : null;
  }

  async decode(data: Uint8Array): Promise<Uint8Array> {
    try {
      return await through(data, new DecompressionStream('gzip'));
    } catch {
      throw new CodecError('The args are not valid gzip data.');
    }
  }
}

type Zlib = {
  zstdCompress?: (
    data: Uint8Array,
    callback: (error: Error | null, out: Uint8Array) => void,
  ) => void;
  zstdDecompress?: (
    data: Uint8Array,
    callback: (error: Error | null, out: Uint8Array) => void,
  ) => void;
};
let zlib: Promise<Zlib> | undefined;

/** node:zlib's zstd (Node >= 22.15), loaded on first use: the SDK imports no node:* module for it. */
async function zstd(direction: 'zstdCompress' | 'zstdDecompress', data: Uint8Array) {
  zlib ??= import(/* webpackIgnore: true */ 'node:zlib' as string).then((m) => m as Zlib);
  const fn = (await zlib.catch(() => ({}) as Zlib))[direction];
  if (fn === undefined) throw new Error('zstd/plain needs node:zlib with zstd (Node >= 22.15).');
  return new Promise<Uint8Array>((resolve, reject) =>
    fn(data, (error, out) => (error ? reject(error) : resolve(new Uint8Array(out)))),
  );
}

/** `zstd/plain` (the spec's recommended compression), on Node >= 22.15; skipped when it would not shrink. */
export class ZstdCodec implements Codec {
  readonly encoding = 'zstd/plain';

  async encode(data: Uint8Array): Promise<Uint8Array | null> {
    const compressed = await zstd('zstdCompress', data);
    return compressed.length < data.length ? compressed : null;
  }

  async decode(data: Uint8Array): Promise<Uint8Array> {
    try {
      return await zstd('zstdDecompress', data);
    } catch (error) {
      if ((error as Error).message.startsWith('zstd/plain needs')) throw error;
      throw new CodecError('The args are not valid zstd data.');
    }
  }
}

// ---------------------------------------------------------------- the chain

/** Whether a job's args are encoded (any SDK's marks, C19). */
export function isEncoded(job: { args?: unknown; meta?: Obj }): boolean {
  const meta = job.meta ?? {};
  if (Array.isArray(meta[CODEC_META.encodings]) || meta.ojs_encoded === true) return true;
  const first = Array.isArray(job.args) ? job.args[0] : undefined;
  return isObject(first) && first.ojs_encoded === true;
}

/** Unique keys over args are computed from the plaintext (encryption §3.1): a digest in meta. */
async function plaintextUnique(envelope: JobEnvelope, meta: Obj): Promise<void> {
  const unique = envelope.unique;
  if (unique === undefined) return;
  const keys = unique.keys ?? ['type', 'queue', 'args', 'version'];
  const argsKeys = (unique.args_keys ?? unique.key) as string[] | undefined;
  if (!keys.includes('args') && argsKeys === undefined) return;
  const first = envelope.args[0];
  const material =
    argsKeys === undefined
      ? envelope.args
      : Object.fromEntries(argsKeys.map((k) => [k, isObject(first) ? (first[k] ?? null) : null]));
  meta[CODEC_META.uniqueArgs] = await sha256Hex(canonicalJson(material));
  const { args_keys: _a, key: _k, ...rest } = unique;
  const metaKeys = keys.includes('meta') ? ((unique.meta_keys as string[] | undefined) ?? []) : [];
  envelope.unique = {
    ...rest,
    keys: [...new Set([...keys.filter((k) => k !== 'args'), 'meta'])],
    meta_keys: [...metaKeys, CODEC_META.uniqueArgs],
  };
}

/**
 * An ordered list of codecs. `encodeEnvelope` before a job is sent (client
 * option `codec`), `decodeArgs` before its handler runs (worker option
 * `codec`); `decodeJob` for a job read back with `getJob`.
 */
export class CodecChain {
  readonly codecs: readonly Codec[];
  readonly #byName: Map<string, Codec>;

  constructor(codecs: readonly Codec[]) {
    if (codecs.length === 0) throw new Error('A codec chain needs at least one codec.');
    this.codecs = [...codecs];
    this.#byName = new Map(codecs.map((c) => [c.encoding, c]));
  }

  /** Encodes the envelope's args in place (after the enqueue middleware; unique keys from plaintext). */
  async encodeEnvelope(envelope: JobEnvelope): Promise<JobEnvelope> {
    const meta: Obj = { ...envelope.meta };
    await plaintextUnique(envelope, meta);
    let data: Uint8Array = new TextEncoder().encode(JSON.stringify(envelope.args));
    const encodings: string[] = [];
    for (const codec of this.codecs) {
      const encoded = await codec.encode(data, meta);
      if (encoded === null) continue;
      data = encoded;
      encodings.push(codec.encoding);
    }
    // Every codec stood aside (a compression-only chain on a small payload): sent as it is.
    if (encodings.length === 0) {
      envelope.meta = meta;
      return envelope;
    }
    meta[CODEC_META.encodings] = encodings;
    envelope.meta = meta;
    envelope.args = [
      {
        ojs_encoded: true,
        // Outermost first, as the spec writes `binary/encrypted+zstd`.
        encoding: [...encodings]
          .reverse()
          .map((e) => e.replace(/\/plain$/, ''))
          .join('+'),
        data: toBase64(data),
      },
    ];
    return envelope;
  }

  /** The plaintext args of an encoded job (its args as they are when not encoded). */
  async decodeArgs(job: { args: unknown[]; meta?: Obj }): Promise<unknown[]> {
    if (!isEncoded(job)) return job.args;
    const meta = job.meta ?? {};
    const encodings = meta[CODEC_META.encodings];
    if (!Array.isArray(encodings) || !encodings.every((e) => typeof e === 'string')) {
      throw new CodecError(`An encoded job needs ${CODEC_META.encodings} in meta.`);
    }
    const first = job.args[0];
    const text = isObject(first) ? first.data : first;
    if (typeof text !== 'string') throw new CodecError('The encoded args carry no base64 data.');
    let data = fromBase64(text);
    for (const encoding of [...encodings].reverse()) {
      const codec = this.#byName.get(encoding);
      if (codec === undefined) {
        throw new CodecError(`No codec for encoding '${encoding}' is configured.`);
      }
      data = await codec.decode(data, meta);
    }
    let args: unknown;
    try {
      args = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data));
    } catch {
      throw new CodecError('The decoded args are not UTF-8 JSON.');
    }
    if (!Array.isArray(args)) throw new CodecError('The decoded args are not a JSON array.');
    return args;
  }

  /** A copy of the job with plaintext args. */
  async decodeJob<J extends { args: unknown[]; meta?: Obj }>(job: J): Promise<J> {
    return isEncoded(job) ? { ...job, args: await this.decodeArgs(job) } : job;
  }
}
