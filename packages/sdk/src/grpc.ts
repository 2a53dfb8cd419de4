/**
 * The gRPC binding as an SDK transport: the same OjsClient and OjsWorker
 * API over ojs.v1.OJSService.
 *
 *   import { GrpcTransport } from '@ojs/sdk/grpc';
 *   const transport = new GrpcTransport({ address: '127.0.0.1:9090' });
 *   const worker = new OjsWorker({ transport, queues: ['default'] });
 *
 * @grpc/grpc-js and @grpc/proto-loader are optional peer dependencies,
 * imported on the first call, so the SDK stays dependency-free for HTTP
 * users. The .proto files ship in this package (proto/). Messages are
 * turned into the HTTP binding's wire objects, so a job looks the same on
 * either transport. What the protocol cannot say travels as ojs-ts call
 * metadata the server understands (`x-ojs-wait-ms` long poll,
 * `x-ojs-worker-id`/`x-ojs-attempt` fencing, `x-ojs-requeue`,
 * `x-ojs-idempotency-key`, `x-ojs-max-receive-message-length`); other
 * gRPC servers ignore it.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BackendError,
  ConnectionError,
  OjsError,
  parseErrorResponse,
  TimeoutError,
  UnsupportedFeatureError,
} from './errors.ts';
import { isObject } from './generated/is-object.ts';
import {
  type AckBatchResultMessage,
  decodeAckBatchResponse,
  decodeEnqueueManyResponse,
  decodeJobReply,
  decodeJobsReply,
  type EnqueueManyResult,
  encodeAckBatchRequest,
  encodeEnqueueBatchRequest,
  encodeEnqueueManyItem,
  encodeEnqueueRequest,
  type JobErrorFields,
} from './grpc-messages.ts';
import { parseAckBatchResults, toPushBody } from './http.ts';
import { ProtoReader } from './proto-codec.ts';
import {
  fromStruct,
  fromValue,
  LOADER_OPTIONS,
  type PbStruct,
  type PbTimestamp,
  type PbValue,
  PROTO_FILES,
  resultObject,
  resultToStruct,
  stateFromProto,
  timestampText,
  toDuration,
  toStruct,
} from './proto-wire.ts';
import { TurnBatch } from './turn-batch.ts';
import type {
  AckBatchRequest,
  AckBatchResponse,
  AckRequest,
  CronJob,
  EventPage,
  FetchRequest,
  HeartbeatRequest,
  HeartbeatResponse,
  Job,
  JobEnvelope,
  ListOptions,
  Manifest,
  NackRequest,
  Page,
  PushResult,
  QueueInfo,
  QueueStats,
  RequestOptions,
  Transport,
  Workflow,
} from './types.ts';

type Obj = Record<string, unknown>;

export interface GrpcTransportOptions {
  /** `host:port` of the server's gRPC binding (default port 9090). */
  address: string;
  /** Sent as `authorization: Bearer <token>` metadata. */
  authToken?: string;
  /** Extra metadata on every call. */
  metadata?: Record<string, string>;
  /** The tenant this client or worker acts for: metadata `x-ojs-tenant` on every call. */
  tenant?: string;
  /** Deadline of one call (default 30 s); long-poll fetches get their wait added. */
  timeoutMs?: number;
  /**
   * TLS (PEM): `ca` to trust the server's certificate (default: the system
   * roots), `cert` and `key` for mutual TLS. Absent: plaintext.
   */
  tls?: { ca?: Uint8Array | string; cert?: Uint8Array | string; key?: Uint8Array | string };
  /** Channel credentials from @grpc/grpc-js, instead of `tls`. */
  credentials?: unknown;
  /**
   * Send the pushes made in one event-loop turn (concurrent `enqueue`
   * calls) as one ojsts.v1.WorkerExtensions/EnqueueMany call, each still
   * answered on its own (default true): one call instead of one each, on
   * the client and on the server. A lone push, a push with an abort signal,
   * or a server without EnqueueMany (UNIMPLEMENTED) uses Enqueue.
   */
  coalescePushes?: boolean;
}

/** Most pushes sent in one EnqueueMany (the server's limit is 1000). */
const MAX_ENQUEUE_MANY = 500;

interface QueuedPush {
  envelope: JobEnvelope;
  resolve(result: PushResult): void;
  reject(error: unknown): void;
}

/** The @grpc/grpc-js surface this module uses (typed here: the package is optional). */
interface GrpcModule {
  credentials: {
    createInsecure(): unknown;
    createSsl(ca?: Buffer | null, key?: Buffer | null, cert?: Buffer | null): unknown;
  };
  Metadata: new () => Metadata;
  Channel: new (address: string, credentials: unknown, options: Obj) => Channel;
}

interface Metadata {
  set(key: string, value: string): void;
  get(key: string): unknown[];
  clone(): Metadata;
}

interface CallStatus {
  code: number;
  details: string;
  metadata: Metadata;
}

/** grpc-js's Call (call-interface.d.ts): the call a Channel makes, below its Client layer. */
interface Call {
  start(
    metadata: Metadata,
    listener: {
      onReceiveMetadata(metadata: Metadata): void;
      onReceiveMessage(message: Buffer): void;
      onReceiveStatus(status: CallStatus): void;
    },
  ): void;
  sendMessageWithContext(context: object, message: Buffer): void;
  startRead(): void;
  halfClose(): void;
  cancelWithStatus(code: number, details: string): void;
}

interface Channel {
  createCall(
    method: string,
    deadline: number,
    host: null,
    parent: null,
    propagateFlags: null,
  ): Call;
  close(): void;
}

