/**
 * The gRPC transport's messages on the jobs' path, written and read with
 * proto-codec.ts (decision 0107): a PUSH body (the HTTP binding's, from
 * `toPushBody`) straight to EnqueueRequest bytes, and Job bytes straight to
 * the HTTP binding's job object, so a job looks the same on either
 * transport. Field numbers are those of ojs/v1/job.proto, worker.proto,
 * queue.proto and ojsts/v1/extensions.proto.
 */
import { isObject } from './generated/is-object.ts';
import {
  JOB_STATES,
  jobStateNumber,
  ProtoReader,
  ProtoWriter,
  readMillis,
  readStruct,
  readValue,
  writeMillis,
  writeStruct,
  writeTimestamp,
  writeValue,
} from './proto-codec.ts';
import type { Job } from './types.ts';

type Obj = Record<string, unknown>;

// ------------------------------------------------------------ requests

/** ISO 8601 duration text (a subset: days, hours, minutes, seconds) -> ms. */
export function isoMs(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const m =
    /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(
      text,
    );
  if (m === null) return undefined;
  const [, d, h, min, s] = m.map((x) => (x === undefined ? 0 : Number(x)));
  return Math.round((((d! * 24 + h!) * 60 + min!) * 60 + s!) * 1000);
}

const CONFLICT: Record<string, number> = {
  reject: 1,
  replace: 2,
  ignore: 3,
  replace_except_schedule: 4,
};

function writeStrings(w: ProtoWriter, field: number, list: unknown): void {
  if (!Array.isArray(list)) return;
  for (const item of list) w.string(field, String(item));
}

function writeRetryPolicy(w: ProtoWriter, field: number, retry: Obj): void {
  const mark = w.begin(field);
  if (typeof retry.max_attempts === 'number') w.intField(1, retry.max_attempts);
  writeMillis(
    w,
    2,
    isoMs(retry.initial_interval) ?? (retry.initial_interval_ms as number | undefined),
  );
  if (typeof retry.backoff_coefficient === 'number' && retry.backoff_coefficient !== 0) {
    w.double(3, retry.backoff_coefficient);
  }
  writeMillis(w, 4, isoMs(retry.max_interval) ?? (retry.max_interval_ms as number | undefined));
  w.boolField(5, retry.jitter === true);
  writeStrings(w, 6, retry.non_retryable_errors);
  if (typeof retry.on_exhaustion === 'string') w.text(7, retry.on_exhaustion);
  w.end(mark);
}

function writeUniquePolicy(w: ProtoWriter, field: number, unique: Obj): void {
  const mark = w.begin(field);
  writeStrings(w, 1, unique.keys);
  writeMillis(w, 2, isoMs(unique.period));
  if (typeof unique.on_conflict === 'string') w.intField(3, CONFLICT[unique.on_conflict]);
  if (Array.isArray(unique.states) && unique.states.length > 0) {
    // Packed, as proto3 writes a repeated enum.
    const packed = w.begin(4);
    for (const state of unique.states) w.varint(jobStateNumber(String(state)));
    w.end(packed);
  }
  writeStrings(w, 5, unique.args_keys);
  writeStrings(w, 6, unique.meta_keys);
  w.end(mark);
}

/**
 * A PUSH body as EnqueueRequest (or BatchJobEntry, WorkflowStep's first
 * fields: type 1, args 2, options 3) into `w`: options.* and top-level meta
 * become EnqueueOptions.
 */
export function writeEnqueueFields(w: ProtoWriter, body: Obj): void {
  if (typeof body.type === 'string') w.text(1, body.type);
  if (Array.isArray(body.args)) for (const arg of body.args) writeValue(w, 2, arg);
  const o = isObject(body.options) ? body.options : {};
  const mark = w.begin(3);
  if (typeof o.queue === 'string') w.text(1, o.queue);
  if (typeof o.priority === 'number') w.intField(2, o.priority);
  const at = o.delay_until ?? o.scheduled_at;
  if (typeof at === 'string') writeTimestamp(w, 3, at);
  if (typeof o.timeout_ms === 'number') writeMillis(w, 4, o.timeout_ms);
  if (isObject(o.retry)) writeRetryPolicy(w, 5, o.retry);
  if (isObject(o.unique)) writeUniquePolicy(w, 6, o.unique);
  if (typeof o.expires_at === 'string') {
    writeMillis(w, 7, Math.max(1, Date.parse(o.expires_at) - Date.now()));
  }
  writeStrings(w, 8, o.tags);
  if (isObject(body.meta)) writeStruct(w, 10, body.meta);
  if (typeof o.visibility_timeout_ms === 'number') writeMillis(w, 12, o.visibility_timeout_ms);
  w.boolField(13, o.pending === true);
  w.end(mark);
}

