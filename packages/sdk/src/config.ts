/**
 * Configuration from `OJS_*` environment variables (SDK guidelines §19.2)
 * and a small structured logger. Precedence: programmatic option >
 * environment > default.
 *
 *   OJS_BACKEND_URL (alias OJS_URL)  server base URL
 *   OJS_AUTH_TOKEN                   bearer token
 *   OJS_QUEUE                        default queue (client), comma-separated queues (worker)
 *   OJS_CONCURRENCY                  worker concurrency
 *   OJS_SHUTDOWN_TIMEOUT             worker grace period, seconds
 *   OJS_LOG_LEVEL                    debug | info | warn | error | silent
 *
 * TLS: use an https:// URL; a private CA is trusted through Node's
 * NODE_EXTRA_CA_CERTS (the SDK has no dependencies, so OJS_TLS_* client
 * certificates are not supported by the built-in fetch transport).
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

function env(name: string): string | undefined {
  const value = typeof process === 'undefined' ? undefined : process.env[name];
  return value === undefined || value === '' ? undefined : value;
}

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && value in RANK;
}

/** JSON lines on stderr at or above `level` (args are never logged by the SDK). */
export function consoleLogger(level: LogLevel = envLogLevel() ?? 'info'): Logger {
  const write = (at: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (RANK[at] < RANK[level]) return;
    const line = JSON.stringify({
      timestamp: new Date().toISOString(),
      level: at,
      message,
      ...fields,
    });
    process.stderr.write(`${line}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

export function envLogLevel(): LogLevel | undefined {
  const value = env('OJS_LOG_LEVEL')?.toLowerCase();
  return isLogLevel(value) ? value : undefined;
}

export function envUrl(): string | undefined {
  return env('OJS_BACKEND_URL') ?? env('OJS_URL');
}

export function envAuthToken(): string | undefined {
  return env('OJS_AUTH_TOKEN');
}

export function envQueues(): string[] | undefined {
  const value = env('OJS_QUEUE');
  if (value === undefined) return undefined;
  const queues = value
    .split(',')
    .map((q) => q.trim())
    .filter((q) => q !== '');
  return queues.length > 0 ? queues : undefined;
}

export function envInt(name: string): number | undefined {
  const value = env(name);
  if (value === undefined) return undefined;
  const parsed = Number(value);
  return Number.isFinite(parsed) ? parsed : undefined;
}

/** The default server URL for local development. */
export const DEFAULT_URL = 'http://127.0.0.1:8080';
