/**
 * The connection and output settings every operator command shares:
 * `--url` (env OJS_URL, default http://127.0.0.1:8080), `--api-key` (env
 * OJS_API_KEY, sent as a Bearer token) and `--json`. Commands talk to any
 * OJS server through the SDK's client and admin client, never raw HTTP.
 */
import { type BulkResult, OjsClient } from '@ojs/sdk';
import type { Io } from './io.ts';
import { json, Progress } from './output.ts';

export const DEFAULT_URL = 'http://127.0.0.1:8080';
/** Jobs per request of a bulk action: small enough for a live progress bar, large enough to be quick. */
export const DEFAULT_BATCH_SIZE = 500;

export interface GlobalOptions {
  url?: string;
  apiKey?: string;
  /** The tenant the commands act for (X-OJS-Tenant); admin tenant commands ignore it. */
  tenant?: string;
  json?: boolean;
}

/** A mistake in the command line: printed with the command's usage hint, exit code 2. */
export class UsageError extends Error {}

export class Cli {
  readonly io: Io;
  readonly globals: GlobalOptions;
  #client: OjsClient | undefined;

  constructor(io: Io, globals: GlobalOptions) {
    this.io = io;
    this.globals = globals;
  }

  get url(): string {
    return this.globals.url || this.io.env.OJS_URL || DEFAULT_URL;
  }

  get asJson(): boolean {
    return this.globals.json === true;
  }

  get client(): OjsClient {
    if (this.#client === undefined) {
      let url: URL;
      try {
        url = new URL(this.url);
      } catch {
        throw new UsageError(
          `--url must be an http(s) URL such as ${DEFAULT_URL} (got '${this.url}').`,
        );
      }
      const apiKey = this.globals.apiKey || this.io.env.OJS_API_KEY;
      this.#client = new OjsClient({
        url: url.toString().replace(/\/$/, ''),
        ...(apiKey ? { authToken: apiKey } : {}),
        ...(this.globals.tenant ? { tenant: this.globals.tenant } : {}),
        // One request per operator action: a bulk retry must not be sent twice.
        retry: false,
        coalescePushes: false,
      });
    }
    return this.#client;
  }

  out(text: string): void {
    this.io.stdout.write(text);
  }

  /** JSON for `--json`, else the human form. */
  print(value: unknown, human: () => string): void {
    this.out(this.asJson ? json(value) : human());
  }

  /** Terminal width for tables (none in a pipe: nothing is cut). */
  get width(): number | undefined {
    return this.io.stdout.isTTY ? this.io.stdout.columns : undefined;
  }

  /** A destructive action goes ahead with --yes, or when the operator answers yes. */
  async confirm(question: string, yes: boolean | undefined): Promise<boolean> {
    if (yes) return true;
    if (this.io.confirm === undefined) {
      throw new UsageError(`${question} Pass --yes to confirm (no terminal to ask on).`);
    }
    return this.io.confirm(question);
  }

  /**
   * A bulk action in steps of `stepSize` jobs, each continuing after the
   * previous one (next_cursor), with a progress bar on a terminal; the
   * totals of all steps.
   */
  async bulkInSteps(
    label: string,
    step: (limit: number, cursor: string | undefined) => Promise<BulkResult>,
    stepSize = DEFAULT_BATCH_SIZE,
  ): Promise<BulkResult> {
    let total: BulkResult | undefined;
    let cursor: string | undefined;
    let progress: Progress | undefined;
    for (;;) {
      const result = await step(stepSize, cursor);
      if (total === undefined) {
        total = { ...result, errors: [...result.errors] };
        progress = new Progress(this.io.stderr, label, result.matched);
      } else {
        total.succeeded += result.succeeded;
        total.failed += result.failed;
        total.errors.push(...result.errors);
      }
      progress?.update(total.succeeded + total.failed);
      if (!result.truncated || result.next_cursor === undefined) break;
      cursor = result.next_cursor;
    }
    progress?.end();
    total.truncated = false;
    delete total.next_cursor;
    return total;
  }

  async close(): Promise<void> {
    await this.#client?.close();
  }
}
