/**
 * The enqueue requests read straight from the wire (decision 0107):
 * EnqueueRequest, EnqueueBatchRequest and ojsts.v1.EnqueueManyRequest, and
 * the worker's ojsts.v1.AckBatchRequest (decision 0112), into
 * the objects @grpc/proto-loader would make of them (keepCase, enums by
 * name, int64 as numbers, only the fields present, repeated fields always
 * there), except that each Struct and Value is its JSON value already
 * (DecodedJson, which fromValue and fromStruct hand back). convert.ts turns
 * them into PUSH bodies as it does any request, so both readers feed the
 * one mapping. Strings are strict UTF-8 and nesting is bounded, as
 * request-limits.ts reads every other request.
 */
import { decodeRequestText } from '@ojs/core';
import {
  DecodedJson,
  JOB_STATES,
  ProtoReader,
  readStruct,
  readValue,
  type TextDecode,
} from '@ojs/sdk/proto-wire';
import { PROTOBUF_RECURSION_LIMIT } from './proto.ts';

type Obj = Record<string, unknown>;

const strictText: TextDecode = (buf, start, end) =>
  decodeRequestText(buf.subarray(start, end), 'A string field of the request');

const CONFLICT_NAMES = [
  'UNIQUE_CONFLICT_ACTION_UNSPECIFIED',
  'UNIQUE_CONFLICT_ACTION_REJECT',
  'UNIQUE_CONFLICT_ACTION_REPLACE',
  'UNIQUE_CONFLICT_ACTION_IGNORE',
  'UNIQUE_CONFLICT_ACTION_REPLACE_EXCEPT_SCHEDULE',
];

/** An enum by name, as proto-loader's `enums: String`; a number it does not know stays a number. */
const enumName = (names: readonly string[], n: number): string | number => names[n] ?? n;

const JOB_STATE_NAMES = JOB_STATES.map((state) =>
  state === undefined ? 'JOB_STATE_UNSPECIFIED' : `JOB_STATE_${state.toUpperCase()}`,
);

function reader(bytes: Uint8Array): ProtoReader {
  return new ProtoReader(bytes, { text: strictText, maxDepth: PROTOBUF_RECURSION_LIMIT });
}

/** Timestamp / Duration as {seconds, nanos} (the fields present). */
function readTime(r: ProtoReader): Obj {
  const end = r.enter();
  const out: Obj = {};
  while (r.pos < end) {
    const key = r.varint();
    if (key === 8) out.seconds = r.varint();
    else if (key === 16) out.nanos = r.int32();
    else r.skip(key & 7);
  }
  r.leave();
  return out;
}

function readRetryPolicy(r: ProtoReader): Obj {
  const end = r.enter();
  const out: Obj = { non_retryable_errors: [] };
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 8:
        out.max_attempts = r.int32();
        break;
      case 18:
        out.initial_interval = readTime(r);
        break;
      case 25:
        out.backoff_coefficient = r.double();
        break;
      case 34:
        out.max_interval = readTime(r);
        break;
      case 40:
        out.jitter = r.varint() !== 0;
        break;
      case 50:
        (out.non_retryable_errors as string[]).push(r.string());
        break;
      case 58:
        out.on_exhaustion = r.string();
        break;
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  return out;
}

function readUniquePolicy(r: ProtoReader): Obj {
  const end = r.enter();
  const states: (string | number)[] = [];
  const out: Obj = { key: [], states, args_keys: [], meta_keys: [] };
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 10:
        (out.key as string[]).push(r.string());
        break;
      case 18:
        out.period = readTime(r);
        break;
      case 24:
        out.on_conflict = enumName(CONFLICT_NAMES, r.int32());
        break;
      case 32:
        states.push(enumName(JOB_STATE_NAMES, r.int32()));
        break;
      case 34: {
        // Packed, as proto3 writes a repeated enum.
        const packedEnd = r.limit();
        while (r.pos < packedEnd) states.push(enumName(JOB_STATE_NAMES, r.int32()));
        break;
      }
      case 42:
        (out.args_keys as string[]).push(r.string());
        break;
      case 50:
        (out.meta_keys as string[]).push(r.string());
        break;
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  return out;
}

