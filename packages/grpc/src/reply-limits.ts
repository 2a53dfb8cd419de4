/**
 * Jobs handed out only as far as the client can receive them. A gRPC
 * client refuses a message above its receive limit (grpc-js: 4 MiB unless
 * the channel sets another) after the server has claimed the jobs in it:
 * they would stay active, leased to a worker that never saw them, until
 * their visibility timeout. So Fetch and StreamJobs encode their jobs
 * here, stop before a message would pass the limit the client declares in
 * `x-ojs-max-receive-message-length` (else grpc-js's default), and hand the
 * jobs left out back at once: a requeue, which does not count an attempt.
 */
import type * as grpc from '@grpc/grpc-js';
import { invalidRequest, type JobRecord, OjsError } from '@ojs/core';
import { type Engine, MAX_ACK_BATCH } from '@ojs/engine';
import { GRPC_DEFAULT_MAX_MESSAGE_BYTES } from './request-limits.ts';

export const RECEIVE_LIMIT_METADATA = 'x-ojs-max-receive-message-length';

/** The most bytes one message to this client may hold. */
export function receiveLimit(metadata: grpc.Metadata): number {
  const text = metadata.get(RECEIVE_LIMIT_METADATA)[0];
  if (text === undefined || text === '') return GRPC_DEFAULT_MAX_MESSAGE_BYTES;
  const n = typeof text === 'string' && /^\d{1,16}$/.test(text) ? Number(text) : 0;
  if (n < 1) {
    throw invalidRequest(`metadata ${RECEIVE_LIMIT_METADATA} must be a positive integer.`, {
      field: RECEIVE_LIMIT_METADATA,
    });
  }
  return n;
}

/** Claimed jobs back to available at once, their attempt not counted (a NACK with requeue). */
export async function releaseJobs(engine: Engine, jobs: readonly JobRecord[]): Promise<void> {
  for (let i = 0; i < jobs.length; i += MAX_ACK_BATCH) {
    await engine.settleBatch({
      nacks: jobs.slice(i, i + MAX_ACK_BATCH).map((job) => ({
        jobId: job.id,
        workerId: job.worker_id,
        attempt: job.attempt,
        requeue: true,
        error: { code: 'message_too_large', message: 'Larger than the client receives.' },
      })),
    });
  }
}

/** The answer when not even one claimed job fits: sent, it would fail in the client. */
export function tooLargeForClient(job: JobRecord, bytes: number, limit: number): OjsError {
  return new OjsError(
    'payload_too_large',
    `Job ${job.id} is ${bytes} bytes as a message, more than the ${limit} this client receives; it was handed back. Raise the client's receive limit and send it in ${RECEIVE_LIMIT_METADATA}.`,
    { job_id: job.id, max_bytes: limit, actual: bytes },
  );
}

/**
 * A Fetch answer of at most `limit` bytes: FetchResponse holds only
 * `repeated Job jobs = 1`, and concatenated messages are one message whose
 * repeated fields are joined, so the answer is the one-job answers end to
 * end, each encoded once. Jobs past the limit are released; when not even
 * the first fits, all are, and the call fails naming it.
 */
export async function fetchReply(
  engine: Engine,
  jobs: readonly JobRecord[],
  limit: number,
  encodeOne: (job: JobRecord) => Buffer,
): Promise<Buffer> {
  const parts: Buffer[] = [];
  let bytes = 0;
  for (const job of jobs) {
    const part = encodeOne(job);
    if (bytes + part.length > limit) {
      await releaseQuietly(engine, jobs.slice(parts.length));
      if (parts.length === 0) throw tooLargeForClient(job, part.length, limit);
      break;
    }
    parts.push(part);
    bytes += part.length;
  }
  return Buffer.concat(parts);
}

/**
 * Releases, but a failure to release (the store is down) must not cost the
 * client the jobs that fit: those leftover keep their leases, as before.
 */
export async function releaseQuietly(engine: Engine, jobs: readonly JobRecord[]): Promise<void> {
  if (jobs.length === 0) return;
  try {
    await releaseJobs(engine, jobs);
  } catch (error) {
    engine.logger.warn(
      { err: error, job_ids: jobs.map((job) => job.id) },
      'grpc: jobs too large for the client could not be handed back; they return when their leases expire',
    );
  }
}

/** Every method's reply encoder passes a reply already encoded (Buffer) through. */
export function withEncodedReplies(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  return Object.fromEntries(
    Object.entries(service).map(([name, method]) => [
      name,
      {
        ...method,
        responseSerialize: (reply: unknown) =>
          Buffer.isBuffer(reply) ? reply : method.responseSerialize(reply),
      },
    ]),
  );
}
