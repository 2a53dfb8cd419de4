/** Data loading for views: fetch, keep the last good data, refresh on live events. */
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { api, type Role } from './api.ts';
import { type OjsEvent, tail } from './live.ts';

export interface Session {
  role: Role;
  auth: boolean;
  store: string;
  signOut(): void;
}

export const SessionContext = createContext<Session>({
  role: 'viewer',
  auth: true,
  store: '',
  signOut() {},
});

export const useSession = () => useContext(SessionContext);
export const useCanAct = () => useSession().role === 'admin';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload(): void;
}

/** Coalesces bursts of events into one refresh. */
const REFRESH_DELAY_MS = 30;

/**
 * GETs `path` (null: nothing to load) and again whenever it changes, and,
 * with `live`, whenever the event tail brings an event `live` accepts. Live
 * reloads never overlap (one in flight, the next after it) and start at
 * most once per `minIntervalMs`, so a busy system's event stream does not
 * turn an open dashboard into load on the store.
 */
export function useApi<T>(
  path: string | null,
  live?: (event: OjsEvent) => boolean,
  minIntervalMs = 0,
): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({
    loading: path !== null,
  });
  const generation = useRef(0);
  const liveRef = useRef(live);
  liveRef.current = live;
  const flight = useRef({ running: false, startedAt: 0 });

  const load = useCallback(() => {
    if (path === null) return;
    const mine = ++generation.current;
    flight.current = { running: true, startedAt: Date.now() };
    setState((s) => ({ ...s, loading: true }));
    const settle = (next: (s: typeof state) => typeof state) => {
      if (mine !== generation.current) return;
      flight.current.running = false;
      setState(next);
    };
    api<T>(path).then(
      (data) => settle(() => ({ data, loading: false })),
      (error: Error) => settle((s) => ({ ...s, error, loading: false })),
    );
  }, [path]);

  useEffect(() => {
    setState({ loading: path !== null });
    load();
  }, [load]);

  useEffect(() => {
    if (liveRef.current === undefined) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const schedule = () => {
      clearTimeout(timer);
      const f = flight.current;
      if (f.running) {
        // Looked at again shortly: one reload in flight at a time.
        timer = setTimeout(schedule, REFRESH_DELAY_MS);
        return;
      }
      const wait = Math.max(REFRESH_DELAY_MS, f.startedAt + minIntervalMs - Date.now());
      timer = setTimeout(load, wait);
    };
    const unsubscribe = tail.subscribe((events) => {
      const accept = liveRef.current;
      if (accept !== undefined && events.some(accept)) schedule();
    });
    return () => {
      clearTimeout(timer);
      unsubscribe();
    };
  }, [load, live === undefined, minIntervalMs]);

  return { data: state.data, error: state.error, loading: state.loading, reload: load };
}

export const anyEvent = () => true;
export const jobEvents = (event: OjsEvent) => event.type.startsWith('job.');