/** ojs.v1.EnqueueRequest of a PUSH body. */
export function encodeEnqueueRequest(body: Obj): Buffer {
  const w = new ProtoWriter();
  writeEnqueueFields(w, body);
  return w.finish();
}

/** ojs.v1.EnqueueBatchRequest of PUSH bodies (no default_options). */
export function encodeEnqueueBatchRequest(request: { bodies: Obj[] }): Buffer {
  const w = new ProtoWriter();
  for (const body of request.bodies) {
    const mark = w.begin(1);
    writeEnqueueFields(w, body);
    w.end(mark);
  }
  return w.finish();
}

/**
 * One ojsts.v1.EnqueueManyItem (its id may be empty) as field 1 of an
 * EnqueueManyRequest: the request is its items' bytes end to end, so a
 * push whose body cannot be written fails alone.
 */
export function encodeEnqueueManyItem(id: string, body: Obj): Buffer {
  const w = new ProtoWriter();
  const item = w.begin(1);
  w.text(1, id);
  const job = w.begin(2);
  writeEnqueueFields(w, body);
  w.end(job);
  w.end(item);
  return w.finish();
}

// ------------------------------------------------------------ jobs

const TIMESTAMP_FIELDS: Record<number, string> = {
  14: 'created_at',
  15: 'enqueued_at',
  16: 'scheduled_at',
  17: 'started_at',
  18: 'completed_at',
  19: 'expires_at',
};

/** The last time formatted, per timestamp field (index: field number, 0 for other timestamps). */
const lastMillis: number[] = Array(20).fill(Number.NaN);
const lastIso: string[] = Array(20).fill('');

/**
 * A Timestamp's text. The jobs of one reply mostly share each timestamp
 * (a batch is enqueued in one millisecond, a Fetch claims its jobs in
 * one): the last value of each field is formatted once. One cache for all
 * fields missed on every job of a Fetch, whose created_at and started_at
 * alternate (decision 0119). With the duration texts below, reading a job
 * costs about a fifth less (decision 0112).
 */
function isoTimestamp(ms: number, field = 0): string {
  if (ms !== lastMillis[field]) {
    lastIso[field] = new Date(ms).toISOString();
    lastMillis[field] = ms;
  }
  return lastIso[field]!;
}

const durationTexts = new Map<number, string>();

/**
 * Text of a Duration in ms (`PT1.5S`), as the job's retry policy is shown.
 * Jobs mostly share their policies: each value is formatted once (at most
 * 100 kept).
 */
function isoText(ms: number | undefined): string | undefined {
  if (ms === undefined) return undefined;
  let text = durationTexts.get(ms);
  if (text === undefined) {
    text = `PT${ms / 1000}S`;
    if (durationTexts.size >= 100) durationTexts.clear();
    durationTexts.set(ms, text);
  }
  return text;
}

function readStrings(r: ProtoReader, into: string[] | undefined): string[] {
  const list = into ?? [];
  list.push(r.string());
  return list;
}

function readRetryPolicy(r: ProtoReader): Obj {
  const end = r.enter();
  let maxAttempts: number | undefined;
  let initial: number | undefined;
  let coefficient: number | undefined;
  let max: number | undefined;
  let jitter = false;
  let nonRetryable: string[] | undefined;
  let onExhaustion = '';
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 8:
        maxAttempts = r.int32();
        break;
      case 18:
        initial = readMillis(r);
        break;
      case 25:
        coefficient = r.double();
        break;
      case 34:
        max = readMillis(r);
        break;
      case 40:
        jitter = r.varint() !== 0;
        break;
      case 50:
        nonRetryable = readStrings(r, nonRetryable);
        break;
      case 58:
        onExhaustion = r.string();
        break;
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  return {
    max_attempts: maxAttempts || undefined,
    initial_interval: isoText(initial),
    backoff_coefficient: coefficient || undefined,
    max_interval: isoText(max),
    jitter,
    non_retryable_errors: nonRetryable ?? [],
    on_exhaustion: onExhaustion || 'discard',
  };
}

function readJobError(r: ProtoReader): Obj {
  const end = r.enter();
  let code: string | undefined;
  let message = '';
  let retryable = false;
  let attempt = 0;
  let occurredAt: string | undefined;
  let details: Obj | undefined;
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 10:
        code = r.string();
        break;
      case 18:
        message = r.string();
        break;
      case 24:
        retryable = r.varint() !== 0;
        break;
      case 32:
        attempt = r.int32();
        break;
      case 42: {
        const ms = readMillis(r);
        occurredAt = ms === 0 ? undefined : isoTimestamp(ms);
        break;
      }
      case 58:
        details = readStruct(r);
        break;
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  const error: Obj = {
    code,
    type: code,
    message,
    retryable,
    attempt,
    occurred_at: occurredAt,
  };
  if (details !== undefined) error.details = details;
  return error;
}