function readOptions(r: ProtoReader): Obj {
  const end = r.enter();
  const out: Obj = { tags: [] };
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 10:
        out.queue = r.string();
        break;
      case 16:
        out.priority = r.int32();
        break;
      case 26:
        out.delay_until = readTime(r);
        break;
      case 34:
        out.timeout = readTime(r);
        break;
      case 42:
        out.retry = readRetryPolicy(r);
        break;
      case 50:
        out.unique = readUniquePolicy(r);
        break;
      case 58:
        out.ttl = readTime(r);
        break;
      case 66:
        (out.tags as string[]).push(r.string());
        break;
      case 74:
        out.trace_id = r.string();
        break;
      case 82:
        out.meta = new DecodedJson(readStruct(r));
        break;
      case 88:
        out.max_attempts = r.int32();
        break;
      case 98:
        out.visibility_timeout = readTime(r);
        break;
      case 104:
        out.pending = r.varint() !== 0;
        break;
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  return out;
}

/** EnqueueRequest / BatchJobEntry (type 1, args 2, options 3) up to `end`. */
function readEnqueueFields(r: ProtoReader, end: number): Obj {
  const args: DecodedJson[] = [];
  const out: Obj = { args };
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 10:
        out.type = r.string();
        break;
      case 18:
        args.push(new DecodedJson(readValue(r)));
        break;
      case 26:
        out.options = readOptions(r);
        break;
      default:
        r.skip(key & 7);
    }
  }
  return out;
}

function readNestedEnqueue(r: ProtoReader): Obj {
  const end = r.enter();
  const out = readEnqueueFields(r, end);
  r.leave();
  return out;
}

export function decodeEnqueueRequest(bytes: Uint8Array): Obj {
  const r = reader(bytes);
  return readEnqueueFields(r, r.buf.length);
}

export function decodeEnqueueBatchRequest(bytes: Uint8Array): Obj {
  const r = reader(bytes);
  const jobs: Obj[] = [];
  const out: Obj = { jobs };
  while (r.pos < r.buf.length) {
    const key = r.varint();
    if (key === 10) jobs.push(readNestedEnqueue(r));
    else if (key === 18) out.default_options = readOptions(r);
    else r.skip(key & 7);
  }
  return out;
}

export function decodeEnqueueManyRequest(bytes: Uint8Array): Obj {
  const r = reader(bytes);
  const items: Obj[] = [];
  while (r.pos < r.buf.length) {
    const key = r.varint();
    if (key !== 10) {
      r.skip(key & 7);
      continue;
    }
    const end = r.enter();
    const item: Obj = {};
    while (r.pos < end) {
      const k = r.varint();
      if (k === 10) item.id = r.string();
      else if (k === 18) item.job = readNestedEnqueue(r);
      else r.skip(k & 7);
    }
    r.leave();
    items.push(item);
  }
  return { items };
}

/** ojs.v1.JobError up to its end (a NACK's error). */
function readJobError(r: ProtoReader): Obj {
  const end = r.enter();
  const out: Obj = {};
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 10:
        out.code = r.string();
        break;
      case 18:
        out.message = r.string();
        break;
      case 24:
        out.retryable = r.varint() !== 0;
        break;
      case 32:
        out.attempt = r.int32();
        break;
      case 42:
        out.occurred_at = readTime(r);
        break;
      case 50:
        out.backtrace = r.string();
        break;
      case 58:
        out.details = new DecodedJson(readStruct(r));
        break;
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  return out;
}

/** ojsts.v1.AckItem (1) or NackItem (2): job_id 1, result/error 2, worker_id 3, attempt 4, requeue 5. */
function readSettlement(r: ProtoReader, nack: boolean): Obj {
  const end = r.enter();
  const out: Obj = {};
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 10:
        out.job_id = r.string();
        break;
      case 18:
        if (nack) out.error = readJobError(r);
        else out.result = new DecodedJson(readStruct(r));
        break;
      case 26:
        out.worker_id = r.string();
        break;
      case 32:
        out.attempt = r.int32();
        break;
      case 40:
        if (nack) out.requeue = r.varint() !== 0;
        else r.skip(key & 7);
        break;
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  return out;
}

export function decodeAckBatchRequest(bytes: Uint8Array): Obj {
  const r = reader(bytes);
  const acks: Obj[] = [];
  const nacks: Obj[] = [];
  while (r.pos < r.buf.length) {
    const key = r.varint();
    if (key === 10) acks.push(readSettlement(r, false));
    else if (key === 18) nacks.push(readSettlement(r, true));
    else r.skip(key & 7);
  }
  return { acks, nacks };
}
