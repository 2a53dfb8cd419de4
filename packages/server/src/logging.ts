/**
 * The process's logger (pino), made once by `ojs serve` and injected into
 * the engine (lifecycle lines, background failures), the stores (through
 * their error callback) and the HTTP binding (request lines, opt-in).
 *
 * JSON lines on stdout by default, written asynchronously in 4 KiB chunks
 * (sonic-boom) so a log line costs the event loop a string build, not a
 * write(2); flushed on shutdown. `pretty` formats for a terminal
 * (pino-pretty) and is meant for development.
 */
import { type Logger, pino } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export function parseLogLevel(value: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(value)) {
    throw new Error(`Log level must be one of ${LOG_LEVELS.join(', ')} (got '${value}').`);
  }
  return value as LogLevel;
}

export function parseLogFormat(value: string): LogFormat {
  if (!(LOG_FORMATS as readonly string[]).includes(value)) {
    throw new Error(`Log format must be one of ${LOG_FORMATS.join(', ')} (got '${value}').`);
  }
  return value as LogFormat;
}

export interface ProcessLogger {
  logger: Logger;
  /** Writes out what is buffered (before exit). */
  flush(): void;
}

export async function createLogger(
  options: { level?: LogLevel; format?: LogFormat } = {},
): Promise<ProcessLogger> {
  const level = options.level ?? 'info';
  const base = {
    level,
    // `message` and an ISO `timestamp` as the spec's log fields (§16.4).
    messageKey: 'message',
    timestamp: pino.stdTimeFunctions.isoTime,
    base: { pid: process.pid },
    formatters: { level: (label: string) => ({ level: label }) },
  };
  if (options.format === 'pretty') {
    // Loaded only when asked for: a development dependency of the terminal.
    const { default: pretty } = await import('pino-pretty');
    const stream = pretty({ colorize: process.stdout.isTTY, messageKey: 'message', sync: true });
    return { logger: pino(base, stream), flush: () => {} };
  }
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  return {
    logger: pino(base, destination),
    flush: () => {
      try {
        destination.flushSync();
      } catch {
        // Not ready yet (nothing written) or stdout closed: nothing to flush.
      }
    },
  };
}
