/**
 * The engine's job records as ojs.v1.Job bytes, written in one pass
 * (decision 0107): no message object, no Value tree, no protobufjs
 * fromObject. Every reply that carries jobs is encoded here (Enqueue,
 * EnqueueBatch, GetJob, CancelJob, ActivateJob, Fetch, StreamJobs, the
 * dead-letter RPCs, EnqueueMany); the handlers hand grpc-js the bytes,
 * which the service's reply encoders pass through (withEncodedReplies).
 */
import { type JobRecord, parseIsoDuration, type UniquePolicy, withCodecMirror } from '@ojs/core';
import {
  jobStateNumber,
  ProtoWriter,
  writeMillis,
  writeStruct,
  writeTimestamp,
  writeValue,
} from '@ojs/sdk/proto-wire';

const CONFLICT: Record<UniquePolicy['on_conflict'], number> = {
  reject: 1,
  replace: 2,
  ignore: 3,
  replace_except_schedule: 4,
};

/** ISO 8601 durations of retry policies repeat from job to job: parsed once each. */
const isoMillis = new Map<string, number | null>();

function isoToMillis(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  let ms = isoMillis.get(text);
  if (ms === undefined) {
    ms = parseIsoDuration(text);
    if (isoMillis.size > 1000) isoMillis.clear();
    isoMillis.set(text, ms);
  }
  return ms ?? undefined;
}

/**
 * The last text of each timestamp field and its epoch ms: the jobs of one
 * reply mostly share them (a batch's created_at and enqueued_at, a claim's
 * started_at), and Date.parse was the costliest step of writing a job
 * (decision 0121). Indexed by the Job field number.
 */
const lastText: (string | undefined)[] = [];
const lastMillis: number[] = [];

/** A Timestamp field of a job's RFC 3339 text (or epoch ms), parsed once per distinct text. */
function writeJobTime(w: ProtoWriter, field: number, value: string | number | undefined): void {
  if (typeof value !== 'string') {
    writeTimestamp(w, field, value);
    return;
  }
  if (lastText[field] !== value) {
    lastMillis[field] = Date.parse(value);
    lastText[field] = value;
  }
  writeMillis(w, field, lastMillis[field]);
}

/** The trace id a job carries: `meta.trace_id`, else the trace-id part of `meta.traceparent`. */
function traceIdOf(meta: Record<string, unknown>): string | undefined {
  if (typeof meta.trace_id === 'string') return meta.trace_id;
  if (typeof meta.traceparent === 'string') return meta.traceparent.split('-')[1];
  return undefined;
}

/** One Job message as field `field` of the message being written. */
export function writeJob(w: ProtoWriter, field: number, job: JobRecord): void {
  const mark = w.begin(field);
  writeJobFields(w, job);
  w.end(mark);
}

function writeJobFields(w: ProtoWriter, job: JobRecord): void {
  w.text(1, job.id);
  w.text(2, job.type);
  w.text(3, job.queue);
  for (const arg of job.args) writeValue(w, 4, arg);
  writeStruct(w, 5, withCodecMirror(job.meta));
  w.intField(6, jobStateNumber(job.state));
  w.intField(7, job.priority);
  w.intField(8, job.attempt);
  const retry = job.retry;
  w.intField(9, retry.max_attempts);
  const policy = w.begin(10);
  w.intField(1, retry.max_attempts);
  writeMillis(w, 2, isoToMillis(retry.initial_interval));
  if (retry.backoff_coefficient) w.double(3, retry.backoff_coefficient);
  writeMillis(w, 4, isoToMillis(retry.max_interval));
  w.boolField(5, retry.jitter);
  for (const code of retry.non_retryable_errors ?? []) w.string(6, code);
  w.text(7, retry.on_exhaustion);
  w.end(policy);
  if (job.unique !== undefined) {
    const unique = w.begin(11);
    for (const key of job.unique.keys) w.string(1, key);
    writeMillis(w, 2, job.unique.period_ms);
    w.intField(3, CONFLICT[job.unique.on_conflict]);
    if (job.unique.states.length > 0) {
      const states = w.begin(4);
      for (const state of job.unique.states) w.varint(jobStateNumber(state));
      w.end(states);
    }
    for (const key of job.unique.args_keys ?? []) w.string(5, key);
    for (const key of job.unique.meta_keys ?? []) w.string(6, key);
    w.end(unique);
  }
  // Job.result is a Struct (grpc-proto G-9): any other JSON value goes as {"value": ...}.
  if (job.result !== undefined) {
    const { result } = job;
    writeStruct(
      w,
      12,
      typeof result === 'object' && result !== null && !Array.isArray(result)
        ? (result as Record<string, unknown>)
        : { value: result },
    );
  }
  for (const error of job.errors) {
    const mark = w.begin(13);
    w.text(1, error.type ?? error.code);
    w.text(2, error.message);
    w.boolField(3, error.retryable);
    w.intField(4, error.attempt);
    writeTimestamp(w, 5, error.occurred_at);
    w.text(6, error.backtrace?.join('\n'));
    if (error.details !== undefined) writeStruct(w, 7, error.details);
    w.end(mark);
  }
  writeJobTime(w, 14, job.created_at);
  writeJobTime(w, 15, job.enqueued_at);
  writeJobTime(w, 16, job.scheduled_at);
  writeJobTime(w, 17, job.started_at);
  writeJobTime(w, 18, job.completed_at ?? job.cancelled_at ?? job.discarded_at);
  writeJobTime(w, 19, job.expires_at);
  writeMillis(w, 20, job.timeout_ms);
  writeMillis(w, 21, job.visibility_timeout_ms);
  for (const tag of job.tags ?? []) w.string(22, tag);
  w.text(23, traceIdOf(job.meta));
  w.text(24, job.workflow_id);
  w.string(25, '1.0');
  // ojs-ts extension fields 1001-1003 (job.proto): a workflow step's inputs.
  for (const value of job.parent_results ?? []) writeValue(w, 1001, value);
  if (job.parent_results_by_step !== undefined) {
    writeStruct(w, 1002, job.parent_results_by_step);
  }
  w.text(1003, job.workflow_step_id);
}

/** A Job message alone (StreamJobs). */
export function jobMessage(job: JobRecord): Buffer {
  const w = new ProtoWriter();
  writeJobFields(w, job);
  return w.finish();
}

/** A reply whose only field is `Job job = 1` (EnqueueResponse, GetJobResponse, ...). */
export function jobReply(job: JobRecord): Buffer {
  const w = new ProtoWriter();
  writeJob(w, 1, job);
  return w.finish();
}

/**
 * A reply of `repeated Job jobs = 1`, then ListDeadLetterResponse's
 * total_count (2) and next_cursor (3) or EnqueueBatchResponse's count (2).
 */
export function jobsReply(
  jobs: readonly JobRecord[],
  more: { count?: number; nextCursor?: string } = {},
): Buffer {
  const w = new ProtoWriter();
  for (const job of jobs) writeJob(w, 1, job);
  w.intField(2, more.count);
  w.text(3, more.nextCursor);
  return w.finish();
}
