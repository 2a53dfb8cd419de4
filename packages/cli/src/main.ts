#!/usr/bin/env node
/**
 * The `ojs` command: serve, conformance, and the tools that grow around them.
 */
import { parseArgs } from 'node:util';
import { startServer } from '@ojs/server';
import { optionsFromEnv, parseRetentionSpec, parseValidationMode } from '@ojs/server/serve';

const USAGE = `Usage: ojs <command> [options]

Commands:
  serve         Start the OJS server (default store: SQLite file ./data/ojs.db)
  conformance   Run conformance suites against any OJS server (report, badge, manifest check)
  validate      Validate job envelopes (or a state sequence) against the spec (Parser tier)
  migrate       Apply the PostgreSQL schema migrations: ojs migrate --store postgres://... [--schema NAME]

ojs serve options (environment variables in brackets):
  --host HOST             Address to bind [OJS_HOST] (default 127.0.0.1)
  --port PORT             Port [OJS_PORT] (default 8080)
  --store SPEC            sqlite:PATH | PATH | :memory: [OJS_STORE] (default sqlite:./data/ojs.db)
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
  --log                   Log requests (JSON lines on stdout)
  --no-dashboard          Do not serve the web dashboard at /ojs/admin/ [OJS_DASHBOARD=off]
`;

async function serve(argv: string[]): Promise<number> {
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
      'no-dashboard': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const options = optionsFromEnv();
  if (values.host !== undefined) options.host = values.host;
  if (values.port !== undefined) options.port = Number(values.port);
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
  if (values['no-dashboard']) options.dashboard = false;
  options.logger = values.log ?? false;
  options.handleSignals = true;
  const server = await startServer(options);
  process.stdout.write(
    `OJS server listening on ${server.url} (manifest: ${server.url}/ojs/manifest)\n`,
  );
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
      process.stderr.write(`ojs: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve keeps running; other commands exit with their code.
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`ojs: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
