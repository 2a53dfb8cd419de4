/**
 * The protobuf wire format written and read directly, for the messages each
 * job crosses (decision 0107): Job, EnqueueRequest, FetchResponse,
 * EnqueueMany and AckBatch. protobufjs through @grpc/proto-loader builds an
 * object tree per message (fromObject, toObject, a Value tree per JSON
 * value) and that cost more CPU per job than the job's store work; here the
 * JSON values go to and from the wire in one pass. The bytes are the
 * spec's messages (ojs/v1/*.proto, ojsts/v1/extensions.proto): any
 * generated client reads what these write, and these read what it writes.
 * Shared by the SDK's gRPC transport and the server's binding; no
 * dependencies.
 */
import { isObject } from './generated/is-object.ts';

type Obj = Record<string, unknown>;

/** Wire types. */
const Wire = { Varint: 0, Fixed64: 1, Bytes: 2, Fixed32: 5 } as const;

const TWO_32 = 2 ** 32;
const EMPTY = Buffer.alloc(0);

/** Bytes of `n` as a varint (n >= 0, < 2^53). */
function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/**
 * The buffer messages are written into, shared: writing is synchronous, so
 * one writer at a time uses it, and `finish` copies the message out at its
 * exact size. A reply of a thousand jobs thus allocates its bytes once,
 * not a buffer grown (and garbage) along the way.
 */
let scratch: Buffer | undefined = Buffer.allocUnsafe(64 * 1024);

/** A message being written: a growing buffer, nested messages length-prefixed in place. */
export class ProtoWriter {
  buf: Buffer;
  pos = 0;
  #shared: boolean;

  constructor() {
    this.#shared = scratch !== undefined;
    this.buf = scratch ?? Buffer.allocUnsafe(1024);
    scratch = undefined;
  }

  #ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Non-negative integer below 2^53. */
  varint(n: number): void {
    this.#ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    while (n >= 0x80) {
      buf[pos++] = (n & 0x7f) | 0x80;
      n = n >= TWO_32 ? Math.floor(n / 128) : n >>> 7;
    }
    buf[pos++] = n;
    this.pos = pos;
  }

  /** int32 / int64: a negative value is its 64-bit two's complement, ten bytes. */
  int(n: number): void {
    if (n >= 0) {
      this.varint(n);
      return;
    }
    let v = BigInt.asUintN(64, BigInt(Math.trunc(n)));
    this.#ensure(10);
    for (let i = 0; i < 9; i++) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  /** A string field (written even when empty: callers leave out what proto3 leaves out). */
  string(field: number, s: string): void {
    this.tag(field, Wire.Bytes);
    const n = s.length;
    // Short ASCII, the common case, without a call into the UTF-8 encoder.
    if (n < 0x80) {
      this.#ensure(1 + 3 * n);
      const buf = this.buf;
      const start = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + i] = c;
      }
      if (i === n) {
        buf[this.pos] = n;
        this.pos = start + n;
        return;
      }
    }
    const bytes = Buffer.byteLength(s);
    this.varint(bytes);
    this.#ensure(bytes);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A string field, left out when empty (proto3). */
  text(field: number, s: string | undefined): void {
    if (s !== undefined && s !== '') this.string(field, s);
  }

  /** An int32/int64 field, left out when zero. */
  intField(field: number, n: number | undefined): void {
    if (n === undefined || n === 0) return;
    this.tag(field, Wire.Varint);
    this.int(n);
  }

  boolField(field: number, b: boolean | undefined): void {
    if (b !== true) return;
    this.tag(field, Wire.Varint);
    this.varint(1);
  }

  double(field: number, n: number): void {
    this.tag(field, Wire.Fixed64);
    this.#ensure(8);
    this.buf.writeDoubleLE(n, this.pos);
    this.pos += 8;
  }

  /** Already encoded message bytes as a field. */
  bytes(field: number, bytes: Uint8Array): void {
    this.tag(field, Wire.Bytes);
    this.varint(bytes.length);
    this.#ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** Opens a nested message: returns the mark `end` takes. One byte is kept for its length. */
  begin(field: number): number {
    this.tag(field, Wire.Bytes);
    this.#ensure(1);
    this.pos += 1;
    return this.pos;
  }

  /** Closes a nested message: its length goes before it (moved when longer than one byte). */
  end(mark: number): void {
    const length = this.pos - mark;
    if (length < 0x80) {
      this.buf[mark - 1] = length;
      return;
    }
    const extra = varintSize(length) - 1;
    this.#ensure(extra);
    this.buf.copyWithin(mark + extra, mark, this.pos);
    this.pos = mark - 1;
    this.varint(length);
    this.pos = mark + extra + length;
  }

  /** The bytes written; the writer is done (its buffer goes back to be shared). */
  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    // The largest buffer seen is kept, up to 16 MiB.
    if (this.#shared || (scratch === undefined && this.buf.length <= 16 * 1024 * 1024)) {
      scratch = this.buf;
    }
    this.#shared = false;
    this.buf = EMPTY;
    return out;
  }
}

