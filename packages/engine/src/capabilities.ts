/**
 * What the engine can do, reported once (`engine.capabilities()`), and the
 * manifest every front door derives from it (HB §21, CONF §4): the HTTP
 * binding's GET /ojs/manifest, the gRPC Manifest RPC (the same manifest,
 * as the protocol can carry it) and the SDK's in-process transport. A
 * binding adds only what is its own: protocols, endpoints, its body limit,
 * and the capabilities it does not serve (decision 0088).
 *
 * Takes the engine's settings structurally (no import of engine.ts), so
 * the engine can expose these functions without an import cycle.
 */
import { invalidRequest, LIMITS, MAX_META_BYTES, MAX_WORKFLOW_STEPS, OjsError } from '@ojs/core';

/** Highest conformance level whose suites pass on every store in CI. */
export const DECLARED_CONFORMANCE_LEVEL = 4;

/** Largest number of jobs in one push-many request (POST /ojs/v1/jobs/many). */
export const MAX_PUSH_MANY = 1000;

/**
 * The items of one push-many request (HTTP `jobs`, gRPC EnqueueMany
 * `items`): 1 to MAX_PUSH_MANY of them, else the request is refused whole
 * before anything is stored, with the same errors on both bindings.
 */
export function pushManyItems(value: unknown, field: string): unknown[] {
  if (!Array.isArray(value) || value.length === 0) {
    // The same mistake as in /jobs/batch, the same code (docs/error-codes.md).
    throw new OjsError('invalid_payload', `${field} must be a non-empty array of job envelopes.`, {
      field,
    });
  }
  if (value.length > MAX_PUSH_MANY) {
    throw invalidRequest(`${field} holds at most ${MAX_PUSH_MANY} items (got ${value.length}).`, {
      field,
      max: MAX_PUSH_MANY,
      actual: value.length,
    });
  }
  return value;
}

export interface ExtensionEntry {
  name: string;
  uri: string;
  version: string;
}

/** An extension, and the capability flag a binding turns off to leave it out. */
interface DeclaredExtension extends ExtensionEntry {
  capability?: string;
}

export interface EngineCapabilities {
  backend: string;
  conformanceLevel: number;
  /** Capability flags in manifest order (`capabilities` of the manifest). */
  capabilities: Record<string, boolean>;
  extensions: { official: DeclaredExtension[]; experimental: DeclaredExtension[] };
  /** Every bound the engine applies (`limits` of the manifest, without the binding's body limit). */
  limits: Record<string, number>;
  uniqueJobStrength: 'strong';
  /** ACK/NACK/heartbeat fencing on worker_id and attempt: checked when sent, or required. */
  workerFencing: 'required' | 'when_sent';
}

/** The engine settings the description reads. */
export interface CapabilitySource {
  store: { backend: string; outbox?: unknown };
  maxBatchSize: number;
  maxFetchCount: number;
  maxFetchWaitMs: number;
  maxAckBatch: number;
  requireFencing: boolean;
}

const official = (name: string, capability?: string): DeclaredExtension => ({
  name,
  uri: `urn:ojs:ext:${name}`,
  version: '1.0.0',
  ...(capability === undefined ? {} : { capability }),
});

export function engineCapabilities(source: CapabilitySource): EngineCapabilities {
  const level = DECLARED_CONFORMANCE_LEVEL;
  return {
    backend: source.store.backend,
    conformanceLevel: level,
    capabilities: {
      dead_letter: true,
      delayed_jobs: level >= 2,
      job_ttl: level >= 2,
      cron_jobs: level >= 2,
      workflows: level >= 3,
      batch_enqueue: level >= 4,
      priority_queues: level >= 4,
      unique_jobs: level >= 4,
      pause_resume: level >= 4,
      rate_limiting: level >= 4,
      schema_validation: true,
      job_versioning: true,
      long_poll_fetch: true,
      ack_batch: true,
      push_many: true,
      admin_api: true,
      job_search: true,
      bulk_operations: true,
      progress: true,
      queue_config: true,
      backpressure: true,
      retention: true,
      graceful_shutdown: true,
      // Pools, strategies, isolation, starvation guard (scheduling.ts, decision 0103).
      fair_scheduling: true,
      metrics: true,
      // Following the event log live (event-tail.ts): SSE over HTTP, streamEvents in-process.
      event_stream: true,
      // RT §3 subscriptions: served by the HTTP binding at /ojs/v1/ws.
      websocket: true,
      // ext-webhooks: subscriptions and the delivery log, served by the HTTP binding (no ojs.v1 RPCs).
      webhooks: true,
      // Decision 0109: jobs written in the application's own transaction (PostgreSQL's outbox).
      transactional_enqueue: source.store.outbox !== undefined,
    },
    extensions: {
      official: [
        official('schema-registry'),
        official('admin-api', 'admin_api'),
        official('dead-letter'),
        official('rate-limiting'),
        official('progress'),
        official('queue-config'),
        official('graceful-shutdown'),
        official('middleware'),
        official('observability'),
        {
          name: 'webhooks',
          uri: 'urn:ojs:ext:webhooks',
          version: '1.0.0-rc.1',
          capability: 'webhooks',
        },
        // ext-multi-tenancy at the header's URI and version (extensions digest §6, C1).
        { name: 'multi-tenancy', uri: 'urn:ojs:ext:multi-tenancy', version: '1.0.0-rc.1' },
        // Codecs run in the SDK; the server keeps codec data byte-exact (decision 0104).
        { ...official('encryption'), version: '1.0.0-rc.1' },
        // Experimental maturity in the spec, Official tier; the digest's §6 version.
        {
          name: 'fair-scheduling',
          uri: 'urn:ojs:ext:fair-scheduling',
          version: '1.0.0-rc.1',
          capability: 'fair_scheduling',
        },
      ],
      experimental: [
        {
          name: 'job-versioning',
          uri: 'urn:ojs:ext:experimental:job-versioning',
          version: '0.1.0',
          capability: 'job_versioning',
        },
        official('backpressure'),
        // RT 0.1.0 (Experimental): Server-Sent Events and WebSocket.
        {
          name: 'realtime',
          uri: 'urn:ojs:ext:experimental:realtime',
          version: '0.1.0',
          capability: 'websocket',
        },
        // Ours: one request acknowledges many jobs (endpoints.ack_batch).
        {
          name: 'ack-batch',
          uri: 'urn:ojs-ts:ext:ack-batch',
          version: '0.1.0',
          capability: 'ack_batch',
        },
        // Ours: an outbox table written inside the application's transaction (decision 0109).
        ...(source.store.outbox === undefined
          ? []
          : [
              {
                name: 'transactional-enqueue',
                uri: 'urn:ojs-ts:ext:transactional-enqueue',
                version: '0.1.0',
                capability: 'transactional_enqueue',
              },
            ]),
        // Ours: one request carries many independent PUSHes (endpoints.push_many).
        {
          name: 'push-many',
          uri: 'urn:ojs-ts:ext:push-many',
          version: '0.1.0',
          capability: 'push_many',
        },
      ],
    },
    limits: {
      max_meta_bytes: MAX_META_BYTES,
      max_batch_size: source.maxBatchSize,
      max_fetch_count: source.maxFetchCount,
      max_fetch_wait_ms: source.maxFetchWaitMs,
      max_ack_batch: source.maxAckBatch,
      max_push_many: MAX_PUSH_MANY,
      max_workflow_steps: MAX_WORKFLOW_STEPS,
      // Every bound of core limits.ts (strings, arrays, depth, numbers, schemas).
      ...LIMITS,
    },
    uniqueJobStrength: 'strong',
    workerFencing: source.requireFencing ? 'required' : 'when_sent',
  };
}

