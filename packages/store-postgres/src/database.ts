/**
 * Connections and transactions. Every store operation is one statement or
 * one transaction (READ COMMITTED) on a pooled connection, through a
 * Session that runs the store's statements as prepared statements.
 *
 * Connection loss: a statement or transaction that failed before reaching
 * COMMIT is retried on a fresh connection (nothing of it can have
 * committed); a loss during COMMIT is resolved with txid_status() on another
 * connection, never retried blindly. Deadlocks and serialization failures
 * are retried. The pool drops broken connections and opens new ones on
 * demand, so the store recovers by itself once the database answers again.
 */
import type pg from 'pg';
import { isConnectionError, isTransientConflict, isUnsent, wrapError } from './errors.ts';
import { Session, TXID_SQL } from './statements.ts';

/** Thrown inside a transaction body to roll back and return `value`. */
export class Rollback<T> {
  readonly value: T;
  constructor(value: T) {
    this.value = value;
  }
}

/**
 * What a transaction body tells the Database about itself. `xid`: the id of
 * the transaction once it wrote (a write statement can return
 * txid_current() at no extra cost), or null when it wrote nothing; left
 * undefined, the Database asks for it with one more round trip before
 * COMMIT (the lost-COMMIT check needs it).
 */
export interface TxState {
  xid?: string | null;
}

/**
 * Thrown by a verification of an autocommit statement (see
 * Database.autocommit) when the statement's effect is only partly there:
 * someone else wrote in between, so the outcome cannot be told.
 */
export class OutcomeUnknown extends Error {}

export const MAX_ATTEMPTS = 4;

/** BEGIN of a transaction whose COMMIT does not wait for the WAL flush (decision 0078). */
export const BEGIN_ASYNC_COMMIT = 'BEGIN; SET LOCAL synchronous_commit TO off';

/**
 * A pooled connection checked out for one attempt. A checked-out client that
 * loses its connection between two queries emits 'error' (the pool listens
 * only while the client is idle): it is recorded as `broken`, so the next
 * query fails as a connection error and release() destroys the client.
 */
