/**
 * One webhook POST (ext-webhooks §1.3): node:http(s) with keep-alive
 * agents, a timeout over the whole attempt, at most 3 redirect hops, and
 * the SSRF guard on the address actually connected to: the connection's
 * `lookup` resolves the name, refuses loopback, private, link-local and
 * metadata addresses (unless the operator allows them) and hands the
 * socket the address it checked, so a second DNS answer cannot swap it
 * (DNS rebinding). A literal IP never reaches `lookup` and is checked
 * before connecting; every redirect target is checked again the same way.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import type https from 'node:https';
import {
  isBlockedAddress,
  literalHostIp,
  truncateResponseBody,
  type WebhookAttemptResult,
} from '@ojs/core';

export const WEBHOOK_USER_AGENT = 'OJS-Webhook/1.0 (ojs-ts)';
const MAX_REDIRECTS = 3;
/** Bytes of a response read before the connection is dropped (the log keeps 1 KiB). */
const MAX_READ_BYTES = 64 * 1024;

export interface DeliveryClientOptions {
  /** Allow loopback, private, link-local and metadata addresses (tests, development). */
  allowPrivate: boolean;
  /** Follow redirects to http: URLs (only when http: subscriptions are allowed). */
  allowHttp: boolean;
}

export interface WebhookRequest {
  url: string;
  body: string;
  /** Headers of the attempt (signature and timestamp included). */
  headers: Record<string, string>;
  timeoutMs: number;
}

class Refused extends Error {}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

export class DeliveryClient {
  readonly #options: DeliveryClientOptions;
  readonly #http = new http.Agent({ keepAlive: true, maxSockets: 16 });
  // node:https (and TLS with it) loads with the first https: delivery, not with every
  // server: a few MB of memory that a server without webhooks never uses (decision 0108).
  #https?: https.Agent;
  #httpsAgent(): https.Agent {
    this.#https ??= new (process.getBuiltinModule('node:https').Agent)({
      keepAlive: true,
      maxSockets: 16,
    });
    return this.#https;
  }

  constructor(options: DeliveryClientOptions) {
    this.#options = options;
  }

  close(): void {
    this.#http.destroy();
    this.#https?.destroy();
  }

  /** Resolves, keeps the first address the guard admits, and connects to that one only. */
  readonly #lookup = (
    hostname: string,
    options: { all?: boolean; family?: number },
    callback: LookupCallback,
  ): void => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, '');
      const allowed = this.#options.allowPrivate
        ? addresses
        : addresses.filter((a) => !isBlockedAddress(a.address));
      const first = allowed[0];
      if (first === undefined) {
        const refused = new Refused(
          `refused: ${hostname} resolves to a private, loopback or link-local address`,
        ) as NodeJS.ErrnoException;
        refused.code = 'EWEBHOOKBLOCKED';
        return callback(refused, '');
      }
      if (options.all) callback(null, [first]);
      else callback(null, first.address, first.family);
    });
  };

  /** The attempt: final status, body (truncated), or the error that ended it. */
  async send(request: WebhookRequest): Promise<WebhookAttemptResult> {
    const started = performance.now();
    const signal = AbortSignal.timeout(request.timeoutMs);
    const elapsed = () => Math.round(performance.now() - started);
    let url = request.url;
    try {
      for (let hop = 0; ; hop++) {
        const target = this.#check(url);
        const response = await this.#post(target, request, signal);
        const location = response.headers.location;
        if (response.status >= 300 && response.status < 400 && location !== undefined) {
          if (hop >= MAX_REDIRECTS) {
            return {
              error: `more than ${MAX_REDIRECTS} redirects`,
              statusCode: response.status,
              responseTimeMs: elapsed(),
            };
          }
          url = new URL(location, target).toString();
          continue;
        }
        const result: WebhookAttemptResult = {
          statusCode: response.status,
          responseBody: response.body,
          responseTimeMs: elapsed(),
        };
        const retryAfter = response.headers['retry-after'];
        if (typeof retryAfter === 'string') result.retryAfter = retryAfter;
        return result;
      }
    } catch (error) {
      const message = signal.aborted
        ? `timeout after ${request.timeoutMs} ms`
        : error instanceof Refused || (error as NodeJS.ErrnoException).code === 'EWEBHOOKBLOCKED'
          ? (error as Error).message
          : `connection error: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
      return { error: message, responseTimeMs: elapsed() };
    }
  }

  /** The URL as a target this process may connect to (protocol, literal address). */
  #check(url: string): URL {
    const target = new URL(url);
    if (target.protocol !== 'https:' && !(target.protocol === 'http:' && this.#options.allowHttp)) {
      throw new Refused(`refused: ${target.protocol} target (https required)`);
    }
    const ip = literalHostIp(target.hostname);
    if (ip !== null && !this.#options.allowPrivate && isBlockedAddress(ip)) {
      throw new Refused(`refused: ${ip} is a private, loopback or link-local address`);
    }
    return target;
  }

  #post(
    target: URL,
    request: WebhookRequest,
    signal: AbortSignal,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
    const secure = target.protocol === 'https:';
    const send = secure ? process.getBuiltinModule('node:https').request : http.request;
    return new Promise((resolve, reject) => {
      const req = send(target, {
        method: 'POST',
        agent: secure ? this.#httpsAgent() : this.#http,
        lookup: this.#lookup as unknown as typeof dnsLookup,
        signal,
        headers: {
          ...request.headers,
          'Content-Length': String(Buffer.byteLength(request.body)),
        },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          if (read < MAX_READ_BYTES) chunks.push(chunk);
          read += chunk.length;
          if (read >= MAX_READ_BYTES) res.destroy();
        });
        const done = () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: truncateResponseBody(Buffer.concat(chunks)),
          });
        res.on('end', done);
        res.on('close', done);
        res.on('error', reject);
      });
      req.end(request.body);
    });
  }
}
