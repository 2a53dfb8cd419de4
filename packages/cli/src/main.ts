#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=16 --heap-growing-percent=100
/**
 * The `ojs` command: serve, conformance, and the tools that grow around them.
 *
 * The first line sets glibc's mmap threshold as `ojs serve` wants it
 * (decision 0077) for the process Node starts in, so the installed command
 * does not re-execute itself to set it (decision 0098).
 */
import { readFileSync } from 'node:fs';
import nodeModule from 'node:module';
import { parseArgs } from 'node:util';

// Compiled code kept on disk (the OS temporary folder's node-compile-cache,
// keyed by each file's contents): later starts skip parsing and compiling
// most of the modules a server loads (decision 0098). Node >= 22.1; the
// operator commands also run on older Node, which has none.
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

const USAGE = `Usage: ojs <command> [options]      (ojs <command> --help for one command)

Commands:
  serve         Start the OJS server (default store: SQLite file ./data/ojs.db)
  conformance   Run conformance suites against any OJS server (report, badge, manifest check)
  codec keygen  Print a new base64 AES-256-GCM key for the SDK's codec (encryption extension)
  validate      Validate job envelopes (or a state sequence) against the spec (Parser tier)
  migrate       Apply the PostgreSQL schema migrations: ojs migrate --store postgres://... [--schema NAME]

Operator commands, over the HTTP API of any OJS server (--url / OJS_URL, --api-key / OJS_API_KEY, --json):
  jobs          list | get | retry | cancel | delete (filters as the operations API; bulk with progress)
  enqueue       Enqueue a job: ojs enqueue email.send ada@example.com
  queues        list | stats | pause | resume
  dlq           Dead letter queue: list | retry | delete | purge
  cron          list | add | remove | trigger
  workflows     get | cancel
  workers       list | quiet | terminate
  pools         Fair scheduling pools: list | set | delete
  scheduling    stats (dispatches per queue over the last minute)
  stats         Live statistics (refreshes on a terminal)
  webhooks      list | create | get | update | delete | test | rotate-secret | deliveries | retry
  tenants       list | get | set-limits | delete | stats | jobs
  outbox        Transactional enqueue's outbox (PostgreSQL): list | show | retry | delete
  completion    Shell completion script: ojs completion bash|zsh|fish

  -V, --version Print the version
`;