/** ojs.v1.Job -> the HTTP binding's job object. */
export function readJob(r: ProtoReader): Job {
  const end = r.enter();
  const job: Obj = {
    specversion: '1.0',
    id: undefined,
    type: undefined,
    queue: 'default',
    args: [],
    meta: {},
    state: undefined,
    priority: 0,
    attempt: 0,
    max_attempts: 0,
  };
  const args: unknown[] = [];
  let tags: string[] | undefined;
  let parentResults: unknown[] | undefined;
  let errors: Obj[] | undefined;
  while (r.pos < end) {
    const key = r.varint();
    switch (key) {
      case 10:
        job.id = r.string();
        break;
      case 18:
        job.type = r.string();
        break;
      case 26:
        job.queue = r.string() || 'default';
        break;
      case 34:
        args.push(readValue(r));
        break;
      case 42:
        job.meta = readStruct(r);
        break;
      case 48:
        job.state = JOB_STATES[r.int32()];
        break;
      case 56:
        job.priority = r.int32();
        break;
      case 64:
        job.attempt = r.int32();
        break;
      case 72:
        job.max_attempts = r.int32();
        break;
      case 82:
        job.retry = readRetryPolicy(r);
        break;
      case 98: {
        const result = readStruct(r);
        const keys = Object.keys(result);
        // A non-object result travels as {"value": ...} (Struct only, G-9).
        job.result = keys.length === 1 && keys[0] === 'value' ? result.value : result;
        break;
      }
      case 106:
        errors ??= [];
        errors.push(readJobError(r));
        break;
      case 114:
      case 122:
      case 130:
      case 138:
      case 146:
      case 154: {
        const ms = readMillis(r);
        if (ms !== 0) job[TIMESTAMP_FIELDS[key >>> 3]!] = isoTimestamp(ms, key >>> 3);
        break;
      }
      case 162:
        job.timeout_ms = readMillis(r);
        break;
      case 170:
        job.visibility_timeout_ms = readMillis(r);
        break;
      case 178:
        tags = readStrings(r, tags);
        break;
      case 194:
        job.workflow_id = r.string() || undefined;
        break;
      case 202:
        job.specversion = r.string() || '1.0';
        break;
      // ojs-ts extension fields (job.proto 1001-1003): a workflow step's inputs.
      case 8010:
        parentResults ??= [];
        parentResults.push(readValue(r));
        break;
      case 8018:
        job.parent_results_by_step = readStruct(r);
        break;
      case 8026:
        job.workflow_step_id = r.string() || undefined;
        break;
      default:
        r.skip(key & 7);
    }
  }
  r.leave();
  job.args = args;
  if (tags !== undefined) job.tags = tags;
  if (parentResults !== undefined) job.parent_results = parentResults;
  if (errors !== undefined) {
    job.errors = errors;
    job.error = errors.at(-1);
  }
  for (const field of ['workflow_id', 'workflow_step_id']) {
    if (job[field] === undefined) delete job[field];
  }
  return job as unknown as Job;
}

/** A reply whose field 1 is one Job (EnqueueResponse, GetJobResponse, ...): the job, if any. */
export function decodeJobReply(bytes: Uint8Array): { job?: Job } {
  const r = new ProtoReader(bytes);
  const out: { job?: Job } = {};
  while (r.pos < r.buf.length) {
    const key = r.varint();
    if (key === 10) out.job = readJob(r);
    else r.skip(key & 7);
  }
  return out;
}

/**
 * A reply whose field 1 is `repeated Job` (FetchResponse,
 * EnqueueBatchResponse, ListDeadLetterResponse); ListDeadLetterResponse's
 * total_count (2) and next_cursor (3) with `paged`.
 */
export function decodeJobsReply(
  bytes: Uint8Array,
  paged = false,
): { jobs: Job[]; total_count?: number; next_cursor?: string } {
  const r = new ProtoReader(bytes);
  const out: { jobs: Job[]; total_count?: number; next_cursor?: string } = { jobs: [] };
  while (r.pos < r.buf.length) {
    const key = r.varint();
    if (key === 10) out.jobs.push(readJob(r));
    else if (paged && key === 16) out.total_count = r.varint();
    else if (paged && key === 26) out.next_cursor = r.string();
    else r.skip(key & 7);
  }
  return out;
}

/** One ojsts.v1.EnqueueManyResult, its job read as the HTTP binding's. */
export interface EnqueueManyResult {
  status: string;
  job?: Job;
  code: number;
  error_code: string;
  error_message: string;
  error_metadata: Record<string, string>;
}

