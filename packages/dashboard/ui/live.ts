/**
 * The live tail of the event log. Today it polls GET /ojs/v1/events with
 * the `after` cursor every 400 ms; subscribers only see "events arrived",
 * so switching to a server-sent event stream changes this module alone.
 */
import { api } from './api.ts';

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

export class EventTail {
  #cursor: string | null = null;
  #listeners = new Set<Listener>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #statusListeners = new Set<(ok: boolean) => void>();
  ok = true;

  /** Starts after the newest event now in the log. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      const tail = await api<{ cursor: string | null }>('/ojs/v1/admin/dashboard/events?limit=1');
      this.#cursor = tail.cursor;
    } catch {
      this.#setOk(false);
    }
    this.#schedule();
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
  }

  get running(): boolean {
    return this.#running;
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

  #schedule(): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => void this.#poll(), POLL_MS);
  }

  async #poll(): Promise<void> {
    try {
      let more = true;
      while (more && this.#running) {
        const query = this.#cursor === null ? '' : `&after=${encodeURIComponent(this.#cursor)}`;
        const page = await api<{ events: OjsEvent[]; cursor: string | null; has_more: boolean }>(
          `/ojs/v1/events?limit=${PAGE}${query}`,
        );
        if (page.events.length > 0) {
          this.#cursor = page.events[page.events.length - 1]!.id;
          for (const listener of this.#listeners) listener(page.events);
        }
        more = page.has_more;
      }
      this.#setOk(true);
    } catch {
      this.#setOk(false);
    }
    this.#schedule();
  }
}

export const tail = new EventTail();