const SERVE_USAGE = `Usage: ojs serve [options]

ojs serve options (environment variables in brackets):
  --host HOST             Address to bind [OJS_HOST] (default 127.0.0.1)
  --port PORT             Port [OJS_PORT] (default 8080)
  --store SPEC            sqlite:PATH | PATH | :memory: | postgres://USER@HOST:PORT/DB [OJS_STORE]
                          (default sqlite:./data/ojs.db; redis:// once the Redis store is installed;
                          any other scheme is refused)
  --test-mode             Enable the reset endpoint and test directives [OJS_TEST_MODE=1]; loopback only
  --api-keys LIST         role:key,... with roles producer|worker|viewer|admin [OJS_API_KEYS]
  --allow-insecure        Allow a non-loopback bind without API keys
  --visibility-timeout-ms N  Default lease of a fetched job [OJS_VISIBILITY_TIMEOUT_MS] (default 300000)
  --schema-validation MODE  strict | warn | off: args checked against registered schemas [OJS_SCHEMA_VALIDATION] (default warn)
  --require-fencing       Refuse ACK/NACK without worker_id and attempt, fetch/heartbeat without worker_id [OJS_REQUIRE_FENCING=on]
  --retention SPEC        Keep finished jobs for: completed=P7D,cancelled=P7D,discarded=P30D,dead_letter=P180D
                          (the defaults; any subset, 'never' keeps) [OJS_RETENTION]; per queue: admin queue config
  --drain-ms N            On SIGTERM, stay up draining this long (health 503 draining, no new jobs
                          handed out) before stopping [OJS_SHUTDOWN_DRAIN_MS] (default 0)
  --log-level LEVEL       fatal | error | warn | info | debug | trace | silent [OJS_LOG_LEVEL] (default info:
                          job lifecycle lines, store outages; JSON lines on stdout)
  --log-format FORMAT     json | pretty [OJS_LOG_FORMAT] (default json)
  --log-requests          Also log every HTTP request [OJS_LOG_REQUESTS=on]; --log is an alias
  --metrics on|off        Prometheus metrics at GET /metrics [OJS_METRICS] (default on)
  --grpc-port PORT        gRPC binding port (ojs.v1.OJSService, same host) [OJS_GRPC_PORT] (default 9090;
                          ephemeral when --port is 0)
  --no-grpc               Serve HTTP only [OJS_GRPC=off]
  --grpc-tls-cert FILE    PEM certificate chain of the gRPC binding [OJS_GRPC_TLS_CERT]; with --grpc-tls-key
  --grpc-tls-key FILE     PEM private key [OJS_GRPC_TLS_KEY]
  --grpc-tls-ca FILE      PEM CA: clients must present a certificate it signed (mTLS) [OJS_GRPC_TLS_CA]
                          Beyond loopback gRPC needs TLS (or --allow-insecure): API keys travel in metadata
  --no-dashboard          Do not serve the web dashboard at /ojs/admin/ [OJS_DASHBOARD=off]
  --no-quiet-gc           Keep the heap a burst grew instead of giving it back when quiet [OJS_QUIET_GC=off]
  --webhooks-allow-private
                          Let webhooks deliver to loopback, private, link-local and metadata
                          addresses (tests, development) [OJS_WEBHOOKS_ALLOW_PRIVATE=on]
  --webhooks-allow-http   Accept http: webhook URLs (development only) [OJS_WEBHOOKS_ALLOW_HTTP=on]
  --webhooks-retry-schedule LIST
                          Delay before each webhook attempt, at least 5 (default
                          0,30s,2m,10m,1h,4h,12h,24h) [OJS_WEBHOOKS_RETRY_SCHEDULE]
  --tenancy-strict        Refuse a job naming no tenant (400) instead of the default tenant
                          [OJS_TENANCY_STRICT=on]
  --no-tenant-fairness    Dispatch in priority and FIFO order across tenants, without interleaving
                          them [OJS_TENANT_FAIRNESS=off]
  --no-outbox-relay       Do not relay the PostgreSQL outbox (transactional enqueue) in this
                          process; other servers on the database do [OJS_OUTBOX_RELAY=off]
  --outbox-lease-ms N     How long an outbox row claimed by a process that died waits before
                          another relays it (default 30000) [OJS_OUTBOX_LEASE_MS]
  --enqueue-hook SPEC     Add a server enqueue hook (repeatable, runs in order) [OJS_ENQUEUE_HOOKS, ';'-separated]:
                          a module path (default export: a (job, next) function or an ordered list; else
                          its exported functions) or a built-in: ojs_validate (on in test mode),
                          required_meta:KEY,...  max_args_bytes:N | max_args_bytes:QUEUE=N,...,*=N
  --enqueue-hook-timeout-ms N  Refuse (500) a job the hooks have not passed within N ms
                          [OJS_ENQUEUE_HOOK_TIMEOUT_MS] (default 5000; 0: no bound)
`;

