/**
 * A small Server-Sent Events reader for the tests: frames as they arrive,
 * awaited one by one (no sleeps), with a bound on each wait.
 */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
  comment?: string;
}

export class SseReader {
  readonly response: Response;
  readonly #controller: AbortController;
  readonly #frames: SseFrame[] = [];
  #waiter: (() => void) | undefined;
  #ended = false;

  private constructor(response: Response, controller: AbortController) {
    this.response = response;
    this.#controller = controller;
    if (response.body !== null && response.headers.get('content-type') === 'text/event-stream') {
      void this.#read(response.body);
    } else this.#ended = true;
  }

  static async open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const controller = new AbortController();
    const response = await fetch(url, {
      headers: { accept: 'text/event-stream', ...headers },
      signal: controller.signal,
    });
    return new SseReader(response, controller);
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          this.#frames.push(parse(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
        }
        this.#wake();
      }
    } catch {
      // aborted by close()
    }
    this.#ended = true;
    this.#wake();
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  /** The next frame that is an event (comments and `retry:` skipped); undefined at the end. */
  async nextEvent(
    timeoutMs = 10_000,
  ): Promise<(SseFrame & { json: Record<string, unknown> }) | undefined> {
    for (;;) {
      const frame = await this.next(timeoutMs);
      if (frame === undefined) return undefined;
      if (frame.event !== undefined) return { ...frame, json: JSON.parse(frame.data ?? 'null') };
    }
  }

  /** The next frame of any kind; undefined when the stream ended. */
  async next(timeoutMs = 10_000): Promise<SseFrame | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.#frames.length === 0) {
      if (this.#ended) return undefined;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no SSE frame within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.#frames.shift();
  }

  close(): void {
    this.#controller.abort();
  }
}

function parse(block: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1);
    else {
      const colon = line.indexOf(':');
      const field = line.slice(0, colon);
      const value = line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') frame.id = value;
      else if (field === 'event') frame.event = value;
      else if (field === 'data')
        frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
      else if (field === 'retry') frame.retry = Number(value);
    }
  }
  return frame;
}
