/** Workers: state, queues and pool, last heartbeat, active jobs; quiet or terminate one. */
import { api, enc } from '../api.ts';
import { Action, ErrorBox, fmt, Head, Header, Loading, Time } from '../components.tsx';
import { useApi } from '../hooks.ts';

interface Worker {
  id: string;
  hostname: string | null;
  state: string;
  directive: string | null;
  queues: string[];
  concurrency: number | null;
  /** Fair scheduling: the pool the worker declared. */
  pool?: string | null;
  active_jobs: number;
  active_job_ids: string[];
  started_at: string;
  last_heartbeat_at: string;
  version: string | null;
}

const workerEvents = (e: { type: string }) =>
  e.type.startsWith('worker.') || e.type === 'job.started' || e.type === 'job.completed';

export function WorkersView() {
  const workers = useApi<{
    items: Worker[];
    summary: { total: number; running: number; quiet: number; stale: number };
  }>('/ojs/v1/admin/workers?per_page=100', workerEvents);
  const data = workers.data;
  return (
    <section>
      <Header title="Workers" />
      <ErrorBox error={workers.error} />
      {data === undefined ? (
        <Loading what="workers" />
      ) : (
        <>
          <p class="muted">
            {fmt(data.summary.total)} workers: {fmt(data.summary.running)} running,{' '}
            {fmt(data.summary.quiet)} quiet, {fmt(data.summary.stale)} stale (no heartbeat lately).
          </p>
          {data.items.length === 0 ? (
            <p class="muted">No worker has registered or sent a heartbeat.</p>
          ) : (
            <div class="scroll">
              <table class="table">
                <Head
                  cols={[
                    'Worker',
                    'State',
                    'Queues',
                    ['Active jobs', 'num'],
                    'Last heartbeat',
                    'Started',
                    'Actions',
                  ]}
                />
                <tbody>
                  {data.items.map((w) => (
                    <tr key={w.id} data-worker={w.id}>
                      <th scope="row">
                        <span class="mono">{w.id}</span>
                        <div class="muted small">
                          {w.hostname ?? ''} {w.version ? `v${w.version}` : ''}
                        </div>
                      </th>
                      <td>
                        <span class={`badge worker-${w.state}`}>{w.state}</span>
                        {w.directive ? <span class="muted small"> → {w.directive}</span> : null}
                      </td>
                      <td>
                        {w.queues.join(', ') || 'any'}
                        {w.pool ? <div class="muted small">pool {w.pool}</div> : null}
                      </td>
                      <td class="num">
                        {fmt(w.active_jobs)}
                        {w.concurrency ? ` / ${w.concurrency}` : ''}
                        {w.active_job_ids.slice(0, 3).map((id) => (
                          <div key={id} class="small">
                            <a href={`#/jobs/${enc(id)}`} class="mono">
                              {id.slice(0, 13)}…
                            </a>
                          </div>
                        ))}
                      </td>
                      <td>
                        <Time at={w.last_heartbeat_at} />
                      </td>
                      <td>
                        <Time at={w.started_at} />
                      </td>
                      <td class="actions">
                        <Action
                          label="Quiet"
                          ariaLabel={`Quiet worker ${w.id}`}
                          disabled={w.directive === 'quiet' || w.directive === 'terminate'}
                          run={() =>
                            api(`/ojs/v1/admin/workers/${enc(w.id)}/quiet`, { method: 'POST' })
                          }
                          done={workers.reload}
                        />
                        <Action
                          label="Terminate"
                          danger
                          ariaLabel={`Terminate worker ${w.id}`}
                          confirm={`Tell worker ${w.id} to finish its jobs and stop?`}
                          disabled={w.directive === 'terminate'}
                          run={() =>
                            api(`/ojs/v1/admin/workers/${enc(w.id)}/terminate`, { method: 'POST' })
                          }
                          done={workers.reload}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
