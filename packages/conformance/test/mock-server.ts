/**
 * A tiny, deliberately imperfect OJS-like server for end-to-end runner tests. Its defects are
 * precise so the tests can assert exactly which conformance files pass and fail:
 *  - validation errors (400) are sent with `Content-Type: application/json` (wrong media type);
 *  - DELETE /ojs/v1/jobs/{id} answers 202 instead of 200;
 *  - GET /ojs/v1/jobs/{id} omits the `queue` field;
 *  - an empty fetch answers 204 instead of 200 {"jobs": []};
 *  - NACK ignores the retry policy's backoff: a retryable job is fetchable again after 100 ms;
 *  - GET /ojs/manifest declares level 4 with a non-SemVer `implementation.version` and no
 *    `backend`.
 * ACK, NACK (attempt counting, max_attempts, discard) and heartbeat are otherwise correct.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const OJS = 'application/openjobspec+json';

interface Job {
  id: string;
  type: string;
  queue: string;
  state: string;
  attempt: number;
  args: unknown[];
  max_attempts: number;
  result?: unknown;
  errors?: unknown[];
  /** Epoch ms when a retryable job becomes fetchable again. */
  retry_at?: number;
}

/** Retry delay the mock applies whatever the policy says (its deliberate defect). */
export const MOCK_RETRY_DELAY_MS = 100;

export interface MockServer {
  url: string;
  resets: number;
  /** Method and path of every request, in arrival order. */
  log: string[];
  /** Content-Type headers seen on POST /ojs/v1/jobs. */
  enqueueContentTypes: (string | undefined)[];
  close(): Promise<void>;
}

function uuidv7(): string {
  const u = randomUUID();
  return `${u.slice(0, 14)}7${u.slice(15)}`;
}

function send(res: http.ServerResponse, status: number, body: unknown, type = OJS): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': type, 'OJS-Version': '1.0' });
  res.end(text);
}

export async function startMockServer(): Promise<MockServer> {
  const jobs = new Map<string, Job>();
  // Parallel fetches meet here: the first waits (bounded) for the second to arrive.
  let waitingFetch: (() => void) | null = null;
  const state: MockServer = {
    url: '',
    resets: 0,
    log: [],
    enqueueContentTypes: [],
    close: async () => {},
  };

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: Record<string, unknown> = {};
    try {
      body = text === '' ? {} : JSON.parse(text);
    } catch {
      send(res, 400, { error: { code: 'invalid_payload' } });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const route = `${req.method} ${url.pathname}`;
    state.log.push(route);
    const jobMatch = /^\/ojs\/v1\/jobs\/([^/]+)$/.exec(url.pathname);

    if (route === 'POST /admin/reset') {
      state.resets++;
      jobs.clear();
      res.writeHead(204).end();
    } else if (route === 'POST /ojs/v1/jobs') {
      state.enqueueContentTypes.push(req.headers['content-type']);
      if (typeof body.type !== 'string') {
        send(
          res,
          400,
          { error: { code: 'invalid_request', message: 'type is required' } },
          'application/json',
        );
        return;
      }
      const options = (body.options ?? {}) as {
        queue?: string;
        retry?: { max_attempts?: number };
      };
      const job: Job = {
        id: uuidv7(),
        type: body.type,
        queue: options.queue ?? 'default',
        state: 'available',
        attempt: 0,
        args: (body.args as unknown[]) ?? [],
        max_attempts: options.retry?.max_attempts ?? 3,
      };
      jobs.set(job.id, job);
      send(res, 201, { job });
    } else if (req.method === 'GET' && jobMatch) {
      const job = jobs.get(jobMatch[1]!);
      if (!job) return send(res, 404, { error: { code: 'not_found' } });
      const { queue: _omitted, ...rest } = job;
      send(res, 200, { job: rest });
    } else if (req.method === 'DELETE' && jobMatch) {
      const job = jobs.get(jobMatch[1]!);
      if (!job) return send(res, 404, { error: { code: 'not_found' } });
      job.state = 'cancelled';
      send(res, 202, { job });
    } else if (route === 'POST /ojs/v1/workers/fetch') {
      const queues = (body.queues as string[]) ?? ['default'];
      const now = Date.now();
      const job = [...jobs.values()].find(
        (j) =>
          (j.state === 'available' || (j.state === 'retryable' && (j.retry_at ?? 0) <= now)) &&
          queues.includes(j.queue),
      );
      if (queues.includes('parallel')) {
        // Answer only once both parallel fetches are in flight; a sequential runner gets 503.
        if (waitingFetch) {
          waitingFetch();
          waitingFetch = null;
        } else {
          const met = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(false), 2000);
            waitingFetch = () => {
              clearTimeout(timer);
              resolve(true);
            };
          });
          if (!met) return send(res, 503, { error: { code: 'not_parallel' } });
        }
        return send(res, 200, { jobs: [] });
      }
      if (!job) return send(res, 204, undefined);
      job.state = 'active';
      job.attempt++;
      send(res, 200, { jobs: [job] });
    } else if (route === 'POST /ojs/v1/workers/ack' || route === 'POST /ojs/v1/workers/nack') {
      const job = jobs.get(String(body.job_id));
      if (!job) return send(res, 404, { error: { code: 'not_found' } });
      if (job.state !== 'active') return send(res, 409, { error: { code: 'conflict' } });
      if (route.endsWith('/ack')) {
        job.state = 'completed';
        if (body.result !== undefined) job.result = body.result;
      } else {
        job.errors = [...(job.errors ?? []), body.error];
        const retryable = (body.error as { retryable?: boolean } | undefined)?.retryable !== false;
        if (!retryable || job.attempt >= job.max_attempts) job.state = 'discarded';
        else {
          job.state = 'retryable';
          job.retry_at = Date.now() + MOCK_RETRY_DELAY_MS;
        }
      }
      send(res, 200, { id: job.id, state: job.state, attempt: job.attempt });
    } else if (route === 'POST /ojs/v1/workers/heartbeat') {
      send(res, 200, { state: 'running' });
    } else if (route === 'GET /ojs/manifest') {
      send(
        res,
        200,
        {
          specversion: '1.0',
          implementation: { name: 'mock', version: '1', language: 'typescript' },
          conformance_level: 4,
          conformance_tier: 'runtime',
          protocols: ['http'],
          unique_job_strength: 'strong',
        },
        'application/json',
      );
    } else if (route === 'POST /echo') {
      send(res, 200, { received: body, raw: text });
    } else if (route === 'GET /ojs/v1/health') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    } else if (route === 'GET /drop-after-response') {
      // Keep-alive response, then the server closes the connection behind the client's back.
      res.writeHead(200, { 'Content-Type': OJS, Connection: 'keep-alive' });
      res.end(JSON.stringify({ ok: true }), () => req.socket.destroy());
    } else if (route === 'GET /hang') {
      // Never answers; the runner's timeout must fire.
    } else {
      send(res, 404, { error: { code: 'not_found' } });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