/**
 * Capabilities served over HTTP only: the operations API's paths, push-many,
 * GET /metrics and the WebSocket. A manifest without the `http` protocol
 * declares them false.
 */
export const HTTP_ONLY_CAPABILITIES: readonly string[] = [
  'admin_api',
  'webhooks',
  'job_search',
  'bulk_operations',
  'push_many',
  'metrics',
  'websocket',
];

/** What a front door adds to the engine's capabilities. */
export interface ManifestBinding {
  protocols: string[];
  implementationVersion?: string;
  /** `implementation.mode` (the in-process transport says `in-process`). */
  mode?: string;
  /** The request size limit (`limits.max_body_bytes`), when the binding has one. */
  maxBodyBytes?: number;
  /** Capabilities this binding does not serve; extensions tied to them are left out too. */
  notServed?: readonly string[];
  endpoints?: Record<string, unknown>;
}

/** The extensions the Full tier adds to Levels 0-4 (extensions digest §8). */
const FULL_TIER_EXTENSIONS = ['webhooks', 'multi-tenancy', 'encryption', 'fair-scheduling'];

/**
 * The conformance tier (conformance §3.3): `full` needs both protocol
 * bindings served by this server and every Full-tier extension declared;
 * a server started without gRPC (or a front door that leaves an extension
 * out) declares `runtime`.
 */
function conformanceTier(protocols: string[], official: ExtensionEntry[]): 'full' | 'runtime' {
  const declared = new Set(official.map((e) => e.name));
  return protocols.includes('http') &&
    protocols.includes('grpc') &&
    FULL_TIER_EXTENSIONS.every((name) => declared.has(name))
    ? 'full'
    : 'runtime';
}

/** The manifest of one front door over this engine. */
export function buildManifest(
  engine: EngineCapabilities,
  binding: ManifestBinding,
): Record<string, unknown> {
  const off = new Set(binding.notServed ?? []);
  if (!binding.protocols.includes('http')) for (const name of HTTP_ONLY_CAPABILITIES) off.add(name);
  const capabilities: Record<string, boolean> = {};
  for (const [name, value] of Object.entries(engine.capabilities)) {
    capabilities[name] = value && !off.has(name);
  }
  const served = (list: DeclaredExtension[]): ExtensionEntry[] =>
    list
      .filter((e) => e.capability === undefined || capabilities[e.capability] === true)
      .map(({ name, uri, version }) => ({ name, uri, version }));
  const official = served(engine.extensions.official);
  return {
    specversion: '1.0',
    ojs_version: '1.0',
    implementation: {
      name: 'ojs-ts',
      version: binding.implementationVersion ?? '0.1.0',
      language: 'typescript',
      backend: engine.backend,
      ...(binding.mode === undefined ? {} : { mode: binding.mode }),
    },
    conformance_level: engine.conformanceLevel,
    conformance_tier: conformanceTier(binding.protocols, official),
    protocols: binding.protocols,
    backend: engine.backend,
    capabilities,
    extensions: {
      official,
      experimental: served(engine.extensions.experimental),
    },
    ...(binding.endpoints === undefined ? {} : { endpoints: binding.endpoints }),
    limits: {
      ...(binding.maxBodyBytes === undefined ? {} : { max_body_bytes: binding.maxBodyBytes }),
      ...engine.limits,
    },
    unique_job_strength: engine.uniqueJobStrength,
    worker_fencing: engine.workerFencing,
  };
}
