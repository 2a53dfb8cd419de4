/**
 * StreamEvents (features.md §11): the events recorded from the moment the
 * stream opens, read from the same event log GET /ojs/v1/events pages
 * through (so both bindings show the same events, ids included), filtered
 * by queues, event types, job id and workflow id (ANDed; none = all), with
 * a `stream.keepalive` event after 15 s of silence. The log is shared by
 * every server on a store, so events of jobs handled by other processes
 * are streamed too.
 */
import * as grpc from '@grpc/grpc-js';
import { eventTenant, makeEvent, type OjsEvent } from '@ojs/core';
import type { Engine } from '@ojs/engine';
import { eventToProto } from './convert.ts';
import { Waker } from './waker.ts';

type Obj = Record<string, unknown>;

const POLL_MS = 100;
const PAGE = 500;
export const KEEPALIVE_MS = 15_000;

function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.length > 0 ? (value as string[]) : undefined;
}

export class EventStreams {
  readonly #open = new Map<() => void, grpc.ServerWritableStream<Obj, Obj>>();
  #closed = false;

  async serve(
    engine: Engine,
    call: grpc.ServerWritableStream<Obj, Obj>,
    ready: () => void,
    tenant?: string,
  ): Promise<void> {
    const request = call.request;
    const types = strings(request.event_types);
    const queues = strings(request.queues);
    const jobId = typeof request.job_id === 'string' && request.job_id ? request.job_id : undefined;
    const workflowId =
      typeof request.workflow_id === 'string' && request.workflow_id
        ? request.workflow_id
        : undefined;
    let closed = false;
    const waker = new Waker();
    const stop = () => {
      closed = true;
      waker.wake();
    };
    call.once('cancelled', stop);
    call.once('close', stop);
    this.#open.set(stop, call);
    const keep = (event: OjsEvent) => {
      const data = (event.data ?? {}) as Obj;
      if (jobId !== undefined && data.job_id !== jobId && event.subject !== jobId) return false;
      if (workflowId !== undefined && data.workflow_id !== workflowId) return false;
      // A tenant's stream carries its jobs' events only.
      if (tenant !== undefined && eventTenant(event) !== tenant) return false;
      return true;
    };
    try {
      // Start where the log ends now; the cursor is the newest event's id.
      const [newest] = await engine.store.listEvents({ limit: 1, newestFirst: true });
      let cursor = newest?.id;
      ready();
      let lastSent = Date.now();
      while (!closed && !this.#closed) {
        // The cursor advances over every event, the filters only pick what is sent.
        const page = await engine.store.listEvents({
          types,
          queues,
          after: cursor,
          limit: PAGE,
        });
        for (const event of page) {
          if (closed) return;
          cursor = event.id;
          if (keep(event)) {
            call.write(eventToProto(event));
            lastSent = Date.now();
          }
        }
        if (page.length === PAGE) continue;
        if (Date.now() - lastSent >= KEEPALIVE_MS) {
          call.write(eventToProto(makeEvent('stream.keepalive', undefined, {}, engine.now())));
          lastSent = Date.now();
        }
        await waker.sleep(POLL_MS);
      }
    } finally {
      this.#open.delete(stop);
    }
  }

  /** Shutdown: every open stream ends with UNAVAILABLE. */
  closeAll(): void {
    this.#closed = true;
    for (const [stop, call] of [...this.#open]) {
      stop();
      call.emit('error', {
        code: grpc.status.UNAVAILABLE,
        details: 'The server is shutting down; reconnect elsewhere.',
      });
    }
  }
}
