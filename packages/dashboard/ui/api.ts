/**
 * Calls to the OJS API with the operator's key. The key lives in
 * sessionStorage (gone when the tab closes) and is sent as
 * `Authorization: Bearer`; errors come back as the server's OJS envelope.
 */
const KEY = 'ojs.dashboard.apiKey';

export type Role = 'viewer' | 'admin';

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, key);
}

type Query = Record<string, string | number | boolean | undefined | null>;

/** `/path?a=1&b=2`, dropping empty values. */
export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

export async function api<T>(
  path: string,
  options: { method?: string; body?: unknown; key?: string | null } = {},
): Promise<T> {
  const key = options.key === undefined ? storedKey() : options.key;
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method: options.method ?? 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new ApiError(
      response.status,
      'bad_response',
      `Unexpected response: ${text.slice(0, 200)}`,
    );
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(
      response.status,
      error?.code ?? 'http_error',
      error?.message ?? `HTTP ${response.status}`,
    );
  }
  return body as T;
}

export const enc = encodeURIComponent;
