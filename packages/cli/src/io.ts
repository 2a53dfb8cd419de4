/**
 * What a CLI command reads and writes, injected so that tests run commands
 * in-process against a live server and read their output, and so that the
 * same code prints tables on a terminal and plain lines into a pipe.
 */
export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Io {
  stdout: Output;
  stderr: Output;
  /** Answers a yes/no question (a confirmation); undefined when there is no terminal to ask. */
  confirm?: (question: string) => Promise<boolean>;
  env: Record<string, string | undefined>;
  /** Waits between refreshes of `stats --watch`; ends early when the signal aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Aborted on Ctrl-C: live commands stop and exit cleanly. */
  signal?: AbortSignal;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The process's own streams, with a terminal prompt when stdin is one. */
export function processIo(): Io {
  let controller: AbortController | undefined;
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    sleep,
    // Only a live view (`stats`) asks for it: Ctrl-C then ends the view
    // cleanly; every other command keeps Node's default (exit at once).
    get signal() {
      if (controller === undefined) {
        const created = new AbortController();
        process.once('SIGINT', () => created.abort());
        controller = created;
      }
      return controller.signal;
    },
    confirm: process.stdin.isTTY
      ? async (question) => {
          const { createInterface } = await import('node:readline/promises');
          const rl = createInterface({ input: process.stdin, output: process.stderr });
          try {
            const answer = await rl.question(`${question} [y/N] `);
            return /^y(es)?$/i.test(answer.trim());
          } finally {
            rl.close();
          }
        }
      : undefined,
  };
}
