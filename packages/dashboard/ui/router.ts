/** Hash routes (`#/jobs?state=active`): the server serves one index.html for every view. */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  path: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const text = hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = text.split('?');
  return {
    path: path
      .split('/')
      .filter((p) => p !== '')
      .map(decodeURIComponent),
    query: new URLSearchParams(query),
  };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** `#/jobs?state=x`, dropping empty values. */
export function href(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, v);
  const text = params.toString();
  return `#/${path}${text === '' ? '' : `?${text}`}`;
}

export function navigate(path: string, query: Record<string, string | undefined> = {}): void {
  location.hash = href(path, query);
}
