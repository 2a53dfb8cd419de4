/**
 * Cross-process wake-ups: writers NOTIFY the schema's channel in the same
 * transaction that makes jobs available (so the signal is sent only if the
 * change commits, and only after it is visible), and every process keeps
 * one dedicated connection (outside the pool) that LISTENs on it.
 *
 * When that connection drops (network, pg_terminate_backend, failover) the
 * listener reconnects with capped exponential backoff and then wakes its
 * subscribers once, because notifications sent while it was away are lost.
 * A missed signal only costs latency: waiting fetches also wake on their
 * own deadline.
 */
import pg from 'pg';

export interface ListenerOptions {
  config: pg.ClientConfig;
  channel: string;
  onError: (error: Error, context: string) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

export class JobsAvailableListener {
  readonly #options: ListenerOptions;
  readonly #subscribers = new Set<() => void>();
  #client: pg.Client | undefined;
  #connecting: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #backoffMs: number;
  #closed = false;
  #connections = 0;

  constructor(options: ListenerOptions) {
    this.#options = options;
    this.#backoffMs = options.minBackoffMs ?? 100;
  }

  get channel(): string {
    return this.#options.channel;
  }

  /** Number of successful (re)connections, for tests and diagnostics. */
  get connections(): number {
    return this.#connections;
  }

  get listening(): boolean {
    return this.#client !== undefined;
  }

  subscribe(listener: () => void): () => void {
    this.#subscribers.add(listener);
    if (this.#client === undefined && this.#connecting === undefined && this.#timer === undefined) {
      this.#connect();
    }
    return () => {
      this.#subscribers.delete(listener);
    };
  }

  /** Resolves once the LISTEN is in place (or rejects with the last connection error). */
  async ready(): Promise<void> {
    if (this.#closed) throw new Error('The LISTEN connection is closed.');
    if (this.#client !== undefined) return;
    if (this.#connecting === undefined) {
      // Reconnect now rather than after the backoff (or connect for the first time).
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#connect();
    }
    await this.#connecting;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const client = this.#client;
    this.#client = undefined;
    await this.#connecting?.catch(() => undefined);
    await (client ?? this.#client)?.end().catch((error: Error) => {
      this.#options.onError(error, 'closing the LISTEN connection');
    });
  }

  /**
   * Wakes this process's subscribers now, for a commit of this process
   * that will NOTIFY: its own notification comes back over the LISTEN
   * connection a round trip later (and wakes them once more, harmlessly).
   */
  wakeLocal(): void {
    this.#wake();
  }

  #wake(): void {
    for (const listener of [...this.#subscribers]) {
      try {
        listener();
      } catch (error) {
        this.#options.onError(error as Error, 'jobs-available listener');
      }
    }
  }

  #connect(): void {
    const client = new pg.Client(this.#options.config);
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (error !== undefined) this.#options.onError(error, 'LISTEN connection');
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => undefined);
      this.#scheduleReconnect();
    };
    client.on('notification', (message) => {
      if (message.channel === this.#options.channel) this.#wake();
    });
    client.on('error', (error) => onLost(error));
    client.on('end', () => onLost());
    const attempt = (async () => {
      await client.connect();
      await client.query(`LISTEN "${this.#options.channel}"`);
    })();
    this.#connecting = attempt.then(
      () => {
        this.#connecting = undefined;
        if (this.#closed || lost) {
          client.end().catch(() => undefined);
          this.#scheduleReconnect();
          return;
        }
        this.#client = client;
        this.#backoffMs = this.#options.minBackoffMs ?? 100;
        this.#connections++;
        // Anything announced while we were not listening was lost: wake everyone once.
        if (this.#connections > 1) this.#wake();
      },
      (error: Error) => {
        this.#connecting = undefined;
        onLost(error);
        this.#scheduleReconnect();
        throw error;
      },
    );
    // Callers that do not await ready() must not see an unhandled rejection.
    this.#connecting.catch(() => undefined);
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#timer !== undefined || this.#connecting !== undefined) return;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.#options.maxBackoffMs ?? 5000);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#closed) this.#connect();
    }, delay);
    this.#timer.unref();
  }
}
