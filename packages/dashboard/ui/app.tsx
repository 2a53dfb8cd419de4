/**
 * The shell: sign-in gate (API key -> role), navigation, theme, live
 * status, and the view for the current hash route.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, type Role, storedKey, storeKey } from './api.ts';
import { SessionContext } from './hooks.ts';
import { tail } from './live.ts';
import { useRoute } from './router.ts';
import { ThemeToggle } from './theme.tsx';
import { CronView } from './views/cron.tsx';
import { DeadLetterView } from './views/dead-letter.tsx';
import { JobView } from './views/job.tsx';
import { JobsView } from './views/jobs.tsx';
import { LoginView } from './views/login.tsx';
import { OutboxView } from './views/outbox.tsx';
import { OverviewView } from './views/overview.tsx';
import { QueuesView } from './views/queues.tsx';
import { SchedulingView } from './views/scheduling.tsx';
import { TenantsView } from './views/tenants.tsx';
import { WebhooksView } from './views/webhooks.tsx';
import { WorkersView } from './views/workers.tsx';
import { WorkflowsView, WorkflowView } from './views/workflows.tsx';

interface SessionInfo {
  role: Role;
  auth: boolean;
  store: string;
}

const NAV: [path: string, label: string][] = [
  ['overview', 'Overview'],
  ['queues', 'Queues'],
  ['jobs', 'Jobs'],
  ['dead-letter', 'Dead letter'],
  ['outbox', 'Outbox'],
  ['cron', 'Cron'],
  ['workflows', 'Workflows'],
  ['workers', 'Workers'],
  ['webhooks', 'Webhooks'],
  ['tenants', 'Tenants'],
  ['scheduling', 'Scheduling'],
];

type Gate =
  | { kind: 'checking' }
  | { kind: 'login'; message?: string }
  | { kind: 'in'; session: SessionInfo };

/** Asks the server who the key is; anything but a viewer or admin key goes back to sign-in. */
export async function checkKey(key: string | null): Promise<Gate> {
  try {
    const session = await api<SessionInfo>('/ojs/v1/admin/dashboard/session', { key });
    return { kind: 'in', session };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      return { kind: 'login', message: key === null ? undefined : 'That API key is not valid.' };
    }
    if (error instanceof ApiError && error.status === 403) {
      return {
        kind: 'login',
        message: 'That key’s role cannot open the dashboard: use a viewer or admin key.',
      };
    }
    return { kind: 'login', message: `The server did not answer: ${(error as Error).message}` };
  }
}

export function App() {
  const [gate, setGate] = useState<Gate>({ kind: 'checking' });
  const route = useRoute();
  const [liveOk, setLiveOk] = useState(true);

  useEffect(() => {
    checkKey(storedKey()).then(setGate);
  }, []);
  useEffect(() => {
    if (gate.kind !== 'in') return;
    tail.start();
    const off = tail.onStatus(setLiveOk);
    return () => {
      off();
      tail.stop();
    };
  }, [gate.kind]);

  if (gate.kind === 'checking') return <p class="boot">Connecting…</p>;
  if (gate.kind === 'login') {
    return (
      <LoginView
        message={gate.message}
        submit={async (key) => {
          const next = await checkKey(key);
          if (next.kind === 'in') storeKey(key);
          setGate(next);
        }}
      />
    );
  }
  const { session } = gate;
  const signOut = () => {
    storeKey(null);
    setGate({ kind: 'login' });
  };
  const section = route.path[0] ?? 'overview';
  return (
    <SessionContext.Provider value={{ ...session, signOut }}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/overview">
          OJS
        </a>
        <nav aria-label="Views">
          <ul>
            {NAV.map(([path, label]) => (
              <li key={path}>
                <a href={`#/${path}`} aria-current={section === path ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="session">
          <span
            class={`live ${liveOk ? 'ok' : 'down'}`}
            role="status"
            title={liveOk ? 'Live updates on' : 'Live updates interrupted; retrying'}
          >
            {liveOk ? 'Live' : 'Offline'}
          </span>
          <span class="role" title="The role of your API key">
            {session.role === 'admin' ? 'admin' : 'read-only'}
          </span>
          <ThemeToggle />
          {session.auth ? (
            <button type="button" onClick={signOut}>
              Sign out
            </button>
          ) : null}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <View path={route.path} query={route.query} />
      </main>
    </SessionContext.Provider>
  );
}

function View({ path, query }: { path: string[]; query: URLSearchParams }) {
  const [section = 'overview', id] = path;
  switch (section) {
    case 'overview':
      return <OverviewView />;
    case 'queues':
      return <QueuesView />;
    case 'jobs':
      return id === undefined ? <JobsView query={query} /> : <JobView id={id} />;
    case 'dead-letter':
      return <DeadLetterView query={query} />;
    case 'outbox':
      return <OutboxView query={query} />;
    case 'cron':
      return <CronView />;
    case 'workflows':
      return id === undefined ? <WorkflowsView /> : <WorkflowView id={id} />;
    case 'workers':
      return <WorkersView />;
    case 'webhooks':
      return <WebhooksView />;
    case 'tenants':
      return <TenantsView />;
    case 'scheduling':
      return <SchedulingView />;
    default:
      return (
        <p role="alert">
          No view named “{section}”. <a href="#/overview">Go to the overview</a>.
        </p>
      );
  }
}
