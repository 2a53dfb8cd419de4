/**
 * The live tail of the event log. It follows the server's event stream
 * (`GET /ojs/v1/events`, `Accept: text/event-stream`), read with fetch so
 * the API key goes in the Authorization header (EventSource cannot send
 * one), and resumes after the last event it saw when the stream drops.
 * Where no stream can be opened (a server without it, a proxy that buffers
 * responses), it polls `GET /ojs/v1/events?after=` every 400 ms instead.
 * Subscribers only see "events arrived", whatever the transport.
 */
import { api, storedKey } from './api.ts';

export interface OjsEvent {
  id: string;
  type: string;
  time: string;
  subject?: string;
  data: Record<string, unknown>;
}

type Listener = (events: OjsEvent[]) => void;

const POLL_MS = 400;
const PAGE = 500;
/** Wait before reopening a dropped stream (the server's own `retry:` is 3 s; we resume sooner). */
const REOPEN_MS = 1000;

/** SSE frames (`id:`, `event:`, `data:` lines, blank-line separated) into events. */
export class FrameParser {
  #buffer = '';

  push(text: string): OjsEvent[] {
    this.#buffer += text.replace(/\r\n?/g, '\n');
    const events: OjsEvent[] = [];
    let end = this.#buffer.indexOf('\n\n');
    while (end >= 0) {
      const frame = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      const data = frame
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data !== '') {
        try {
          const event = JSON.parse(data) as OjsEvent;
          if (typeof event.id === 'string' && typeof event.type === 'string') events.push(event);
        } catch {
          // Not an event envelope (nothing the server sends today): skipped.
        }
      }
      end = this.#buffer.indexOf('\n\n');
    }
    return events;
  }
}

export class EventTail {
  #cursor: string | null = null;
  #listeners = new Set<Listener>();
  #statusListeners = new Set<(ok: boolean) => void>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #abort: AbortController | undefined;
  #running = false;
  /** 'stream' until a stream cannot be opened, then 'poll' for good. */
  mode: 'stream' | 'poll' = 'stream';
  ok = true;

  start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#stream();
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#abort?.abort();
  }

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onStatus(listener: (ok: boolean) => void): () => void {
    this.#statusListeners.add(listener);
    return () => this.#statusListeners.delete(listener);
  }

  #setOk(ok: boolean): void {
    if (ok === this.ok) return;
    this.ok = ok;
    for (const listener of this.#statusListeners) listener(ok);
  }

  #deliver(events: OjsEvent[]): void {
    if (events.length === 0) return;
    this.#cursor = events[events.length - 1]!.id;
    for (const listener of this.#listeners) listener(events);
  }

  /** Follows the stream until it ends, then reopens it after the last event seen. */
  async #stream(): Promise<void> {
    const abort = new AbortController();
    this.#abort = abort;
    const headers: Record<string, string> = { Accept: 'text/event-stream' };
    const key = storedKey();
    if (key) headers.Authorization = `Bearer ${key}`;
    if (this.#cursor !== null) headers['Last-Event-ID'] = this.#cursor;
    try {
      const response = await fetch('/ojs/v1/events', { headers, signal: abort.signal });
      const type = response.headers.get('content-type') ?? '';
      if (!response.ok || !type.startsWith('text/event-stream') || response.body === null) {
        await response.body?.cancel();
        return this.#fallBackToPolling();
      }
      this.#setOk(true);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new FrameParser();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        this.#deliver(parser.push(value));
      }
    } catch {
      // A dropped connection or stop(): reopened below while running.
    }
    if (!this.#running) return;
    this.#setOk(false);
    this.#timer = setTimeout(() => void this.#stream(), REOPEN_MS);
  }

  async #fallBackToPolling(): Promise<void> {
    this.mode = 'poll';
    if (this.#cursor === null) {
      try {
        const tail = await api<{ cursor: string | null }>('/ojs/v1/admin/dashboard/events?limit=1');
        this.#cursor = tail.cursor;
      } catch {
        this.#setOk(false);
      }
    }
    this.#schedulePoll();
  }

  #schedulePoll(): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => void this.#poll(), POLL_MS);
  }

  async #poll(): Promise<void> {
    try {
      let more = true;
      while (more && this.#running) {
        const query = this.#cursor === null ? '' : `&after=${encodeURIComponent(this.#cursor)}`;
        const page = await api<{ events: OjsEvent[]; has_more: boolean }>(
          `/ojs/v1/events?limit=${PAGE}${query}`,
        );
        this.#deliver(page.events);
        more = page.has_more;
      }
      this.#setOk(true);
    } catch {
      this.#setOk(false);
    }
    this.#schedulePoll();
  }
}

export const tail = new EventTail();