interface ServiceError extends Error {
  code: number;
  details: string;
  metadata?: { get(key: string): unknown[] };
}

const STATUS_HTTP: Record<number, number> = {
  3: 400, // INVALID_ARGUMENT
  4: 504, // DEADLINE_EXCEEDED
  5: 404, // NOT_FOUND
  6: 409, // ALREADY_EXISTS
  7: 403, // PERMISSION_DENIED
  8: 429, // RESOURCE_EXHAUSTED
  9: 409, // FAILED_PRECONDITION
  12: 501, // UNIMPLEMENTED
  13: 500, // INTERNAL
  14: 503, // UNAVAILABLE
  16: 401, // UNAUTHENTICATED
};

/** Status code names, as grpc-js words a failed call's message. */
const STATUS_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/**
 * proto/ at the package root: beside src/ in this repository, beside dist/
 * when installed. The gRPC transport is ESM only (`import('@ojs/sdk/grpc')`
 * from CommonJS): this line is the reason, and the CommonJS build of the
 * SDK leaves this entry out of its exports.
 */
// biome-ignore lint/suspicious/noTsIgnore: TS1343 is an error of the CommonJS emit only, which @ts-expect-error would turn into one of the ESM emit.
// @ts-ignore TS1343: the CommonJS emit of the SDK compiles this file too; its export is ESM only.
const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'proto');

const SERVICE = 'ojs.v1.OJSService';
const EXTENSIONS = 'ojsts.v1.WorkerExtensions';

/** A method of a @grpc/proto-loader package definition. */
interface MethodDefinition {
  requestSerialize(value: unknown): Buffer;
  requestDeserialize(bytes: Buffer): Obj;
  responseSerialize(value: unknown): Buffer;
  responseDeserialize(bytes: Buffer): Obj;
  [key: string]: unknown;
}
type Definition = Record<string, Record<string, MethodDefinition>>;

/** A reply's bytes -> what the transport's methods read (grpc-messages.ts). */
type ReplyDecoder = (bytes: Buffer) => object;

/**
 * The replies read with grpc-messages.ts, by method (names are unique over
 * both services). grpc-js hands these over as bytes and `#call` reads them
 * once the call has ended: a reply read in grpc-js's deserializer stayed
 * reachable from grpc-js's call objects long enough to survive minor GCs
 * (about 1.5 KB per enqueued job promoted, the young generation grown to
 * its maximum, scavenges of 10-30 ms), where the same objects read after
 * the call die young, as JSON.parse's do on HTTP (decision 0116).
 */
const REPLY_DECODERS = new Map<string, ReplyDecoder>([
  ['Enqueue', decodeJobReply],
  ['EnqueueBatch', (bytes) => decodeJobsReply(bytes)],
  ['GetJob', decodeJobReply],
  ['CancelJob', decodeJobReply],
  ['ActivateJob', decodeJobReply],
  ['RetryDeadLetter', decodeJobReply],
  ['Fetch', (bytes) => decodeJobsReply(bytes)],
  ['ListDeadLetter', (bytes) => decodeJobsReply(bytes, true)],
  ['EnqueueMany', decodeEnqueueManyResponse],
  ['AckBatch', decodeAckBatchResponse],
]);

const passBytes = (bytes: Buffer): Buffer => bytes;

/**
 * The methods a job crosses get the codecs of grpc-messages.ts (decision
 * 0107): their requests are written before the call (PUSH bodies, AckBatch
 * items), their replies are handed over as bytes for `REPLY_DECODERS`. The
 * other methods keep proto-loader's.
 */
function withWireCodecs(definition: Definition): void {
  const codec = (service: string, method: string, writtenBefore: boolean) => {
    const current = definition[service]![method]!;
    definition[service]![method] = {
      ...current,
      requestSerialize: writtenBefore ? passBytes : current.requestSerialize,
      responseDeserialize: passBytes as unknown as MethodDefinition['responseDeserialize'],
    };
  };
  // Requests written before the call (a body that cannot be written fails
  // there, alone): Enqueue and EnqueueBatch get bytes, EnqueueMany its
  // items' bytes end to end (`#call` concatenates them).
  codec(SERVICE, 'Enqueue', true);
  codec(SERVICE, 'EnqueueBatch', true);
  for (const method of ['GetJob', 'CancelJob', 'ActivateJob', 'RetryDeadLetter']) {
    codec(SERVICE, method, false);
  }
  codec(SERVICE, 'Fetch', false);
  codec(SERVICE, 'ListDeadLetter', false);
  codec(EXTENSIONS, 'EnqueueMany', true);
  // The worker's outcomes, one call per batch (decision 0112).
  codec(EXTENSIONS, 'AckBatch', true);
}

/** A method's path and (de)serializers: proto-loader's, or those of `withWireCodecs`. */
type Method = Pick<MethodDefinition, 'requestSerialize' | 'responseDeserialize'> & {
  path: string;
};

interface Protocol {
  grpc: GrpcModule;
  /** Both services' methods by name (the names are unique over the two). */
  methods: Map<string, Method>;
  /** EnqueueRequest bytes -> proto-loader's message object (cron and workflow requests). */
  enqueueMessage(bytes: Buffer): Obj;
}

let protocol: Promise<Protocol> | undefined;

/**
 * @grpc/grpc-js and the ojs.v1 protocol, loaded once per process on the
 * first call of any GrpcTransport (parsing the .proto files costs about
 * 0.1 s of CPU; every transport shares the result).
 */
