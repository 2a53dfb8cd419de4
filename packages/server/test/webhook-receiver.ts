/**
 * A webhook receiver on loopback for the delivery tests: records every
 * request (headers, body, whether its signature verifies), and answers
 * as the test's `respond` says: a status, or `destroy` to drop the socket
 * without an answer.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhookSignature } from '@ojs/core';

export interface Received {
  n: number;
  headers: IncomingMessage['headers'];
  body: string;
  verified: boolean;
  answered: number | 'destroy';
  /** When it arrived (ms). */
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Delivery ids answered with a 2xx. */
  acknowledged: Set<string>;
  /** Sent as Retry-After with every 429 when set. */
  retryAfter?: string;
  close(): Promise<void>;
  /** Resolves when `check()` holds (checked after each request and every 50 ms), or rejects at the deadline. */
  until(check: () => boolean, timeoutMs: number, what: string): Promise<void>;
}

export async function startReceiver(
  secrets: () => string[],
  respond: (n: number, req: IncomingMessage) => number | 'destroy' = () => 200,
): Promise<Receiver> {
  const received: Received[] = [];
  const acknowledged = new Set<string>();
  const waiters = new Set<() => void>();
  let n = 0;
  const receiver = {} as Receiver;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      n++;
      const body = Buffer.concat(chunks).toString('utf8');
      const signature = String(req.headers['x-ojs-signature'] ?? '');
      const timestamp = String(req.headers['x-ojs-timestamp'] ?? '');
      const verified = verifyWebhookSignature(secrets(), timestamp, body, signature);
      const answer = respond(n, req);
      received.push({ n, headers: req.headers, body, verified, answered: answer, at: Date.now() });
      if (answer === 'destroy') {
        req.socket.destroy();
      } else {
        if (answer >= 200 && answer < 300)
          acknowledged.add(String(req.headers['x-ojs-delivery-id']));
        const headers: Record<string, string> = { 'content-type': 'text/plain' };
        if (answer === 429 && receiver.retryAfter !== undefined)
          headers['retry-after'] = receiver.retryAfter;
        res.writeHead(answer, headers);
        res.end(answer >= 200 && answer < 300 ? 'ok' : 'try again');
      }
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    acknowledged,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    until(check, timeoutMs, what) {
      return new Promise((resolve, reject) => {
        const done = () => {
          if (!check()) return;
          clearTimeout(deadline);
          clearInterval(poll);
          waiters.delete(done);
          resolve();
        };
        const deadline = setTimeout(() => {
          clearInterval(poll);
          waiters.delete(done);
          reject(new Error(`timed out waiting for ${what}`));
        }, timeoutMs);
        const poll = setInterval(done, 50);
        waiters.add(done);
        done();
      });
    },
  } satisfies Omit<Receiver, 'retryAfter'>);
}