// ------------------------------------------------------------ well-known types

/** google.protobuf.Timestamp / Duration of epoch or span milliseconds. */
export function writeMillis(w: ProtoWriter, field: number, ms: number | undefined): void {
  if (ms === undefined || !Number.isFinite(ms)) return;
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round(ms - seconds * 1000) * 1_000_000;
  const mark = w.begin(field);
  w.intField(1, seconds);
  w.intField(2, nanos);
  w.end(mark);
}

/** A Timestamp of RFC 3339 text or epoch ms; nothing when unset or unreadable. */
export function writeTimestamp(
  w: ProtoWriter,
  field: number,
  value: string | number | null | undefined,
): void {
  if (value === undefined || value === null) return;
  writeMillis(w, field, typeof value === 'number' ? value : Date.parse(value));
}

/** google.protobuf.Value of a JSON value (as proto-wire's toValue). */
export function writeValue(w: ProtoWriter, field: number, value: unknown): void {
  const mark = w.begin(field);
  writeValueBody(w, value);
  w.end(mark);
}

function writeValueBody(w: ProtoWriter, value: unknown): void {
  if (value === null || value === undefined) {
    w.tag(1, Wire.Varint);
    w.varint(0);
    return;
  }
  switch (typeof value) {
    case 'number':
      w.double(2, value);
      return;
    case 'string':
      w.string(3, value);
      return;
    case 'boolean':
      w.tag(4, Wire.Varint);
      w.varint(value ? 1 : 0);
      return;
  }
  if (Array.isArray(value)) {
    const mark = w.begin(6);
    for (const item of value) writeValue(w, 1, item);
    w.end(mark);
    return;
  }
  if (isObject(value)) {
    writeStruct(w, 5, value);
    return;
  }
  w.string(3, String(value));
}

/** google.protobuf.Struct of a JSON object (undefined members left out, as toStruct). */
export function writeStruct(w: ProtoWriter, field: number, value: Obj): void {
  const mark = w.begin(field);
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = value[key];
    if (item === undefined) continue;
    const entry = w.begin(1);
    w.string(1, key);
    writeValue(w, 2, item);
    w.end(entry);
  }
  w.end(mark);
}

/** Decodes the text of a string field (the server's is strict UTF-8). */
export type TextDecode = (buf: Buffer, start: number, end: number) => string;

const looseText: TextDecode = (buf, start, end) => buf.toString('utf8', start, end);

/**
 * Short ASCII texts read before, by a hash of their bytes (one per slot,
 * the last one read): ProtoReader.string hands the same string back when
 * the bytes match. A job's short texts repeat from job to job (type,
 * queue, on_exhaustion, Struct keys), and building each again cost one
 * allocation per character; JSON.parse on HTTP shares such values too
 * (decision 0126). Strings are immutable, so one table serves every
 * reader; a slot taken by another text is only a miss.
 */
const INTERN_SLOTS = 1024;
const interned: string[] = new Array<string>(INTERN_SLOTS).fill('');

/** A message being read. */
export class ProtoReader {
  readonly buf: Buffer;
  pos: number;
  /** Nesting left before a message is refused as too deep. */
  depth: number;
  readonly #text: TextDecode;