function loadProtocol(): Promise<Protocol> {
  protocol ??= (async () => {
    let grpc: GrpcModule;
    let loader: { loadSync(files: string[], options: Obj): Obj };
    try {
      const grpcName = '@grpc/grpc-js';
      const loaderName = '@grpc/proto-loader';
      grpc = (await import(grpcName)) as GrpcModule;
      loader = (await import(loaderName)) as typeof loader;
    } catch (error) {
      protocol = undefined;
      throw new UnsupportedFeatureError(
        'The gRPC transport needs @grpc/grpc-js and @grpc/proto-loader: npm install @grpc/grpc-js @grpc/proto-loader',
        { code: 'unsupported', cause: error },
      );
    }
    const definition = loader.loadSync(PROTO_FILES, {
      ...LOADER_OPTIONS,
      includeDirs: [PROTO_DIR],
    }) as Definition;
    const enqueueMessage = definition[SERVICE]!.Enqueue!.requestDeserialize;
    withWireCodecs(definition);
    const methods = new Map<string, Method>();
    for (const service of [SERVICE, EXTENSIONS]) {
      for (const [name, method] of Object.entries(definition[service]!)) {
        methods.set(name, { ...method, path: method.path as string });
      }
    }
    return { grpc, methods, enqueueMessage };
  })();
  return protocol;
}

/** The largest message this transport's channel accepts (a fetched batch of big jobs). */
const MAX_RECEIVE_BYTES = 64 * 1024 * 1024;

export class GrpcTransport implements Transport {
  readonly kind = 'grpc';
  readonly #options: GrpcTransportOptions;
  #loading:
    | Promise<{
        channel: Channel;
        methods: Map<string, Method>;
        /** What every call carries (options.metadata, tenant, token), cloned per call. */
        metadata: Metadata;
        /** EnqueueRequest bytes -> proto-loader's message object (cron and workflow requests). */
        enqueueMessage(bytes: Buffer): Obj;
      }>
    | undefined;
  /** False once the server answered EnqueueMany with UNIMPLEMENTED (not ojs-ts, or older). */
  #enqueueMany: boolean;
  /** False once the server answered HeartbeatMany with UNIMPLEMENTED: one Heartbeat per id. */
  #heartbeatMany = true;
  /** Pushes of this turn, sent together after it. */
  readonly #pushes = new TurnBatch<QueuedPush>((queue) => this.#flushPushes(queue));

  constructor(options: GrpcTransportOptions) {
    if (typeof options?.address !== 'string' || options.address === '') {
      throw new TypeError('GrpcTransport needs an address such as "127.0.0.1:9090".');
    }
    this.#options = options;
    this.#enqueueMany = options.coalescePushes ?? true;
  }

