/**
 * The outbox relay (transactional enqueue, decision 0109): turns the rows
 * applications committed into the store's outbox (Store.outbox) into jobs,
 * through the same enqueue path as POST /ojs/v1/jobs (validation, hooks,
 * unique keys, client-chosen ids, queue bounds), so the SQL side is never a
 * second validator.
 *
 * Every engine on such a store relays: a NOTIFY at the application's COMMIT
 * wakes it at once, and a slow poll covers a missed notification, a lease
 * left by a process that died and rows put off by a passing error. Rows are
 * leased (several processes take each row once), and a relayed row is
 * deleted in the transaction that inserts its job, so it becomes exactly one
 * job. What a refused row comes to is core's rule (outboxSettlementFor).
 */
import { hostname } from 'node:os';
import {
  OjsError,
  type OutboxConsume,
  type OutboxEntry,
  type OutboxSettlement,
  type OutboxStore,
  outboxError,
  outboxSettlementFor,
  uuidv7,
} from '@ojs/core';
import type { EngineContext } from './context.ts';

/** What the enqueue path answered for one row (Engine RelayOutcome, as far as the relay reads it). */
export type RelayOutcome =
  | { status: 'error'; error: OjsError }
  | { status: 'created' | 'existing' | 'dropped' };

export interface OutboxRelayOptions {
  /** false: this engine does not relay (another process does). Default true. */
  enabled?: boolean;
  /** Rows per claim (default 100). */
  batch?: number;
  /** How long a claimed row is this process's (default 30 s); a dead process's rows wait this long. */
  leaseMs?: number;
  /** How long a row put off by a passing error (a full queue, a store outage) waits (default 5 s). */
  retryMs?: number;
  /** The poll behind the notifications (default 1 s). */
  pollMs?: number;
}

export interface OutboxRelayContext extends Pick<EngineContext, 'store' | 'errors'> {
  /** The enqueue path, each body its own PUSH; the stored jobs consume their rows (Engine.relayOutbox). */
  relayOutbox(bodies: unknown[], consume: OutboxConsume): Promise<RelayOutcome[]>;
}

const SERVICE = 'outbox-relay';

export class OutboxRelay {
  readonly owner = `${hostname()}:${process.pid}:${uuidv7()}`;
  readonly #ctx: OutboxRelayContext;
  readonly #outbox: OutboxStore | undefined;
  readonly #batch: number;
  readonly #leaseMs: number;
  readonly #retryMs: number;
  readonly #pollMs: number;
  #unsubscribe: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  /** Woken while a round ran: run another (its rows may have committed after the claim). */
  #again = false;
  #stopped = true;

  constructor(ctx: OutboxRelayContext, options: OutboxRelayOptions = {}) {
    this.#ctx = ctx;
    this.#outbox = options.enabled === false ? undefined : ctx.store.outbox;
    this.#batch = options.batch ?? 100;
    this.#leaseMs = options.leaseMs ?? 30_000;
    this.#retryMs = options.retryMs ?? 5000;
    this.#pollMs = options.pollMs ?? 1000;
  }

  /** Whether this engine relays (its store has an outbox and relaying is on). */
  get active(): boolean {
    return this.#outbox !== undefined;
  }

  start(): void {
    if (this.#outbox === undefined || !this.#stopped) return;
    this.#stopped = false;
    this.#unsubscribe = this.#outbox.onRows(() => this.wake());
    this.wake();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** Relays now (a NOTIFY, the poll, an operator's retry); never two rounds at once. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#running = this.#drain()
      .then(
        () => this.#ctx.errors.succeeded(SERVICE),
        (error: unknown) => this.#ctx.errors.failed(SERVICE, error, 'outbox relay failed'),
      )
      .finally(() => {
        this.#running = undefined;
        if (this.#stopped) return;
        if (this.#again) this.wake();
        else {
          this.#timer = setTimeout(() => this.wake(), this.#pollMs);
          this.#timer.unref();
        }
      });
  }

  /** Claims and relays rounds until the outbox has nothing for this process. */
  async #drain(): Promise<void> {
    const outbox = this.#outbox!;
    for (;;) {
      this.#again = false;
      const rows = await outbox.claim(this.owner, this.#batch, this.#leaseMs);
      if (rows.length > 0) await this.#relay(outbox, rows);
      if (this.#stopped || (rows.length < this.#batch && !this.#again)) return;
    }
  }

  /** One round: the rows' envelopes through the enqueue path, then what became of each. */
  async #relay(outbox: OutboxStore, rows: OutboxEntry[]): Promise<void> {
    let outcomes: RelayOutcome[];
    try {
      outcomes = await this.#ctx.relayOutbox(
        rows.map((row) => row.envelope),
        { owner: this.owner, ids: rows.map((row) => row.id) },
      );
    } catch (error) {
      // Nothing was stored (the insert is atomic): the rows are put off and
      // relayed again (rows that changed hands are another relay's now).
      await outbox.finish(
        this.owner,
        rows.map((row) => ({ id: row.id, outcome: 'retry', error: wireOf(error) })),
        this.#retryMs,
      );
      throw error;
    }
    // Rows whose job was stored (or deduplicated) went with the insert; the
    // others are settled here.
    const settlements: OutboxSettlement[] = [];
    for (const [index, outcome] of outcomes.entries()) {
      const id = rows[index]!.id;
      if (outcome.status === 'error') settlements.push(outboxSettlementFor(id, outcome.error));
      else if (outcome.status === 'dropped') settlements.push({ id, outcome: 'done' });
    }
    await outbox.finish(this.owner, settlements, this.#retryMs);
  }
}

function wireOf(error: unknown): OutboxSettlement['error'] {
  if (error instanceof OjsError) return outboxError(error);
  return {
    code: 'backend_error',
    message: error instanceof Error ? error.message : String(error),
    retryable: true,
  };
}
