/**
 * Minimal HTTP client for conformance steps, built on node:http rather than fetch because steps
 * may use arbitrary methods (`ASSERT`, lowercase actions) that fetch refuses. It mirrors Go's
 * default client: keep-alive, redirects followed, one timeout covering the whole exchange.
 *
 * Keep-alive has a classic race: the server closes an idle connection just as the next request
 * is written on it. Requests that fail that way on a *reused* socket are retried on a fresh one
 * (the server never saw them), so long step delays cannot produce spurious failures.
 */
import http from 'node:http';
import https from 'node:https';

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** undefined = no request body. */
  body?: string;
  timeoutMs: number;
  /** Aborts the exchange (e.g. a long-poll fetch when a worker stops). */
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  /** First value of each header, keyed by the name as the server sent it. */
  headers: Record<string, string>;
  body: string;
  /** Final URL after redirects. */
  url: string;
}

const MAX_REDIRECTS = 10;
const MAX_STALE_RETRIES = 3;
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

export class HttpClient {
  readonly #httpAgent = new http.Agent({ keepAlive: true });
  readonly #httpsAgent = new https.Agent({ keepAlive: true });

  /** Sends one request, following redirects, within `timeoutMs` overall. */
  async request(req: HttpRequest): Promise<HttpResponse> {
    const timeout = AbortSignal.timeout(Math.max(1, req.timeoutMs));
    const deadline = req.signal ? AbortSignal.any([timeout, req.signal]) : timeout;
    let method = req.method;
    let body = req.body;
    let url = new URL(req.url);
    for (let hop = 0; ; hop++) {
      const res = await this.#sendWithRetry(method, url, req.headers, body, deadline);
      const location = res.location;
      if (location === undefined || hop >= MAX_REDIRECTS) return res.response;
      url = new URL(location, url);
      // Go semantics: 301/302/303 switch to GET without a body (HEAD stays HEAD); 307/308 replay.
      if (res.response.status <= 303 && method !== 'HEAD') {
        method = 'GET';
        body = undefined;
      }
    }
  }

  /** Closes pooled connections. */
  close(): void {
    this.#httpAgent.destroy();
    this.#httpsAgent.destroy();
  }

  async #sendWithRetry(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: string | undefined,
    deadline: AbortSignal,
  ): Promise<{ response: HttpResponse; location?: string }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#sendOnce(method, url, headers, body, deadline);
      } catch (err) {
        const stale = err instanceof StaleSocketError;
        if (!stale || attempt >= MAX_STALE_RETRIES || deadline.aborted) {
          throw stale ? err.cause : err;
        }
      }
    }
  }

  #sendOnce(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: string | undefined,
    deadline: AbortSignal,
  ): Promise<{ response: HttpResponse; location?: string }> {
    return new Promise((resolve, reject) => {
      if (deadline.aborted) {
        reject(new TimeoutError('request timed out'));
        return;
      }
      const payload = body === undefined ? undefined : Buffer.from(body);
      const outHeaders: Record<string, string> = { ...headers };
      if (payload !== undefined) outHeaders['Content-Length'] = String(payload.length);
      const isHttps = url.protocol === 'https:';
      let req: http.ClientRequest;
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        deadline.removeEventListener('abort', onAbort);
        fn();
      };
      const onAbort = () => {
        const timedOut = (deadline.reason as { name?: string } | undefined)?.name !== 'AbortError';
        finish(() =>
          reject(timedOut ? new TimeoutError('request timed out') : new Error('request aborted')),
        );
        req.destroy();
      };
      try {
        req = (isHttps ? https : http).request(url, {
          method,
          headers: outHeaders,
          agent: isHttps ? this.#httpsAgent : this.#httpAgent,
        });
      } catch (err) {
        reject(err);
        return;
      }
      // node:http upper-cases methods; the reference runner sends actions verbatim (e.g. the
      // lowercase `push` of some extension suites). The request line is only built on end(),
      // so restoring the original spelling here is enough.
      if (req.method !== method) req.method = method;
      deadline.addEventListener('abort', onAbort, { once: true });
      req.on('error', (err: NodeJS.ErrnoException) => {
        const stale =
          req.reusedSocket && err.code !== undefined && STALE_SOCKET_CODES.has(err.code);
        finish(() => reject(stale ? new StaleSocketError(err) : err));
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (err) => finish(() => reject(err)));
        res.on('close', () => {
          if (!res.complete) finish(() => reject(new Error('connection closed mid-response')));
        });
        res.on('end', () => {
          const responseHeaders = firstHeaderValues(res.rawHeaders);
          const status = res.statusCode ?? 0;
          const location = isRedirect(status) ? res.headers.location : undefined;
          const response: HttpResponse = {
            status,
            headers: responseHeaders,
            body: Buffer.concat(chunks).toString('utf8'),
            url: url.href,
          };
          finish(() => resolve(location === undefined ? { response } : { response, location }));
        });
      });
      req.end(payload);
    });
  }
}

class StaleSocketError extends Error {
  override readonly cause: Error;
  constructor(cause: Error) {
    super(cause.message);
    this.cause = cause;
  }
}

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/** Keeps the first occurrence of each header name (case-insensitively), like Go's Header.Get. */
function firstHeaderValues(raw: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (seen.has(lower)) continue;
    seen.add(lower);
    out[name] = raw[i + 1]!;
  }
  return out;
}
