/**
 * The protobuf well-known types of the ojs.v1 protocol as @grpc/proto-loader
 * presents them (Timestamp, Duration, Struct, Value), to and from JSON
 * values and epoch milliseconds. Shared by the SDK's gRPC transport and the
 * server's gRPC binding (@ojs/grpc); no dependencies.
 */
import { isObject } from './generated/is-object.ts';

// The wire format written and read directly (decision 0107).
export * from './proto-codec.ts';

type Obj = Record<string, unknown>;

export interface PbTimestamp {
  seconds?: number | string;
  nanos?: number;
}
export type PbDuration = PbTimestamp;

export function toTimestamp(value: string | number | undefined | null): PbTimestamp | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms)) return undefined;
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round(ms - seconds * 1000) * 1_000_000 };
}

/** Epoch ms of a Timestamp; an unset or zero Timestamp is "not given" (protobuf-format §12). */
export function fromTimestamp(ts: PbTimestamp | null | undefined): number | undefined {
  if (ts === undefined || ts === null) return undefined;
  const ms = Number(ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1_000_000);
  return ms === 0 ? undefined : ms;
}

/** RFC 3339 text of a Timestamp, or undefined. */
export function timestampText(ts: PbTimestamp | null | undefined): string | undefined {
  const ms = fromTimestamp(ts);
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

export function toDuration(ms: number | undefined | null): PbDuration | undefined {
  if (ms === undefined || ms === null) return undefined;
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round(ms - seconds * 1000) * 1_000_000 };
}

/** Milliseconds of a Duration; undefined when unset. */
export function fromDuration(d: PbDuration | null | undefined): number | undefined {
  if (d === undefined || d === null) return undefined;
  return Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1_000_000);
}

/** google.protobuf.Value: protobufjs's bundled well-known types use camelCase field names. */
export type PbValue = Obj;

export function toValue(value: unknown): PbValue {
  if (value === null || value === undefined) return { nullValue: 'NULL_VALUE' };
  switch (typeof value) {
    case 'number':
      return { numberValue: value };
    case 'string':
      return { stringValue: value };
    case 'boolean':
      return { boolValue: value };
  }
  if (Array.isArray(value)) return { listValue: { values: value.map(toValue) } };
  if (isObject(value)) return { structValue: toStruct(value) };
  return { stringValue: String(value) };
}

/**
 * A Struct, Value or ListValue the server read straight into its JSON value
 * (proto-codec's readers, decision 0107), where proto-loader would have put
 * its message object: fromValue and fromStruct hand the value back as it is.
 */
export class DecodedJson {
  readonly json: unknown;
  constructor(json: unknown) {
    this.json = json;
  }
}

export function fromValue(value: PbValue | DecodedJson | null | undefined): unknown {
  if (value instanceof DecodedJson) return value.json;
  if (value === null || value === undefined) return null;
  const kind = typeof value.kind === 'string' ? value.kind : Object.keys(value)[0];
  switch (kind) {
    case 'numberValue':
      return Number(value.numberValue ?? 0);
    case 'stringValue':
      return String(value.stringValue ?? '');
    case 'boolValue':
      return Boolean(value.boolValue);
    case 'listValue':
      return ((value.listValue as { values?: PbValue[] } | undefined)?.values ?? []).map(fromValue);
    case 'structValue':
      return fromStruct(value.structValue as PbStruct | undefined) ?? {};
    default:
      return null;
  }
}

export interface PbStruct {
  fields?: Record<string, PbValue>;
}

export function toStruct(value: Obj): PbStruct {
  const fields: Record<string, PbValue> = {};
  for (const [key, item] of Object.entries(value)) {
    if (item !== undefined) fields[key] = toValue(item);
  }
  return { fields };
}

export function fromStruct(struct: PbStruct | DecodedJson | null | undefined): Obj | undefined {
  if (struct instanceof DecodedJson) return struct.json as Obj;
  if (struct === null || struct === undefined) return undefined;
  const out: Obj = {};
  for (const [key, item] of Object.entries(struct.fields ?? {})) {
    // defineProperty: a key named __proto__ is data, not a prototype.
    Object.defineProperty(out, key, {
      value: fromValue(item),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * `Job.result` and `AckRequest.result` are Structs (grpc-proto G-9): an
 * object result goes as it is; any other JSON value is carried as
 * `{"value": <result>}`.
 */
/** A job's result as the object a Struct holds: a non-object travels as {"value": ...} (G-9). */
export function resultObject(result: unknown): Obj | undefined {
  if (result === undefined) return undefined;
  return isObject(result) ? result : { value: result };
}

export function resultToStruct(result: unknown): PbStruct | undefined {
  const object = resultObject(result);
  return object === undefined ? undefined : toStruct(object);
}

export function stateToProto(state: string): string {
  return `JOB_STATE_${state.toUpperCase()}`;
}

export function stateFromProto(state: unknown): string | undefined {
  if (typeof state !== 'string' || !state.startsWith('JOB_STATE_')) return undefined;
  const name = state.slice('JOB_STATE_'.length).toLowerCase();
  return name === 'unspecified' ? undefined : name;
}

/** Where the .proto files of the ojs.v1 protocol ship: this package's proto/ directory. */
export const PROTO_FILES = [
  'ojs/v1/job.proto',
  'ojs/v1/queue.proto',
  'ojs/v1/worker.proto',
  'ojs/v1/workflow.proto',
  'ojs/v1/events.proto',
  'ojs/v1/service.proto',
  // ojs-ts extensions (AckBatch, EnqueueMany), a package of their own.
  'ojsts/v1/extensions.proto',
];

/**
 * @grpc/proto-loader options both sides use: the proto's own field names,
 * enums by name, int64 as numbers (counts and seconds stay far below 2^53),
 * zero scalars absent (proto3's "not given").
 */
export const LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  arrays: true,
  objects: true,
  oneofs: true,
};