  constructor(buf: Uint8Array, options: { text?: TextDecode; maxDepth?: number } = {}) {
    this.buf = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.length);
    this.pos = 0;
    this.depth = options.maxDepth ?? 200;
    this.#text = options.text ?? looseText;
  }

  #truncated(): never {
    throw new RangeError('the message is truncated');
  }

  #byte(): number {
    const b = this.buf[this.pos++];
    if (b === undefined) this.#truncated();
    return b;
  }

  /** A varint as a number: int64 two's complement as a negative number, exact within 2^53. */
  varint(): number {
    let b = this.#byte();
    if (b < 0x80) return b;
    let lo = b & 0x7f;
    for (let shift = 7; shift < 28; shift += 7) {
      b = this.#byte();
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) return lo;
    }
    b = this.#byte();
    lo = (lo | ((b & 0x0f) << 28)) >>> 0;
    let hi = (b & 0x7f) >> 4;
    if (b < 0x80) return hi * TWO_32 + lo;
    for (let shift = 3; shift < 32; shift += 7) {
      b = this.#byte();
      hi |= (b & 0x7f) << shift;
      if (b < 0x80) return (hi | 0) * TWO_32 + lo;
    }
    throw new RangeError('a varint is longer than ten bytes');
  }

  /** int32 (also an enum): the low 32 bits, signed. */
  int32(): number {
    return this.varint() | 0;
  }

  double(): number {
    if (this.pos + 8 > this.buf.length) this.#truncated();
    const n = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return n;
  }

  /** The end of a length-delimited field starting here. */
  limit(): number {
    const length = this.varint();
    const end = this.pos + length;
    if (end > this.buf.length) this.#truncated();
    return end;
  }

  string(): string {
    const end = this.limit();
    const start = this.pos;
    this.pos = end;
    const n = end - start;
    if (n < 32) {
      const buf = this.buf;
      let h = n;
      for (let i = start; i < end; i++) {
        const c = buf[i]!;
        if (c >= 0x80) return this.#text(buf, start, end);
        h = (Math.imul(h, 31) + c) | 0;
      }
      const slot = (h ^ (h >>> 11)) & (INTERN_SLOTS - 1);
      const seen = interned[slot]!;
      if (seen.length === n) {
        let i = 0;
        while (i < n && seen.charCodeAt(i) === buf[start + i]) i++;
        if (i === n) return seen;
      }
      let s = '';
      for (let i = start; i < end; i++) s += String.fromCharCode(buf[i]!);
      interned[slot] = s;
      return s;
    }
    return this.#text(this.buf, start, end);
  }

  /** Steps into a nested message; `leave` restores the depth. */
  enter(): number {
    if (--this.depth < 0) throw new RangeError('the message is nested too deeply');
    return this.limit();
  }

  leave(): void {
    this.depth++;
  }

  skip(wire: number): void {
    switch (wire) {
      case Wire.Varint:
        this.varint();
        return;
      case Wire.Fixed64:
        this.pos += 8;
        break;
      case Wire.Bytes:
        this.pos = this.limit();
        return;
      case Wire.Fixed32:
        this.pos += 4;
        break;
      default:
        throw new RangeError(`wire type ${wire} is not supported`);
    }
    if (this.pos > this.buf.length) this.#truncated();
  }
}

/** Timestamp / Duration -> milliseconds (ms of an unset one: undefined). */
export function readMillis(r: ProtoReader): number {
  const end = r.enter();
  let seconds = 0;
  let nanos = 0;
  while (r.pos < end) {
    const key = r.varint();
    if (key === 8) seconds = r.varint();
    else if (key === 16) nanos = r.int32();
    else r.skip(key & 7);
  }
  r.leave();
  return seconds * 1000 + Math.floor(nanos / 1_000_000);
}

/** google.protobuf.Value -> its JSON value. */
export function readValue(r: ProtoReader): unknown {
  const end = r.enter();
  let value: unknown = null;
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 8:
        r.varint();
        value = null;
        break;
      case 17:
        value = r.double();
        break;
      case 26:
        value = r.string();
        break;
      case 32:
        value = r.varint() !== 0;
        break;
      case 42:
        value = readStruct(r);
        break;
      case 50: {
        const list: unknown[] = [];
        const listEnd = r.enter();
        while (r.pos < listEnd) {
          const k = r.varint();
          if (k === 10) list.push(readValue(r));
          else r.skip(k & 7);
        }
        r.leave();
        value = list;
        break;
      }
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  return value;
}

/** google.protobuf.Struct -> a JSON object (a key `__proto__` is data, as fromStruct). */
export function readStruct(r: ProtoReader): Obj {
  const out: Obj = {};
  const end = r.enter();
  while (r.pos < end) {
    const key = r.varint();
    if (key !== 10) {
      r.skip(key & 7);
      continue;
    }
    // A map entry is not a level of nesting (as protobufjs counts them).
    const entryEnd = r.limit();
    let name = '';
    let value: unknown = null;
    while (r.pos < entryEnd) {
      const k = r.varint();
      if (k === 10) name = r.string();
      else if (k === 18) value = readValue(r);
      else r.skip(k & 7);
    }
    if (name === '__proto__') {
      Object.defineProperty(out, name, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else out[name] = value;
  }
  r.leave();
  return out;
}

/** ojs.v1.JobState by number (0 is unspecified: no state). */
export const JOB_STATES = [
  undefined,
  'scheduled',
  'available',
  'pending',
  'active',
  'completed',
  'retryable',
  'cancelled',
  'discarded',
] as const;

/** The JobState number of a state name (0 for one the protocol does not have). */
export function jobStateNumber(state: string): number {
  return Math.max(0, JOB_STATES.indexOf(state as (typeof JOB_STATES)[number]));
}
