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
 * with `live`, whenever the event tail brings an event `live` accepts.
 */
export function useApi<T>(path: string | null, live?: (event: OjsEvent) => boolean): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({
    loading: path !== null,
  });
  const generation = useRef(0);
  const liveRef = useRef(live);
  liveRef.current = live;

  const load = useCallback(() => {
    if (path === null) return;
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    api<T>(path).then(
      (data) => {
        if (mine === generation.current) setState({ data, loading: false });
      },
      (error: Error) => {
        if (mine === generation.current) setState((s) => ({ ...s, error, loading: false }));
      },
    );
  }, [path]);

  useEffect(() => {
    setState({ loading: path !== null });
    load();
  }, [load]);

  useEffect(() => {
    if (liveRef.current === undefined) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const unsubscribe = tail.subscribe((events) => {
      const accept = liveRef.current;
      if (accept === undefined || !events.some(accept)) return;
      clearTimeout(timer);
      timer = setTimeout(load, REFRESH_DELAY_MS);
    });
    return () => {
      clearTimeout(timer);
      unsubscribe();
    };
  }, [load, live === undefined]);

  return { data: state.data, error: state.error, loading: state.loading, reload: load };
}

export const anyEvent = () => true;
export const jobEvents = (event: OjsEvent) => event.type.startsWith('job.');
