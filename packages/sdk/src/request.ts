/**
 * What the HTTP transport sends its requests through: one exchange (method,
 * headers, string body, a deadline, an optional AbortSignal) answered by a
 * status, `headers.get` and `text()`.
 *
 * - On Node, unless a `fetch` is passed, node:http / node:https with a
 *   keep-alive Agent. The global fetch (undici) costs the client several times
 *   the CPU per request (measured ~550-800 µs against ~120-200 µs at 50
 *   requests in flight), which caps a single producer's enqueue rate.
 * - Elsewhere (browsers, Deno, Bun) and whenever `fetch` is passed, fetch.
 *
 * Both reject the same way, which the transport classifies: the caller's
 * signal aborted (the transport checks `signal.aborted`), `SendTimeout` when
 * the deadline passed (it covers the response body too), or the network
 * error (its `code`, or its `cause`'s, e.g. `ECONNREFUSED`).
 */
import type * as Http from 'node:http';

export interface SendInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Deadline of the whole exchange: connecting, the response and its body. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface ResponseHeaders {
  get(name: string): string | null;
}

export interface SendResponse {
  status: number;
  headers: ResponseHeaders;
  /** The body; rejects if it is cut off, the deadline passes or the signal aborts. */
  text(): Promise<string>;
}

export type Send = (url: string, init: SendInit) => Promise<SendResponse>;

/** The exchange did not complete within `timeoutMs`; `cause` is what the abort produced. */
export class SendTimeout extends Error {
  constructor(timeoutMs: number, cause?: unknown) {
    super(`No complete response within ${timeoutMs} ms.`, { cause });
    this.name = 'SendTimeout';
  }
}

export function abortReason(signal: AbortSignal): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const error = new Error('The operation was aborted.');
  error.name = 'AbortError';
  return error;
}

// ---------------------------------------------------------------- fetch

/** Sends through a fetch implementation (one AbortController and timer per request). */
export function fetchSend(fetchImpl: typeof fetch): Send {
  return async (url, init) => {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, init.timeoutMs);
    const { signal } = init;
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method: init.method,
        headers: init.headers,
        body: init.body,
        signal: controller.signal,
      });
    } catch (error) {
      done();
      throw timedOut ? new SendTimeout(init.timeoutMs, error) : error;
    }
    return {
      status: response.status,
      headers: response.headers,
      async text() {
        try {
          return await response.text();
        } catch (error) {
          throw timedOut ? new SendTimeout(init.timeoutMs, error) : error;
        } finally {
          done();
        }
      },
    };
  };
}

// ---------------------------------------------------------------- node:http

type NodeProcess = {
  versions?: Record<string, string | undefined>;
  getBuiltinModule?: (id: string) => unknown;
};

function nodeProcess(): NodeProcess | undefined {
  return (globalThis as { process?: NodeProcess }).process;
}

/** Node itself (not Deno or Bun, which also set `process.versions.node`). */
export function isNode(): boolean {
  const versions = nodeProcess()?.versions;
  return (
    typeof versions?.node === 'string' &&
    versions.bun === undefined &&
    versions.deno === undefined &&
    !('Deno' in globalThis) &&
    !('Bun' in globalThis)
  );
}

type HttpModule = Pick<typeof Http, 'request' | 'Agent'>;

/** node:http or node:https: synchronously where `process.getBuiltinModule` exists (Node >= 20.16). */
function loadModule(name: 'node:http' | 'node:https'): HttpModule | Promise<HttpModule> {
  const getBuiltin = nodeProcess()?.getBuiltinModule;
  if (typeof getBuiltin === 'function') return getBuiltin(name) as HttpModule;
  // A variable specifier keeps browser bundlers from resolving it.
  const specifier: string = name;
  return import(/* webpackIgnore: true */ /* @vite-ignore */ specifier) as Promise<HttpModule>;
}

/**
 * An idle connection is closed after this long (undici's default), before a
 * server with a common keep-alive timeout (5 s) closes it as a request is
 * being sent on it. Node >= 20 lowers it further from a server's
 * `Keep-Alive: timeout=N` hint. It applies to idle connections only: a
 * request waiting longer (a long poll) is not affected.
 */
const IDLE_TIMEOUT_MS = 4_000;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 20;
const BODY_HEADERS = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
]);

interface Protocol {
  module: HttpModule | Promise<HttpModule>;
  agent?: Http.Agent;
}

export interface NodeHttpOptions {
  /** Connections per origin (default 64); requests beyond wait for a free one. */
  maxSockets?: number;
}

/**
 * Requests over node:http / node:https with one keep-alive Agent per
 * protocol (`lifo`: the most recently used connection first, so idle ones
 * age out). Follows redirects as fetch does. `close()` ends the idle
 * connections; connections in use end when their exchange does.
 */
export class NodeHttp {
  readonly maxSockets: number;
  readonly #protocols = new Map<string, Protocol>();

  constructor(options: NodeHttpOptions = {}) {
    this.maxSockets = options.maxSockets ?? 64;
  }

  readonly send: Send = (url, init) => {
    if (init.signal?.aborted) return Promise.reject(abortReason(init.signal));
    let target: URL;
    try {
      target = new URL(url);
    } catch (error) {
      return Promise.reject(error);
    }
    const protocol = this.#protocol(target.protocol);
    if (protocol === undefined) {
      return Promise.reject(new TypeError(`Unsupported protocol in ${url} (use http: or https:).`));
    }
    if (protocol.module instanceof Promise) {
      // Node < 20.16, first request: the module is being imported.
      return protocol.module.then((module) => {
        protocol.module = module;
        return this.send(url, init);
      });
    }
    return this.#exchange(target, init);
  };