  #load() {
    this.#loading ??= (async () => {
      const { grpc, methods, enqueueMessage } = await loadProtocol();
      const tls = this.#options.tls;
      const pem = (v: Uint8Array | string | undefined) =>
        v === undefined ? null : Buffer.from(v as Uint8Array);
      const credentials =
        this.#options.credentials ??
        (tls === undefined
          ? grpc.credentials.createInsecure()
          : grpc.credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert)));
      // One channel for both services: a Channel, not a generated Client
      // per service (see #send).
      const channel = new grpc.Channel(this.#options.address, credentials, {
        'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
      });
      const metadata = new grpc.Metadata();
      for (const [key, value] of Object.entries(this.#options.metadata ?? {})) {
        metadata.set(key, value);
      }
      if (this.#options.tenant !== undefined) metadata.set('x-ojs-tenant', this.#options.tenant);
      if (this.#options.authToken !== undefined) {
        metadata.set('authorization', `Bearer ${this.#options.authToken}`);
      }
      return { channel, methods, metadata, enqueueMessage };
    })();
    return this.#loading;
  }

  /**
   * One unary call. A reply of `REPLY_DECODERS` is read here, after the
   * call's promise settled with its bytes: grpc-js keeps the call's
   * listener (and through it that promise and what it was resolved with)
   * reachable after the call, long enough for a reply read inside it to
   * survive minor GCs and be promoted (about 1.5 KB per enqueued job, the
   * young generation grown to its maximum, scavenges of 10-30 ms); read
   * after, the jobs die young, as JSON.parse's do on HTTP (decision 0116).
   */
  async #call(
    method: string,
    request: object,
    options: RequestOptions & { metadata?: Record<string, string>; extraMs?: number } = {},
  ): Promise<Obj> {
    const response = await this.#send(method, request, options);
    const decode = REPLY_DECODERS.get(method);
    if (decode === undefined) return response;
    try {
      return decode(response as unknown as Buffer) as Obj;
    } catch (cause) {
      // What grpc-js says of a reply its deserializer cannot read.
      throw toSdkError(
        callError(13, `Response message parsing error: ${(cause as Error).message}`),
        method,
      );
    }
  }

  /**
   * The call made on the channel directly (`Channel.createCall`), as a
   * generated client's unary method makes it below its own layer, which
   * costs about a third of grpc-js's CPU per call and which this transport
   * has no use for: interceptors, the call's event emitter, argument
   * checks, a stack trace captured for every call (decision 0116). The
   * message is serialized here, the reply's bytes read by the method's
   * deserializer; a failure is the status grpc-js would report.
   */
  async #send(
    method: string,
    request: object,
    options: RequestOptions & { metadata?: Record<string, string>; extraMs?: number },
  ): Promise<Obj> {
    const { channel, methods, metadata: base } = await this.#load();
    const definition = methods.get(method)!;
    let message: Buffer;
    try {
      message = definition.requestSerialize(request);
    } catch (cause) {
      throw toSdkError(
        callError(13, `Request message serialization failure: ${(cause as Error).message}`),
        method,
      );
    }
    const signal = options.signal;
    if (signal?.aborted) throw signal.reason;
    // grpc-js's filters change the call's metadata: each call gets its own copy.
    const metadata = base.clone();
    for (const [key, value] of Object.entries(options.metadata ?? {})) metadata.set(key, value);
    const deadline = Date.now() + (this.#options.timeoutMs ?? 30_000) + (options.extraMs ?? 0);
    const call = channel.createCall(definition.path, deadline, null, null, null);
    return new Promise<Obj>((resolve, reject) => {
      let reply: Buffer | undefined;
      const onAbort = () => call.cancelWithStatus(1, 'Cancelled on client');
      call.start(metadata, {
        onReceiveMetadata() {},
        onReceiveMessage(bytes) {
          if (reply !== undefined) {
            call.cancelWithStatus(12, 'Too many responses received');
            return;
          }
          reply = bytes;
        },
        onReceiveStatus(status) {
          signal?.removeEventListener('abort', onAbort);
          if (status.code !== 0 && signal?.aborted) {
            reject(signal.reason);
            return;
          }
          const error =
            status.code !== 0
              ? callError(status.code, status.details, status.metadata)
              : reply === undefined
                ? callError(12, 'No message received', status.metadata)
                : undefined;
          if (error !== undefined) {
            reject(toSdkError(error, method));
            return;
          }
          try {
            resolve(definition.responseDeserialize(reply!));
          } catch (cause) {
            reject(
              toSdkError(
                callError(13, `Response message parsing error: ${(cause as Error).message}`),
                method,
              ),
            );
          }
        },
      });
      call.startRead();
      call.sendMessageWithContext({}, message);
      call.halfClose();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  // ------------------------------------------------------------ system

  async manifest(options?: RequestOptions): Promise<Manifest> {
    const m = await this.#call('Manifest', {}, options);
    const ours = (m.implementation as Obj | undefined)?.name === 'ojs-ts';
    return {
      ojs_version: m.ojs_version as string,
      implementation: m.implementation as Manifest['implementation'],
      conformance_level: m.conformance_level as number,
      protocols: m.protocols as string[],
      backend: m.backend as string,
      extensions: m.extensions as string[],
      capabilities: {
        schema_validation: m.schema_validation === true,
        // Our server long-polls Fetch on x-ojs-wait-ms; others answer at once.
        long_poll_fetch: ours,
      },
      // Our server serves ojsts.v1.WorkerExtensions/AckBatch (decision 0047).
      ...(ours && (m.extensions as string[] | undefined)?.includes('ack-batch')
        ? { endpoints: { ack_batch: 'ojsts.v1.WorkerExtensions/AckBatch' } }
        : {}),
    };
  }

  async health(options?: RequestOptions): Promise<Obj> {
    const h = await this.#call('Health', {}, options);
    return {
      status:
        h.status === 'HEALTH_STATUS_OK'
          ? 'ok'
          : h.status === 'HEALTH_STATUS_DEGRADED'
            ? 'degraded'
            : 'error',
      timestamp: timestampText(h.timestamp as PbTimestamp),
      details: fromStruct(h.details as PbStruct) ?? {},
    };
  }

  // ------------------------------------------------------------ jobs

  push(envelope: JobEnvelope, options: RequestOptions = {}): Promise<PushResult> {
    if (!this.#enqueueMany || options.signal !== undefined) return this.#pushOne(envelope, options);
    return new Promise<PushResult>((resolve, reject) =>
      this.#pushes.add({ envelope, resolve, reject }),
    );
  }

  #flushPushes(queue: QueuedPush[]): void {
    if (queue.length === 1 || !this.#enqueueMany) {
      for (const item of queue) this.#pushOne(item.envelope).then(item.resolve, item.reject);
      return;
    }
    for (let start = 0; start < queue.length; start += MAX_ENQUEUE_MANY) {
      void this.#pushMany(queue.slice(start, start + MAX_ENQUEUE_MANY));
    }
  }

  /** Many pushes in one EnqueueMany call, each resolved or rejected as its own Enqueue would be. */
  async #pushMany(queued: QueuedPush[]): Promise<void> {
    // A push whose envelope cannot be turned into a message fails alone, as it would sent alone.
    const items: QueuedPush[] = [];
    const messages: Buffer[] = [];
    for (const item of queued) {
      try {
        const body = toPushBody(item.envelope);
        messages.push(encodeEnqueueManyItem(typeof body.id === 'string' ? body.id : '', body));
        items.push(item);
      } catch (error) {
        item.reject(error);
      }
    }
    if (items.length === 0) return;
    let results: EnqueueManyResult[];
    try {
      const response = await this.#call('EnqueueMany', Buffer.concat(messages));
      results = (response as { results: EnqueueManyResult[] }).results;
    } catch (error) {
      // UNIMPLEMENTED (no ErrorInfo): a server without the extension stored
      // nothing; these pushes and later ones go one call each.
      if (unimplemented(error)) {
        this.#enqueueMany = false;
        for (const item of items) this.#pushOne(item.envelope).then(item.resolve, item.reject);
        return;
      }
      for (const item of items) item.reject(error);
      return;
    }
    for (const [index, item] of items.entries()) {
      const result = results[index];
      if (results.length !== items.length || result === undefined) {
        item.reject(
          new OjsError('The server sent no result for this push.', {
            code: 'invalid_response',
            operation: 'enqueue',
            jobId: item.envelope.id,
          }),
        );
      } else if (result.status === 'error') {
        item.reject(
          errorFromInfo(
            result.code,
            result.error_message,
            { reason: result.error_code, metadata: result.error_metadata },
            'Enqueue',
          ),
        );
      } else if (result.job !== undefined) {
        item.resolve({
          job: result.job,
          status: result.status === 'existing' ? 'existing' : 'created',
        });
      } else {
        item.resolve({ job: null, status: 'dropped' });
      }
    }
  }

  async #pushOne(envelope: JobEnvelope, options?: RequestOptions): Promise<PushResult> {
    const body = toPushBody(envelope);
    const metadata: Record<string, string> = {};
    // The protocol has no job id: our server takes it from the idempotency key.
    if (typeof body.id === 'string') metadata['x-ojs-idempotency-key'] = body.id;
    const request = encodeEnqueueRequest(body);
    const { job } = (await this.#call('Enqueue', request, { ...options, metadata })) as {
      job?: Job;
    };
    if (job === undefined) return { job: null, status: 'dropped' };
    return { job, status: 'created' };
  }

  async pushBatch(envelopes: JobEnvelope[], options?: RequestOptions): Promise<Job[]> {
    // Written before the call: a body that cannot be written fails here, not in grpc-js.
    const request = encodeEnqueueBatchRequest({ bodies: envelopes.map((e) => toPushBody(e)) });
    const response = await this.#call('EnqueueBatch', request, options);
    return (response as { jobs: Job[] }).jobs;
  }

  /** A call whose reply is `Job job = 1`. */
  async #job(method: string, id: string, options?: RequestOptions): Promise<Job> {
    const { job } = (await this.#call(method, { job_id: id }, options)) as { job?: Job };
    if (job === undefined) {
      throw new OjsError(`${method}: the server sent no job.`, {
        code: 'invalid_response',
        operation: method,
        jobId: id,
      });
    }
    return job;
  }

  async getJob(id: string, options?: RequestOptions): Promise<Job> {
    return this.#job('GetJob', id, options);
  }

  async cancelJob(id: string, options?: RequestOptions): Promise<Job> {
    return this.#job('CancelJob', id, options);
  }

  async activateJob(id: string, options?: RequestOptions): Promise<Job> {
    return this.#job('ActivateJob', id, options);
  }

  // ------------------------------------------------------------ worker protocol

  async fetchJobs(request: FetchRequest, options?: RequestOptions): Promise<Job[]> {
    // Our server sizes the answer to what this channel receives; it assumes
    // grpc-js's 4 MiB otherwise and hands the rest back.
    const metadata: Record<string, string> = {
      'x-ojs-max-receive-message-length': String(MAX_RECEIVE_BYTES),
    };
    if (request.wait_ms !== undefined) metadata['x-ojs-wait-ms'] = String(request.wait_ms);
    if (request.visibility_timeout_ms !== undefined) {
      metadata['x-ojs-visibility-timeout-ms'] = String(request.visibility_timeout_ms);
    }
    if (request.pool !== undefined) metadata['x-ojs-pool'] = request.pool;
    const response = await this.#call(
      'Fetch',
      { queues: request.queues, count: request.count, worker_id: request.worker_id ?? '' },
      { ...options, metadata, extraMs: request.wait_ms ?? 0 },
    );
    return (response as { jobs: Job[] }).jobs;
  }

  async ack(request: AckRequest, options?: RequestOptions): Promise<Obj> {
    const response = await this.#call(
      'Ack',
      { job_id: request.job_id, result: resultToStruct(request.result) },
      { ...options, metadata: fencing(request) },
    );
    return {
      acknowledged: response.acknowledged === true,
      job_id: request.job_id,
      state: 'completed',
    };
  }

  async nack(request: NackRequest, options?: RequestOptions): Promise<Obj> {
    const metadata = fencing(request);
    if (request.requeue === true) metadata['x-ojs-requeue'] = 'true';
    const error = jobErrorFields(request.error);
    const response = await this.#call(
      'Nack',
      { job_id: request.job_id, error: { ...error, details: toStruct(error.details) } },
      { ...options, metadata },
    );
    const out: Obj = { job_id: request.job_id, state: stateFromProto(response.state) };
    const next = timestampText(response.next_attempt_at as PbTimestamp);
    if (next !== undefined) out.next_attempt_at = next;
    return out;
  }

  /**
   * Many ACKs and NACKs in one call: ojsts.v1.WorkerExtensions/AckBatch,
   * answered per item like POST /ojs/v1/workers/ack/batch.
   */
  async ackBatch(request: AckBatchRequest, options?: RequestOptions): Promise<AckBatchResponse> {
    // Written before the call (grpc-messages.ts): the request proto-loader would write.
    const bytes = encodeAckBatchRequest({
      acks: request.acks.map((ack) => ({
        job_id: ack.job_id,
        result: resultObject(ack.result),
        worker_id: ack.worker_id ?? '',
        attempt: ack.attempt ?? 0,
      })),
      nacks: request.nacks.map((nack) => ({
        job_id: nack.job_id,
        error: jobErrorFields(nack.error),
        worker_id: nack.worker_id ?? '',
        attempt: nack.attempt ?? 0,
        requeue: nack.requeue === true,
      })),
    });
    const response = await this.#call('AckBatch', bytes, options);
    const results = (response as { results: AckBatchResultMessage[] }).results.map((r) =>
      r.status === 'ok'
        ? { job_id: r.job_id, status: 'ok', state: r.state, attempt: r.attempt }
        : {
            job_id: r.job_id,
            status: r.status,
            error: {
              code: r.error_code,
              message: r.error_message,
              retryable: r.retryable === true,
            },
          },
    );
    return { results: parseAckBatchResults({ results }, request, false) };
  }

  /**
   * One ojsts.v1.WorkerExtensions/HeartbeatMany call, the HTTP binding's
   * BEAT (decision 0107). A server without it (UNIMPLEMENTED) gets what
   * the protocol says, one id at a time (grpc-proto G-6): one worker-level
   * beat, then one per active job. A job whose beat is refused because it
   * was cancelled is reported cancelled; one refused otherwise lost its lease.
   */
  async heartbeat(request: HeartbeatRequest, options?: RequestOptions): Promise<HeartbeatResponse> {
    const state = `WORKER_STATE_${request.state.toUpperCase()}`;
    if (this.#heartbeatMany) {
      try {
        const beat = await this.#call(
          'HeartbeatMany',
          {
            worker_id: request.worker_id,
            job_ids: request.active_job_ids,
            extend_by: toDuration(request.visibility_timeout_ms),
            current_state: state,
          },
          options,
        );
        return {
          directive: directiveOf(beat.directed_state),
          jobsExtended: (beat.jobs_extended as string[] | undefined) ?? [],
          jobsCancelled: (beat.jobs_cancelled as string[] | undefined) ?? [],
          raw: beat,
        };
      } catch (error) {
        if (!unimplemented(error)) throw error;
        this.#heartbeatMany = false;
      }
    }
    const worker = await this.#call(
      'Heartbeat',
      { id: request.worker_id, worker_id: request.worker_id, current_state: state },
      options,
    );
    const extendBy = toDuration(request.visibility_timeout_ms);
    const jobsExtended: string[] = [];
    const jobsCancelled: string[] = [];
    await Promise.all(
      request.active_job_ids.map(async (id) => {
        try {
          await this.#call(
            'Heartbeat',
            { id, worker_id: request.worker_id, extend_by: extendBy, current_state: state },
            options,
          );
          jobsExtended.push(id);
        } catch (error) {
          if (error instanceof OjsError && error.details.current_state === 'cancelled') {
            jobsCancelled.push(id);
          } else if (error instanceof OjsError && error.status === 409) {
            // Not ours any more: left out of jobsExtended (the worker drops it).
          } else {
            // A transport failure says nothing about the lease: keep the job.
            jobsExtended.push(id);
          }
        }
      }),
    );
    return {
      directive: directiveOf(worker.directed_state),
      jobsExtended,
      jobsCancelled,
      raw: worker,
    };
  }

  // ------------------------------------------------------------ queues, dead letter

  async listQueues(query: ListOptions, options?: RequestOptions): Promise<Page<QueueInfo>> {
    const offset = query.offset ?? (query.cursor ? Number(query.cursor) : 0);
    const response = await this.#call(
      'ListQueues',
      { limit: query.limit ?? 0, cursor: offset > 0 ? String(offset) : '' },
      options,
    );
    const items = ((response.queues as Obj[]) ?? []).map((q) => ({
      name: q.name as string,
      paused: q.paused === true,
      status: q.paused === true ? ('paused' as const) : ('active' as const),
      available_count: Number(q.available_count ?? 0),
    }));
    const next = typeof response.next_cursor === 'string' && response.next_cursor !== '';
    return pageOf(items, query.limit ?? items.length, offset, next);
  }

  async queueStats(name: string, options?: RequestOptions): Promise<QueueStats> {
    const response = await this.#call('QueueStats', { queue: name }, options);
    const stats = (response.stats ?? {}) as Obj;
    const n = (key: string) => Number(stats[key] ?? 0);
    return {
      name,
      paused: stats.paused === true,
      available: n('available'),
      active: n('active'),
      scheduled: n('scheduled'),
      retryable: n('retryable'),
      discarded: n('dead'),
      raw: response,
    };
  }

  async setQueuePaused(
    name: string,
    paused: boolean,
    options?: RequestOptions,
  ): Promise<QueueInfo> {
    await this.#call(paused ? 'PauseQueue' : 'ResumeQueue', { queue: name }, options);
    return { name, paused, status: paused ? 'paused' : 'active' };
  }

  async listDeadLetter(
    query: ListOptions & { queue?: string },
    options?: RequestOptions,
  ): Promise<Page<Job>> {
    const offset = query.offset ?? (query.cursor ? Number(query.cursor) : 0);
    const response = await this.#call(
      'ListDeadLetter',
      {
        queue: query.queue ?? '',
        limit: query.limit ?? 0,
        cursor: offset > 0 ? String(offset) : '',
      },
      options,
    );
    const page = response as { jobs: Job[]; total_count?: number; next_cursor?: string };
    const next = page.next_cursor !== undefined && page.next_cursor !== '';
    return pageOf(page.jobs, query.limit ?? 50, offset, next, page.total_count ?? 0);
  }

  async retryDeadLetter(id: string, options?: RequestOptions): Promise<Job> {
    return this.#job('RetryDeadLetter', id, options);
  }

  async deleteDeadLetter(id: string, options?: RequestOptions): Promise<void> {
    await this.#call('DeleteDeadLetter', { job_id: id }, options);
  }

  // ------------------------------------------------------------ cron

  async registerCron(body: Obj, options?: RequestOptions): Promise<CronJob> {
    const template = isObject(body.job_template) ? body.job_template : body;
    const request = await this.#enqueueMessage({
      type: template.type,
      args: template.args,
      meta: template.meta,
      options: template.options,
    });
    const response = await this.#call(
      'RegisterCron',
      {
        name: body.name,
        cron: body.cron ?? body.expression,
        timezone: body.timezone ?? '',
        ...request,
      },
      options,
    );
    return (
      (await this.listCron(options)).find((c) => c.name === response.name) ?? {
        name: String(response.name),
        expression: String(body.cron ?? body.expression),
        next_run_at: timestampText(response.next_run_at as PbTimestamp) ?? null,
      }
    );
  }

  async listCron(options?: RequestOptions): Promise<CronJob[]> {
    const response = await this.#call('ListCron', {}, options);
    return ((response.entries as Obj[]) ?? []).map(cronFromProto);
  }

  async getCron(name: string, options?: RequestOptions): Promise<CronJob> {
    const found = (await this.listCron(options)).find((c) => c.name === name);
    if (found === undefined) {
      throw parseErrorResponse(404, {
        error: { code: 'not_found', message: `Cron '${name}' not found.` },
      });
    }
    return found;
  }

  async unregisterCron(name: string, options?: RequestOptions): Promise<void> {
    await this.#call('UnregisterCron', { name }, options);
  }

  // ------------------------------------------------------------ workflows

  /**
   * The protocol knows the graph form only (grpc-proto G-8): a graph is
   * sent as it is, a chain becomes steps each depending on the one before,
   * a group steps without dependencies; a batch (callbacks) cannot be said.
   */
  async createWorkflow(body: Obj, options?: RequestOptions): Promise<Workflow> {
    const steps = Array.isArray(body.steps)
      ? (body.steps as Obj[])
      : Array.isArray(body.jobs)
        ? (body.jobs as Obj[])
        : [];
    if (body.type === 'batch' || body.callbacks !== undefined) {
      throw new UnsupportedFeatureError(
        'Batch workflows (callbacks) are not in the gRPC protocol; use HTTP.',
        {
          code: 'unsupported',
        },
      );
    }
    const chain = body.type === 'chain';
    const messages = await Promise.all(steps.map((step) => this.#enqueueMessage(step)));
    const request = {
      name: body.name ?? body.type ?? 'workflow',
      steps: steps.map((step, i) => ({
        id: typeof step.id === 'string' ? step.id : String(i),
        ...messages[i],
        depends_on: Array.isArray(step.depends_on)
          ? step.depends_on
          : chain && i > 0
            ? [String(i - 1)]
            : [],
      })),
    };
    return workflowFromProto(
      (await this.#call('CreateWorkflow', request, options)).workflow as Obj,
    );
  }

  async getWorkflow(id: string, options?: RequestOptions): Promise<Workflow> {
    return workflowFromProto(
      (await this.#call('GetWorkflow', { workflow_id: id }, options)).workflow as Obj,
    );
  }

  async cancelWorkflow(id: string, options?: RequestOptions): Promise<Workflow> {
    return workflowFromProto(
      (await this.#call('CancelWorkflow', { workflow_id: id }, options)).workflow as Obj,
    );
  }

  /** The protocol streams events (StreamEvents) but has no page of past events. */
  async listEvents(): Promise<EventPage> {
    throw new UnsupportedFeatureError(
      'Listing past events is not in the gRPC protocol; use HTTP (GET /ojs/v1/events).',
      { code: 'unsupported' },
    );
  }

  /** A PUSH body as the EnqueueRequest fields of a cron entry or workflow step (one mapping: grpc-messages.ts). */
  async #enqueueMessage(body: Obj): Promise<Obj> {
    const { enqueueMessage } = await this.#load();
    return enqueueMessage(encodeEnqueueRequest(body));
  }

  async close(): Promise<void> {
    if (this.#loading === undefined) return;
    const loaded = await this.#loading.catch(() => undefined);
    loaded?.channel.close();
  }
}

/** A call the server does not serve (UNIMPLEMENTED, no ErrorInfo): not ojs-ts, or older. */
function unimplemented(error: unknown): boolean {
  return error instanceof OjsError && (error.cause as ServiceError | undefined)?.code === 12;
}

/** A WorkerState a beat was answered with -> the worker's directive. */
function directiveOf(directed: unknown): HeartbeatResponse['directive'] {
  const text = String(directed ?? '');
  return text.endsWith('TERMINATE') ? 'terminate' : text.endsWith('QUIET') ? 'quiet' : 'running';
}

/** A NACK's error as ojs.v1.JobError's fields (`code` is the error class, G-4), details as JSON. */
function jobErrorFields(error: NackRequest['error']): JobErrorFields {
  const details: Obj = { ...(error.details ?? {}) };
  // proto3 has no "false" for JobError.retryable: say it in details (decision 0043).
  if (error.retryable === false) details.retryable = false;
  return {
    code: error.type ?? error.code,
    message: error.message,
    retryable: error.retryable === true,
    backtrace: error.backtrace?.join('\n') ?? '',
    details,
  };
}

function fencing(request: { worker_id?: string; attempt?: number }): Record<string, string> {
  const metadata: Record<string, string> = {};
  if (request.worker_id !== undefined) metadata['x-ojs-worker-id'] = request.worker_id;
  if (request.attempt !== undefined) metadata['x-ojs-attempt'] = String(request.attempt);
  return metadata;
}

function pageOf<T>(
  items: T[],
  limit: number,
  offset: number,
  hasMore: boolean,
  total?: number,
): Page<T> {
  return {
    items,
    pagination: {
      total: total ?? offset + items.length + (hasMore ? 1 : 0),
      limit,
      offset,
      has_more: hasMore,
    },
  } as Page<T>;
}

function cronFromProto(entry: Obj): CronJob {
  const options = isObject(entry.options) ? entry.options : {};
  const templateOptions: Obj = {};
  if (typeof options.queue === 'string') templateOptions.queue = options.queue;
  if (typeof options.priority === 'number') templateOptions.priority = options.priority;
  return {
    name: String(entry.name),
    expression: String(entry.cron),
    cron: entry.cron,
    timezone: typeof entry.timezone === 'string' ? entry.timezone : 'UTC',
    job_template: {
      type: String(entry.type),
      args: ((entry.args as PbValue[]) ?? []).map(fromValue),
      options: templateOptions,
    },
    next_run_at: timestampText(entry.next_run_at as PbTimestamp) ?? null,
    last_run_at: timestampText(entry.last_run_at as PbTimestamp) ?? null,
  };
}

function workflowFromProto(workflow: Obj): Workflow {
  const state = String(workflow.state ?? '')
    .replace('WORKFLOW_STATE_', '')
    .toLowerCase();
  return {
    id: String(workflow.id),
    name: typeof workflow.name === 'string' ? workflow.name : undefined,
    state,
    created_at: timestampText(workflow.created_at as PbTimestamp),
    completed_at: timestampText(workflow.completed_at as PbTimestamp),
    steps: ((workflow.steps as Obj[]) ?? []).map((step) => ({
      id: step.id,
      type: step.type,
      state: String(step.state ?? '')
        .replace('WORKFLOW_STEP_STATE_', '')
        .toLowerCase(),
      job_id: step.job_id || null,
      depends_on: step.depends_on ?? [],
    })),
  } as Workflow;
}

/**
 * google.rpc.Status{details: Any[]} -> its ErrorInfo {reason, metadata},
 * read directly: proto-loader has no decoder for messages outside a service,
 * and these few fields need none. A malformed one counts as none.
 */
function readErrorInfo(
  status: Uint8Array,
): { reason: string; metadata: Record<string, string> } | null {
  try {
    const r = new ProtoReader(status);
    while (r.pos < r.buf.length) {
      const key = r.varint();
      // Status.details (3): google.protobuf.Any {type_url = 1, value = 2}.
      if (key !== 26) {
        r.skip(key & 7);
        continue;
      }
      const end = r.limit();
      let typeUrl = '';
      let payload: [number, number] | undefined;
      while (r.pos < end) {
        const k = r.varint();
        if (k === 10) typeUrl = r.string();
        else if (k === 18) {
          const valueEnd = r.limit();
          payload = [r.pos, valueEnd];
          r.pos = valueEnd;
        } else r.skip(k & 7);
      }
      if (!typeUrl.endsWith('google.rpc.ErrorInfo') || payload === undefined) continue;
      // ErrorInfo {reason = 1, domain = 2, map<string, string> metadata = 3}.
      const info = new ProtoReader(r.buf.subarray(payload[0], payload[1]));
      let reason = '';
      const metadata: Record<string, string> = {};
      while (info.pos < info.buf.length) {
        const k = info.varint();
        if (k === 10) reason = info.string();
        else if (k === 26) {
          const entryEnd = info.limit();
          let name = '';
          let value = '';
          while (info.pos < entryEnd) {
            const e = info.varint();
            if (e === 10) name = info.string();
            else if (e === 18) value = info.string();
            else info.skip(e & 7);
          }
          metadata[name] = value;
        } else info.skip(k & 7);
      }
      return { reason, metadata };
    }
  } catch {
    // Truncated or not protobuf: no ErrorInfo.
  }
  return null;
}

/**
 * An OJS error said as a gRPC status code, a message and its ErrorInfo (a
 * failed call's trailer, or a refused EnqueueMany item) -> the SDK's typed error.
 */
function errorFromInfo(
  code: number,
  message: string,
  info: { reason: string; metadata: Record<string, string> },
  operation: string,
): OjsError {
  const { retryable, request_id, ...details } = info.metadata;
  return parseErrorResponse(
    STATUS_HTTP[code] ?? 500,
    {
      error: {
        code: info.reason,
        message,
        retryable: retryable === 'true',
        details: { ...details },
        request_id,
      },
    },
    { operation },
  );
}

/** A call's status as the error grpc-js reports it (`callErrorFromStatus`). */
function callError(code: number, details: string, metadata?: Metadata): ServiceError {
  return Object.assign(new Error(`${code} ${STATUS_NAMES[code] ?? ''}: ${details}`), {
    code,
    details,
    metadata,
  });
}

/** A gRPC failure -> the SDK's typed error, by the ErrorInfo reason (the OJS code). */
function toSdkError(error: ServiceError, operation: string): OjsError {
  const raw = error.metadata?.get('grpc-status-details-bin')[0];
  const info = raw instanceof Uint8Array ? readErrorInfo(raw) : null;
  const status = STATUS_HTTP[error.code] ?? 500;
  if (info !== null) return errorFromInfo(error.code, error.details, info, operation);
  // No ErrorInfo: the call failed in transport (unreachable, deadline, cancelled).
  const options = {
    code: 'backend_unavailable',
    status: 0,
    operation,
    cause: error,
    retryable: true,
  };
  if (error.code === 14) return new ConnectionError(`${operation}: ${error.details}`, options);
  if (error.code === 4) {
    return new TimeoutError(`${operation}: deadline exceeded`, {
      ...options,
      code: 'request_timeout',
    });
  }
  return new BackendError(`${operation} failed: ${error.details}`, {
    ...options,
    code: 'internal_error',
    status,
  });
}
