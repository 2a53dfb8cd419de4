/** Queues: depth by state, pause / resume, concurrency and rate limits and their use. */
import { useState } from 'preact/hooks';
import { api, enc } from '../api.ts';
import {
  Action,
  type Counts,
  DepthBar,
  ErrorBox,
  fmt,
  Head,
  Header,
  Loading,
  StateLegend,
} from '../components.tsx';
import { useApi, useCanAct } from '../hooks.ts';
import { href } from '../router.ts';

export interface QueueRow {
  name: string;
  paused: boolean;
  counts: Counts;
  concurrency: { limit: number; active: number } | null;
  rate_limit: { limit: number; period: string; window_count: number } | null;
  blocked_by: string[];
}

const queueEvents = (e: { type: string }) =>
  e.type.startsWith('job.') || e.type.startsWith('queue.');

export function QueuesView() {
  const queues = useApi<{ items: QueueRow[] }>('/ojs/v1/admin/dashboard/queues', queueEvents);
  const [editing, setEditing] = useState<string>();
  return (
    <section>
      <Header title="Queues" />
      <ErrorBox error={queues.error} />
      {queues.data === undefined ? (
        <Loading what="queues" />
      ) : queues.data.items.length === 0 ? (
        <p class="muted">No queues yet: a queue appears with its first job.</p>
      ) : (
        <div class="scroll">
          <table class="table">
            <Head
              cols={[
                'Queue',
                'State',
                'Depth by state',
                ['Available', 'num'],
                ['Active', 'num'],
                'Concurrency',
                'Rate limit',
                'Actions',
              ]}
            />
            <tbody>
              {queues.data.items.map((q) => (
                <tr key={q.name} data-queue={q.name}>
                  <th scope="row">
                    <a href={href('jobs', { queue: q.name })}>{q.name}</a>
                  </th>
                  <td>
                    <span class={`badge ${q.paused ? 'paused' : 'running'}`}>
                      {q.paused ? 'paused' : 'active'}
                    </span>
                  </td>
                  <td>
                    <DepthBar counts={q.counts} label={`Queue ${q.name}`} />
                  </td>
                  <td class="num">{fmt(q.counts.available)}</td>
                  <td class="num">{fmt(q.counts.active)}</td>
                  <td>
                    {q.concurrency
                      ? `${q.concurrency.active} / ${q.concurrency.limit} in use`
                      : 'unlimited'}
                  </td>
                  <td>
                    {q.rate_limit
                      ? `${q.rate_limit.window_count} / ${q.rate_limit.limit} per ${q.rate_limit.period}`
                      : 'none'}
                  </td>
                  <td class="actions">
                    <Action
                      label={q.paused ? 'Resume' : 'Pause'}
                      ariaLabel={`${q.paused ? 'Resume' : 'Pause'} queue ${q.name}`}
                      run={() =>
                        api(
                          `/ojs/v1/admin/queues/${enc(q.name)}/${q.paused ? 'resume' : 'pause'}`,
                          {
                            method: 'POST',
                          },
                        )
                      }
                      done={queues.reload}
                    />
                    <EditButton name={q.name} open={() => setEditing(q.name)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <StateLegend />
      {editing !== undefined ? (
        <LimitsForm
          name={editing}
          row={queues.data?.items.find((q) => q.name === editing)}
          close={() => {
            setEditing(undefined);
            queues.reload();
          }}
        />
      ) : null}
    </section>
  );
}

function EditButton({ name, open }: { name: string; open: () => void }) {
  if (!useCanAct()) return null;
  return (
    <button type="button" onClick={open} aria-label={`Edit limits of queue ${name}`}>
      Limits…
    </button>
  );
}

/** Concurrency and rate limit of one queue (PUT /ojs/v1/admin/queues/:name/config). */
function LimitsForm(props: { name: string; row: QueueRow | undefined; close: () => void }) {
  const { name, row } = props;
  const [concurrency, setConcurrency] = useState(String(row?.concurrency?.limit ?? ''));
  const [rate, setRate] = useState(String(row?.rate_limit?.limit ?? ''));
  const [period, setPeriod] = useState(row?.rate_limit?.period ?? 'PT1S');
  const [error, setError] = useState<string>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      await api(`/ojs/v1/admin/queues/${enc(name)}/config`, {
        method: 'PUT',
        body: {
          concurrency: concurrency.trim() === '' ? null : Number(concurrency),
          rate_limit: rate.trim() === '' ? null : { limit: Number(rate), period: period.trim() },
        },
      });
      props.close();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="limits-title">
      <h2 id="limits-title">Limits of {name}</h2>
      <label for="limit-concurrency">Concurrency (jobs active at once; empty = unlimited)</label>
      <input
        id="limit-concurrency"
        inputMode="numeric"
        value={concurrency}
        onInput={(e) => setConcurrency((e.target as HTMLInputElement).value)}
      />
      <label for="limit-rate">Rate limit: jobs started per period (empty = none)</label>
      <input
        id="limit-rate"
        inputMode="numeric"
        value={rate}
        onInput={(e) => setRate((e.target as HTMLInputElement).value)}
      />
      <label for="limit-period">Period (ISO 8601 duration, e.g. PT1S, PT1M)</label>
      <input
        id="limit-period"
        value={period}
        onInput={(e) => setPeriod((e.target as HTMLInputElement).value)}
      />
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
      <div class="toolbar">
        <button type="submit" class="primary">
          Save limits
        </button>
        <button type="button" onClick={props.close}>
          Cancel
        </button>
      </div>
    </form>
  );
}