async function serve(argv: string[]): Promise<number> {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  if (major < 22 || (major === 22 && minor < 13)) {
    // The operator commands run on Node >= 18; the server needs node:sqlite.
    throw new Error(`ojs serve needs Node >= 22.13 (this is ${process.version}).`);
  }
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      store: { type: 'string' },
      'test-mode': { type: 'boolean' },
      'api-keys': { type: 'string' },
      'allow-insecure': { type: 'boolean' },
      'visibility-timeout-ms': { type: 'string' },
      'schema-validation': { type: 'string' },
      'require-fencing': { type: 'boolean' },
      retention: { type: 'string' },
      'drain-ms': { type: 'string' },
      log: { type: 'boolean' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      'log-requests': { type: 'boolean' },
      metrics: { type: 'string' },
      'grpc-port': { type: 'string' },
      'no-grpc': { type: 'boolean' },
      'grpc-tls-cert': { type: 'string' },
      'grpc-tls-key': { type: 'string' },
      'grpc-tls-ca': { type: 'string' },
      'no-dashboard': { type: 'boolean' },
      'no-quiet-gc': { type: 'boolean' },
      'webhooks-allow-private': { type: 'boolean' },
      'webhooks-allow-http': { type: 'boolean' },
      'webhooks-retry-schedule': { type: 'string' },
      'tenancy-strict': { type: 'boolean' },
      'no-tenant-fairness': { type: 'boolean' },
      'enqueue-hook': { type: 'string', multiple: true },
      'enqueue-hook-timeout-ms': { type: 'string' },
      'no-outbox-relay': { type: 'boolean' },
      'outbox-lease-ms': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(SERVE_USAGE);
    return 0;
  }
  // Before the server's modules load: this may replace the process image
  // (not through the installed command, whose first line sets the variable).
  (await import('./malloc-tuning.ts')).execWithMallocTuning();
  const { startServer } = await import('@ojs/server');
  const {
    optionsFromEnv,
    parseLogFormat,
    parseLogLevel,
    parseOutboxLeaseMs,
    parsePort,
    parseRetentionSpec,
    parseValidationMode,
    parseWebhookSchedule,
  } = await import('@ojs/server/serve');
  const options = optionsFromEnv();
  if (values.host !== undefined) options.host = values.host;
  if (values.port !== undefined) options.port = parsePort(values.port, '--port');
  if (values.store !== undefined) options.store = values.store;
  if (values['test-mode']) options.testMode = true;
  if (values['api-keys'] !== undefined) options.apiKeys = values['api-keys'];
  if (values['allow-insecure']) options.allowInsecure = true;
  if (values['visibility-timeout-ms'] !== undefined) {
    options.visibilityTimeoutMs = Number(values['visibility-timeout-ms']);
  }
  if (values['schema-validation'] !== undefined) {
    options.schemaValidation = parseValidationMode(values['schema-validation']);
  }
  if (values['require-fencing']) options.requireFencing = true;
  if (values.retention !== undefined) options.retention = parseRetentionSpec(values.retention);
  if (values['drain-ms'] !== undefined) {
    const ms = Number(values['drain-ms']);
    if (!Number.isInteger(ms) || ms < 0) throw new Error(`--drain-ms must be an integer >= 0.`);
    options.drainMs = ms;
  }
  if (values['log-level'] !== undefined) options.logLevel = parseLogLevel(values['log-level']);
  if (values['log-format'] !== undefined) options.logFormat = parseLogFormat(values['log-format']);
  if (values.log || values['log-requests']) options.logRequests = true;
  if (values.metrics !== undefined) {
    if (values.metrics !== 'on' && values.metrics !== 'off') {
      throw new Error(`--metrics must be on or off (got '${values.metrics}').`);
    }
    options.metrics = values.metrics === 'on';
  }
  if (values['grpc-port'] !== undefined)
    options.grpcPort = parsePort(values['grpc-port'], '--grpc-port');
  if (values['no-grpc']) options.grpc = false;
  if (values['grpc-tls-cert'] !== undefined) options.grpcTlsCert = values['grpc-tls-cert'];
  if (values['grpc-tls-key'] !== undefined) options.grpcTlsKey = values['grpc-tls-key'];
  if (values['grpc-tls-ca'] !== undefined) options.grpcTlsCa = values['grpc-tls-ca'];
  if (values['no-dashboard']) options.dashboard = false;
  if (values['no-quiet-gc']) options.quietGc = false;
  if (values['webhooks-allow-private']) options.webhooksAllowPrivate = true;
  if (values['webhooks-allow-http']) options.webhooksAllowHttp = true;
  if (values['webhooks-retry-schedule'] !== undefined) {
    options.webhooksRetrySchedule = parseWebhookSchedule(values['webhooks-retry-schedule']);
  }
  if (values['tenancy-strict']) options.tenancy = { ...options.tenancy, strict: true };
  if (values['no-tenant-fairness']) options.tenancy = { ...options.tenancy, fairness: false };
  if (values['enqueue-hook'] !== undefined) {
    options.enqueueHooks = [...(options.enqueueHooks ?? []), ...values['enqueue-hook']];
  }
  if (values['enqueue-hook-timeout-ms'] !== undefined) {
    const ms = Number(values['enqueue-hook-timeout-ms']);
    if (!Number.isInteger(ms) || ms < 0) {
      throw new Error('--enqueue-hook-timeout-ms must be an integer >= 0.');
    }
    options.enqueueHookTimeoutMs = ms;
  }
  if (values['no-outbox-relay']) options.outbox = { ...options.outbox, enabled: false };
  if (values['outbox-lease-ms'] !== undefined) {
    options.outbox = {
      ...options.outbox,
      leaseMs: parseOutboxLeaseMs('--outbox-lease-ms', values['outbox-lease-ms']),
    };
  }
  options.handleSignals = true;
  const server = await startServer(options);
  if (options.quietGc !== false) {
    // Started: what loading and starting left behind goes back at the first quiet moment.
    (await import('@ojs/core')).reduceMemoryWhenQuiet();
  }
  // Written now, not at exit: a server runs until stopped.
  (nodeModule as { flushCompileCache?: () => void }).flushCompileCache?.();
  process.stdout.write(
    `OJS server listening on ${server.url} (manifest: ${server.url}/ojs/manifest)\n`,
  );
  if (server.grpcAddress !== undefined) {
    process.stdout.write(`OJS gRPC listening on ${server.grpcAddress}\n`);
  }
  if (options.dashboard !== false) process.stdout.write(`Dashboard: ${server.url}/ojs/admin/\n`);
  return -1;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'conformance':
      // Loaded on demand: `serve` does not pay for the toolkit's modules.
      return (await import('@ojs/conformance')).conformanceMain(rest);
    case 'validate':
      return (await import('@ojs/conformance')).validateMain(rest);
    case 'codec':
      if (rest[0] === 'keygen' && rest.length === 1) {
        // A key for the SDK's AesGcmCodec (encryption extension): 32 random bytes, base64.
        process.stdout.write(`${await (await import('@ojs/sdk')).generateKey()}\n`);
        return 0;
      }
      process.stderr.write('Usage: ojs codec keygen   (prints a new base64 AES-256 key)\n');
      return 2;
    case '--version':
    case '-V':
    case 'version':
      process.stdout.write(`ojs ${VERSION}\n`);
      return 0;
    case 'migrate': {
      const moduleName = '@ojs/store-postgres';
      const { migrateMain } = (await import(moduleName)) as {
        migrateMain: (argv: string[]) => Promise<number>;
      };
      return migrateMain(rest);
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      {
        // Loaded on demand, like the toolkit: serve does not pay for them.
        const { OPERATOR_COMMANDS, operatorMain } = await import('./operator.ts');
        if (OPERATOR_COMMANDS.includes(command)) {
          const { processIo } = await import('./io.ts');
          return operatorMain(argv, processIo(), VERSION);
        }
      }
      process.stderr.write(`ojs: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve keeps running; other commands exit with their code.
    if (code >= 0) process.exitCode = code;
  },
  async (error: unknown) => {
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_')) {
      // A typo in a flag: name the likely one (from the usage text) and exit 2.
      const flag = /'(-[^']+)'/.exec((error as Error).message)?.[1] ?? '';
      const known =
        process.argv[2] === 'serve'
          ? [...SERVE_USAGE.matchAll(/ --([a-z][a-z-]*)/g)].map((m) => m[1]!)
          : [];
      const { closestName } = await import('@ojs/core');
      const guess = closestName(flag.replace(/^-+/, ''), known);
      process.stderr.write(
        `ojs: ${(error as Error).message.split('. ')[0]}${guess ? ` (did you mean --${guess}?)` : ''}; see ojs ${process.argv[2] ?? ''} --help.\n`,
      );
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`ojs: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