  /** Ends idle keep-alive connections, and each busy one when its exchange ends. */
  close(): void {
    for (const protocol of this.#protocols.values()) {
      const agent = protocol.agent;
      if (agent === undefined) continue;
      protocol.agent = undefined; // a later request gets a fresh Agent
      agent.keepSocketAlive = () => false;
      for (const sockets of Object.values(agent.freeSockets)) {
        for (const socket of sockets ?? []) socket.destroy();
      }
    }
  }

  #protocol(scheme: string): Protocol | undefined {
    let protocol = this.#protocols.get(scheme);
    if (protocol === undefined) {
      if (scheme !== 'http:' && scheme !== 'https:') return undefined;
      protocol = { module: loadModule(scheme === 'http:' ? 'node:http' : 'node:https') };
      this.#protocols.set(scheme, protocol);
    }
    return protocol;
  }

  #agent(protocol: Protocol, module: HttpModule): Http.Agent {
    protocol.agent ??= new module.Agent({
      keepAlive: true,
      maxSockets: this.maxSockets,
      scheduling: 'lifo',
      timeout: IDLE_TIMEOUT_MS,
    });
    return protocol.agent;
  }

  #exchange(first: URL, init: SendInit): Promise<SendResponse> {
    const { signal, timeoutMs } = init;
    return new Promise<SendResponse>((resolve, reject) => {
      let request: Http.ClientRequest | undefined;
      let responded = false;
      let finished = false;
      let text = '';
      let bodyError: unknown;
      let waiter: { resolve: (text: string) => void; reject: (error: unknown) => void } | undefined;

      const end = (error?: unknown) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (error !== undefined) request?.destroy();
        if (!responded) {
          reject(error);
        } else if (error !== undefined) {
          bodyError = error;
          waiter?.reject(error);
        } else {
          waiter?.resolve(text);
        }
      };
      // One timer per exchange, no AbortController: destroying the request aborts it.
      const timer = setTimeout(() => end(new SendTimeout(timeoutMs)), timeoutMs);
      const onAbort = () => end(abortReason(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });

      const start = (
        target: URL,
        method: string,
        headers: Record<string, string>,
        body: string | undefined,
        redirects: number,
      ) => {
        const protocol = this.#protocol(target.protocol);
        if (protocol === undefined || protocol.module instanceof Promise) {
          // A redirect to another protocol whose module is not loaded (Node < 20.16 only).
          if (protocol?.module instanceof Promise) {
            protocol.module.then(
              (module) => {
                protocol.module = module;
                if (!finished) start(target, method, headers, body, redirects);
              },
              (error: unknown) => end(error),
            );
            return;
          }
          end(new TypeError(`Unsupported protocol in ${target.href} (use http: or https:).`));
          return;
        }
        const sent: Record<string, string | number> = { ...headers };
        if (body !== undefined) sent['Content-Length'] = Buffer.byteLength(body);
        else if (method !== 'GET' && method !== 'HEAD') sent['Content-Length'] = 0;
        let req: Http.ClientRequest;
        try {
          req = protocol.module.request(
            target,
            { method, headers: sent, agent: this.#agent(protocol, protocol.module) },
            (res) => onResponse(req, res, target, method, headers, body, redirects),
          );
        } catch (error) {
          // e.g. a header value with invalid characters (fetch rejects those too).
          end(error);
          return;
        }
        request = req;
        // Only the current request's errors count (not a redirect's drained response).
        req.on('error', (error) => {
          if (request === req) end(error);
        });
        req.end(body);
      };

      const onResponse = (
        req: Http.ClientRequest,
        res: Http.IncomingMessage,
        target: URL,
        method: string,
        headers: Record<string, string>,
        body: string | undefined,
        redirects: number,
      ) => {
        if (finished || request !== req) {
          res.resume();
          return;
        }
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (REDIRECTS.has(status) && location !== undefined) {
          res.resume();
          if (redirects >= MAX_REDIRECTS) {
            end(new TypeError('redirect count exceeded'));
            return;
          }
          let next: URL;
          try {
            next = new URL(location, target);
          } catch (error) {
            end(error);
            return;
          }
          let nextMethod = method;
          let nextBody = body;
          let nextHeaders = headers;
          if (
            (status === 303 && method !== 'GET' && method !== 'HEAD') ||
            ((status === 301 || status === 302) && method === 'POST')
          ) {
            nextMethod = 'GET';
            nextBody = undefined;
            nextHeaders = omit(nextHeaders, (name) => BODY_HEADERS.has(name));
          }
          if (next.origin !== target.origin) {
            nextHeaders = omit(nextHeaders, (name) => name === 'authorization');
          }
          start(next, nextMethod, nextHeaders, nextBody, redirects + 1);
          return;
        }
        responded = true;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => end());
        res.on('error', (error) => end(error));
        res.on('close', () => {
          if (!res.complete) end(cutOff());
        });
        resolve({
          status,
          headers: { get: (name) => headerValue(res.headers, name) },
          text: () =>
            new Promise<string>((resolveText, rejectText) => {
              if (!finished) waiter = { resolve: resolveText, reject: rejectText };
              else if (bodyError !== undefined) rejectText(bodyError);
              else resolveText(text);
            }),
        });
      };

      start(first, init.method, init.headers, init.body, 0);
    });
  }
}

function omit(
  headers: Record<string, string>,
  drop: (lowerCaseName: string) => boolean,
): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!drop(name.toLowerCase())) kept[name] = value;
  }
  return kept;
}

function headerValue(headers: Http.IncomingHttpHeaders, name: string): string | null {
  const value = headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}

function cutOff(): Error {
  return Object.assign(new Error('The connection closed before the response was complete.'), {
    code: 'ECONNRESET',
  });
}