class Lease {
  readonly client: pg.PoolClient;
  broken: Error | undefined;
  #released = false;
  readonly #onError = (error: Error) => {
    this.broken ??= error;
  };

  constructor(client: pg.PoolClient) {
    this.client = client;
    client.on('error', this.#onError);
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.client.removeListener('error', this.#onError);
    this.client.release(this.broken);
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Database {
  readonly #pool: pg.Pool;
  readonly #names: Map<string, string>;
  readonly #session: Session;
  readonly #onError: (error: Error, context: string) => void;
  /**
   * Attempts on connection loss: more than the pool holds, because after a
   * database restart every idle pooled connection may be dead and each retry
   * can draw one of them before the pool notices.
   */
  readonly #connectionAttempts: number;

  constructor(
    pool: pg.Pool,
    names: Map<string, string>,
    onError: (error: Error, context: string) => void,
  ) {
    this.#pool = pool;
    this.#connectionAttempts = Math.max(MAX_ATTEMPTS, (pool.options.max ?? 10) + 2);
    this.#names = names;
    this.#session = new Session(pool, names);
    this.#onError = onError;
  }

  /**
   * A pooled connection for attempt `attempt`, or undefined (after a pause)
   * when none could be opened and the caller should try again.
   */
  async #lease(attempt: number): Promise<Lease | undefined> {
    try {
      return new Lease(await this.#pool.connect());
    } catch (error) {
      if (attempt < this.#connectionAttempts && isConnectionError(error)) {
        await delay(Math.min(1000, 25 * attempt * attempt));
        return undefined;
      }
      throw wrapError(error);
    }
  }

  /**
   * One statement outside a transaction, retried on a fresh connection when
   * the connection was lost: always for reads and idempotent writes
   * (`retry`), otherwise only when the statement never reached the server.
   */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    params: unknown[],
    retry = true,
  ): Promise<pg.QueryResult<R>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#session.query<R>(text, params);
      } catch (error) {
        const retryable = retry ? isConnectionError(error) : isUnsent(error);
        if (retryable && attempt < this.#connectionAttempts) {
          await delay(Math.min(1000, 25 * attempt * attempt));
          continue;
        }
        throw wrapError(error);
      }
    }
  }

  /**
   * Runs `body` in BEGIN ... COMMIT on one pooled connection. `body` may
   * throw a Rollback to undo everything and return a value. Retries the
   * whole body (which therefore keeps its state inside) on deadlocks and
   * serialization failures, and on connection loss before COMMIT was sent.
   * When the connection is lost during COMMIT, the transaction's outcome is
   * looked up with txid_status() on another connection: committed -> the
   * result stands; aborted -> the body runs again; unknowable -> 503 with
   * outcome "unknown".
   *
   * `durable: false` commits without waiting for the WAL flush
   * (`synchronous_commit = off` for this transaction only): for a claim,
   * whose loss in a database crash only hands its jobs out again (decision
   * 0078). Every write whose caller is told "stored" stays durable.
   */
  async transaction<T>(
    body: (client: Session, state: TxState) => Promise<T>,
    durable = true,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const lease = await this.#lease(attempt);
      if (lease === undefined) continue;
      const client = new Session(lease.client, this.#names);
      const state: TxState = {};
      let committing = false;
      let xid: string | null = null;
      let result: T | undefined;
      try {
        // One round trip either way: a simple query may hold two statements.
        await client.query(durable ? 'BEGIN' : BEGIN_ASYNC_COMMIT);
        try {
          result = await body(client, state);
        } catch (error) {
          if (!(error instanceof Rollback)) throw error;
          await client.query('ROLLBACK');
          return error.value as T;
        }
        if (state.xid !== undefined) {
          xid = state.xid;
        } else {
          const { rows } = await client.query<{ xid: string | null }>(TXID_SQL);
          xid = rows[0]!.xid;
        }
        // No await between this check and sending COMMIT: if the client is already
        // known to be broken, COMMIT is never sent and the attempt is safely retried.
        if (lease.broken !== undefined) throw lease.broken;
        committing = true;
        await client.query('COMMIT');
        return result;
      } catch (error) {
        const lost = isConnectionError(error);
        if (lost) {
          lease.broken ??= error as Error;
        } else {
          try {
            await client.query('ROLLBACK');
          } catch (rollbackError) {
            lease.broken ??= rollbackError as Error;
          }
        }
        lease.release();
        if (lost && committing) {
          // Nothing written (no xid): there is nothing to lose, the result stands.
          if (xid === null) return result as T;
          const outcome = await this.#outcome(xid);
          if (outcome === 'committed') return result as T;
          if (outcome !== 'aborted' || attempt >= MAX_ATTEMPTS) throw wrapError(error, true);
          continue;
        }
        if (
          (lost || isTransientConflict(error)) &&
          attempt < (lost ? this.#connectionAttempts : MAX_ATTEMPTS)
        ) {
          await delay(lost ? Math.min(1000, 25 * attempt * attempt) : Math.random() * 10 * attempt);
          continue;
        }
        throw wrapError(error);
      } finally {
        lease.release();
      }
    }
  }

  /**
   * One writing statement run on its own, in autocommit mode: its own
   * transaction in one round trip (no BEGIN, no xid lookup, no COMMIT).
   * The price is paid only when the connection is lost after the statement
   * was sent, when it may or may not have committed: the store waits until
   * the backend that ran it is no longer executing it (pg_stat_activity, by
   * its pid), then `verify` looks for the statement's effect on another
   * connection and returns the result if it committed, or undefined if it
   * did not (the statement is then sent again). When the backend cannot be
   * seen to stop, or `verify` throws OutcomeUnknown: 503 with outcome
   * "unknown". Other errors (constraint violations included) are thrown
   * unchanged for the caller to act on; deadlocks are retried.
   */
  async autocommit<R extends pg.QueryResultRow, T>(
    text: string,
    params: unknown[],
    decode: (rows: R[]) => T,
    verify: () => Promise<T | undefined>,
    rawJson = false,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const lease = await this.#lease(attempt);
      if (lease === undefined) continue;
      const pid = (lease.client as unknown as { processID: number | null }).processID;
      try {
        const { rows } = await new Session(lease.client, this.#names).query<R>(
          text,
          params,
          rawJson,
        );
        return decode(rows);
      } catch (error) {
        if (!isConnectionError(error)) {
          if (isTransientConflict(error) && attempt < MAX_ATTEMPTS) {
            await delay(Math.random() * 10 * attempt);
            continue;
          }
          throw wrapError(error);
        }
        lease.broken ??= error as Error;
        // Give the lost connection back before verifying on another one: with
        // every pooled connection lost at once (a database restart), holding
        // them while waiting for a free one would stall the pool until its
        // connection timeout, once per retry.
        lease.release();
        if (!isUnsent(error)) {
          let verified: T | undefined;
          try {
            if (pid === null || !(await this.#stopped(pid))) throw new OutcomeUnknown();
            verified = await verify();
          } catch (verifyError) {
            if (!(verifyError instanceof OutcomeUnknown)) {
              this.#onError(verifyError as Error, 'verifying a statement after connection loss');
            }
            throw wrapError(error, true);
          }
          if (verified !== undefined) return verified;
        }
        if (attempt >= this.#connectionAttempts) throw wrapError(error, !isUnsent(error));
        await delay(Math.min(1000, 25 * attempt * attempt));
      } finally {
        lease.release();
      }
    }
  }

  /**
   * Waits (up to 5 s) until backend `pid` no longer runs a statement: gone
   * (terminated, or the server restarted) or idle. A statement run in
   * autocommit mode has then committed or rolled back for good.
   */
  async #stopped(pid: number): Promise<boolean> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const { rows } = await this.query<{ state: string | null }>(
        'SELECT state FROM pg_stat_activity WHERE pid = $1',
        [pid],
      );
      const state = rows[0]?.state;
      if (state === undefined || (state !== 'active' && state !== 'fastpath function call')) {
        return true;
      }
      if (Date.now() > deadline) return false;
      await delay(20);
    }
  }

  /**
   * The fate of a transaction whose COMMIT reply was lost: 'committed',
   * 'aborted', or 'unknown' (still in progress after a few seconds, or the
   * database unreachable). A terminated backend finishes its transaction
   * within milliseconds, so 'in progress' is polled briefly.
   */
  async #outcome(xid: string): Promise<'committed' | 'aborted' | 'unknown'> {
    const deadline = Date.now() + 5000;
    try {
      for (;;) {
        const { rows } = await this.query<{ status: string | null }>(
          'SELECT txid_status($1::bigint) AS status',
          [xid],
        );
        const status = rows[0]!.status;
        if (status === 'committed' || status === 'aborted') return status;
        if (status !== 'in progress' || Date.now() > deadline) return 'unknown';
        await delay(20);
      }
    } catch (error) {
      this.#onError(error as Error, 'resolving the outcome of an interrupted COMMIT');
      return 'unknown';
    }
  }
}