export function decodeEnqueueManyResponse(bytes: Uint8Array): { results: EnqueueManyResult[] } {
  const r = new ProtoReader(bytes);
  const results: EnqueueManyResult[] = [];
  while (r.pos < r.buf.length) {
    const key = r.varint();
    if (key !== 10) {
      r.skip(key & 7);
      continue;
    }
    const result: EnqueueManyResult = {
      status: '',
      code: 0,
      error_code: '',
      error_message: '',
      error_metadata: {},
    };
    const end = r.enter();
    while (r.pos < end) {
      const k = r.varint();
      switch (k) {
        case 10:
          result.status = r.string();
          break;
        case 18:
          result.job = readJob(r);
          break;
        case 24:
          result.code = r.int32();
          break;
        case 34:
          result.error_code = r.string();
          break;
        case 42:
          result.error_message = r.string();
          break;
        case 50: {
          const entryEnd = r.enter();
          let name = '';
          let value = '';
          while (r.pos < entryEnd) {
            const e = r.varint();
            if (e === 10) name = r.string();
            else if (e === 18) value = r.string();
            else r.skip(e & 7);
          }
          r.leave();
          result.error_metadata[name] = value;
          break;
        }
        default:
          r.skip(k & 7);
      }
    }
    r.leave();
    results.push(result);
  }
  return { results };
}

// ------------------------------------------------------------ AckBatch (ojsts.v1.WorkerExtensions)

/** ojs.v1.JobError's fields of a NACK (grpc.ts `jobErrorFields`), details as JSON. */
export interface JobErrorFields {
  code?: string;
  message?: string;
  retryable: boolean;
  backtrace: string;
  details: Obj;
}

export interface AckBatchItems {
  /** `result` already as the object its Struct holds (proto-wire `resultObject`). */
  acks: { job_id: string; result?: Obj; worker_id: string; attempt: number }[];
  nacks: {
    job_id: string;
    error: JobErrorFields;
    worker_id: string;
    attempt: number;
    requeue: boolean;
  }[];
}

/**
 * ojsts.v1.AckBatchRequest written directly (decision 0112): the bytes
 * proto-loader writes for the same items (a result or details present
 * even when empty, proto3 defaults left out).
 */
export function encodeAckBatchRequest(request: AckBatchItems): Buffer {
  const w = new ProtoWriter();
  for (const ack of request.acks) {
    const item = w.begin(1);
    w.text(1, ack.job_id);
    if (ack.result !== undefined) writeStruct(w, 2, ack.result);
    w.text(3, ack.worker_id);
    w.intField(4, ack.attempt);
    w.end(item);
  }
  for (const nack of request.nacks) {
    const item = w.begin(2);
    w.text(1, nack.job_id);
    const error = w.begin(2);
    w.text(1, nack.error.code);
    w.text(2, nack.error.message);
    w.boolField(3, nack.error.retryable);
    w.text(6, nack.error.backtrace);
    writeStruct(w, 7, nack.error.details);
    w.end(error);
    w.text(3, nack.worker_id);
    w.intField(4, nack.attempt);
    w.boolField(5, nack.requeue);
    w.end(item);
  }
  return w.finish();
}

/** One ojsts.v1.AckBatchResult, its state already the HTTP binding's name. */
export interface AckBatchResultMessage {
  job_id?: string;
  status?: string;
  state?: string;
  attempt?: number;
  error_code?: string;
  error_message?: string;
  retryable?: boolean;
}

/** ojsts.v1.AckBatchResponse read directly: fields absent when not sent, as proto-loader reads them. */
export function decodeAckBatchResponse(bytes: Uint8Array): { results: AckBatchResultMessage[] } {
  const r = new ProtoReader(bytes);
  const results: AckBatchResultMessage[] = [];
  while (r.pos < r.buf.length) {
    const key = r.varint();
    if (key !== 10) {
      r.skip(key & 7);
      continue;
    }
    const end = r.enter();
    const result: AckBatchResultMessage = {};
    while (r.pos < end) {
      const k = r.varint();
      switch (k) {
        case 10:
          result.job_id = r.string();
          break;
        case 18:
          result.status = r.string();
          break;
        case 24:
          result.state = JOB_STATES[r.int32()];
          break;
        case 32:
          result.attempt = r.int32();
          break;
        case 42:
          result.error_code = r.string();
          break;
        case 50:
          result.error_message = r.string();
          break;
        case 56:
          result.retryable = r.varint() !== 0;
          break;
        default:
          r.skip(k & 7);
      }
    }
    r.leave();
    results.push(result);
  }
  return { results };
}
