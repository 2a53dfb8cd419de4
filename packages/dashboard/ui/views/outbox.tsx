/**
 * Outbox: transactional enqueue's rows (PostgreSQL store) that applications
 * committed and that are not jobs yet, above all the invalid ones, kept with
 * the error the server gave them until an operator retries (after fixing
 * the cause) or deletes them. Oldest first, filtered by state.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, enc, withQuery } from '../api.ts';
import {
  Action,
  ErrorBox,
  fmt,
  Head,
  Header,
  Json,
  Loading,
  Notice,
  Pager,
  Time,
} from '../components.tsx';
import { useApi, useSession } from '../hooks.ts';
import { navigate } from '../router.ts';

interface OutboxEntry {
  id: string;
  envelope: unknown;
  state: 'pending' | 'invalid';
  attempts: number;
  error: { code: string; message: string; retryable: boolean; details?: unknown } | null;
  created_at: string;
  updated_at: string;
}

interface OutboxPage {
  entries: OutboxEntry[];
  counts: { pending: number; invalid: number };
  relaying: boolean;
  pagination: { limit: number; next_after: string | null };
}

const STATES = ['pending', 'invalid'] as const;
const PAGE = 50;
/** Invalid rows raise no event: the listing is also read again this often. */
const REFRESH_MS = 5000;

/** A relayed row became a job. */
const relayEvents = (e: { type: string }) => e.type === 'job.enqueued';

const STATE_BADGE: Record<OutboxEntry['state'], string> = {
  pending: 'state-pending',
  invalid: 'state-discarded',
};

const envelopeField = (entry: OutboxEntry, name: string): string | undefined => {
  const value = (entry.envelope as Record<string, unknown> | null)?.[name];
  return typeof value === 'string' ? value : undefined;
};

export function OutboxView({ query }: { query: URLSearchParams }) {
  const state = query.get('state') ?? '';
  const afters = (query.get('afters') ?? '').split(' ').filter((a) => a !== '');
  const page = useApi<OutboxPage>(
    withQuery('/ojs/v1/admin/outbox', { state, after: afters.at(-1), limit: PAGE }),
    relayEvents,
    1000,
  );
  const { store } = useSession();
  const [notice, setNotice] = useState<string>();
  const unsupported = page.error instanceof ApiError && page.error.code === 'unsupported';
  const { reload } = page;
  useEffect(() => {
    if (unsupported) return;
    const timer = setInterval(reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload, unsupported]);
  const acted = (text: string) => () => {
    setNotice(text);
    reload();
  };
  const data = page.data;
  return (
    <section>
      <Header title="Outbox">
        <label for="outbox-state">State</label>
        <select
          id="outbox-state"
          value={state}
          onChange={(e) => navigate('outbox', { state: (e.target as HTMLSelectElement).value })}
        >
          <option value="">any</option>
          {STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </Header>
      <p class="muted">
        Jobs your application enqueued inside its own PostgreSQL transactions (
        <code>SELECT ojs.enqueue(…)</code>) that are not jobs yet. Each committed row is relayed
        through the normal enqueue path; a row the server refuses stays here, invalid, with its
        error, until you retry it (after fixing the cause) or delete it.
      </p>
      <Notice text={notice} />
      {unsupported ? (
        <p class="notice" role="status">
          Transactional enqueue needs PostgreSQL: this server runs on the {store || 'current'}{' '}
          store, which has no outbox. Start <code>ojs serve --store postgres://…</code> to enqueue
          jobs inside your application's transactions.
        </p>
      ) : (
        <ErrorBox error={page.error} />
      )}
      {unsupported ? null : data === undefined ? (
        <Loading what="the outbox" />
      ) : (
        <>
          <ul class="tiles" aria-label="Outbox rows by state">
            {STATES.map((s) => (
              <li key={s}>
                <a href={`#/outbox?state=${s}`} class="tile" data-outbox-state={s}>
                  <span class={`badge ${STATE_BADGE[s]}`}>{s}</span>
                  <strong>{fmt(data.counts[s])}</strong>
                </a>
              </li>
            ))}
          </ul>
          {data.relaying ? null : (
            <p class="muted">
              This server process does not relay the outbox (<code>--no-outbox-relay</code>);
              another server on the database does.
            </p>
          )}
          {data.entries.length === 0 ? (
            <p class="muted">
              {state === ''
                ? 'The outbox is empty: every committed row is a job.'
                : `No ${state} rows.`}
            </p>
          ) : (
            <div class="scroll">
              <table class="table">
                <Head
                  cols={[
                    'Row',
                    'State',
                    'Job',
                    ['Attempts', 'num'],
                    'Error',
                    'Committed',
                    'Actions',
                  ]}
                />
                <tbody>
                  {data.entries.map((entry) => (
                    <OutboxRow key={entry.id} entry={entry} acted={acted} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <Pager
            cursors={afters}
            next={data.pagination.next_after ?? undefined}
            total={{
              value:
                state === 'pending' || state === 'invalid'
                  ? data.counts[state]
                  : data.counts.pending + data.counts.invalid,
              onDemand: false,
              count() {},
            }}
            shown={data.entries.length}
            labels={['← Older', 'Newer →']}
            go={(next) => navigate('outbox', { state, afters: next.join(' ') || undefined })}
          />
        </>
      )}
    </section>
  );
}

function OutboxRow(props: { entry: OutboxEntry; acted: (text: string) => () => void }) {
  const { entry, acted } = props;
  const type = envelopeField(entry, 'type');
  const jobId = envelopeField(entry, 'id');
  return (
    <tr data-outbox-row={entry.id}>
      <th scope="row" class="mono">
        {entry.id}
      </th>
      <td>
        <span class={`badge ${STATE_BADGE[entry.state]}`}>{entry.state}</span>
      </td>
      <td>
        {type === undefined ? <span class="muted">no type</span> : <span>{type}</span>}
        {jobId ? <div class="muted small mono">{jobId}</div> : null}
        <details>
          <summary class="small">Envelope</summary>
          <Json value={entry.envelope} label={`Envelope of outbox row ${entry.id}`} />
        </details>
      </td>
      <td class="num">{fmt(entry.attempts)}</td>
      <td class="error-cell">
        {entry.error ? (
          <>
            <span class="mono">{entry.error.code}</span>: {entry.error.message}
            {entry.state === 'pending' ? (
              <div class="muted small">put off; relayed again shortly</div>
            ) : null}
          </>
        ) : null}
      </td>
      <td>
        <Time at={entry.created_at} />
      </td>
      <td class="actions">
        {entry.state === 'invalid' || entry.error !== null ? (
          <Action
            label="Retry"
            ariaLabel={`Retry outbox row ${entry.id}`}
            run={() => api(`/ojs/v1/admin/outbox/${enc(entry.id)}/retry`, { method: 'POST' })}
            done={acted(`Outbox row ${entry.id} is pending again: relayed now.`)}
          />
        ) : null}
        <Action
          label="Delete"
          danger
          ariaLabel={`Delete outbox row ${entry.id}`}
          confirm={`Delete outbox row ${entry.id} for good? Its job will never exist.`}
          run={() => api(`/ojs/v1/admin/outbox/${enc(entry.id)}`, { method: 'DELETE' })}
          done={acted(`Outbox row ${entry.id} deleted.`)}
        />
      </td>
    </tr>
  );
}
