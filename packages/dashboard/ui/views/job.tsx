/**
 * One job: state and actions, args and the whole envelope, each attempt
 * with its error and backtrace, progress, result, and its events.
 */
import { api, enc } from '../api.ts';
import { Action, ErrorBox, Fact, Header, Json, Loading, StateBadge, Time } from '../components.tsx';
import { useApi } from '../hooks.ts';
import type { OjsEvent } from '../live.ts';
import { navigate } from '../router.ts';
import type { WireJob } from './jobs.tsx';

interface JobError {
  type: string;
  message: string;
  code?: string;
  backtrace?: string[];
  details?: unknown;
  occurred_at?: string;
  retryable?: boolean;
}

interface JobDetail extends WireJob {
  args?: unknown;
  meta?: Record<string, unknown>;
  result?: unknown;
  progress?: { value: number | null; message?: string; data?: unknown; updated_at?: string };
  attempts: { attempt: number; outcome: string; error?: JobError }[];
  started_at?: string;
  scheduled_at?: string;
  workflow_id?: string;
  [key: string]: unknown;
}

const TERMINAL = ['completed', 'cancelled', 'discarded'];

export function JobView({ id }: { id: string }) {
  const forThisJob = (e: OjsEvent) => e.subject === id;
  const job = useApi<JobDetail>(`/ojs/v1/admin/jobs/${enc(id)}`, forThisJob);
  const events = useApi<{ events: OjsEvent[] }>(
    `/ojs/v1/admin/dashboard/events?subject=${enc(id)}&limit=100`,
    forThisJob,
  );
  if (job.error) {
    return (
      <section>
        <Header title="Job" />
        <ErrorBox error={job.error} />
        <p>
          <a href="#/jobs">Back to jobs</a>
        </p>
      </section>
    );
  }
  const j = job.data;
  if (j === undefined) return <Loading what="the job" />;
  const path = `/ojs/v1/admin/jobs/${enc(j.id)}`;
  return (
    <section>
      <Header title={j.type}>
        <StateBadge state={j.state} />
        {j.state === 'discarded' || j.state === 'cancelled' || j.state === 'retryable' ? (
          <Action
            label="Retry"
            run={() => api(`${path}/retry`, { method: 'POST' })}
            done={job.reload}
          />
        ) : null}
        {TERMINAL.includes(j.state) ? null : (
          <Action
            label="Cancel"
            danger
            confirm={`Cancel job ${j.id}?`}
            run={() => api(`${path}/cancel`, { method: 'POST' })}
            done={job.reload}
          />
        )}
        {j.state === 'active' ? null : (
          <Action
            label="Delete"
            danger
            confirm={`Delete job ${j.id} for good?`}
            run={() => api(path, { method: 'DELETE' })}
            done={() => navigate('jobs')}
          />
        )}
      </Header>
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{j.id}</dd>
        <dt>Queue</dt>
        <dd>
          <a href={`#/jobs?queue=${enc(j.queue)}`}>{j.queue}</a>
        </dd>
        <dt>Attempt</dt>
        <dd>
          {j.attempt}
          {j.max_attempts ? ` of ${j.max_attempts}` : ''}
        </dd>
        <dt>Created</dt>
        <dd>
          <Time at={j.created_at} />
        </dd>
        <Fact term="Started">{j.started_at ? <Time at={j.started_at} /> : null}</Fact>
        <Fact term="Finished">{j.completed_at ? <Time at={j.completed_at} /> : null}</Fact>
        {j.workflow_id ? (
          <>
            <dt>Workflow</dt>
            <dd>
              <a href={`#/workflows/${enc(j.workflow_id)}`}>{j.workflow_id}</a>
            </dd>
          </>
        ) : null}
      </dl>
      {j.progress ? <Progress progress={j.progress} /> : null}
      <div class="grid2">
        <div class="card">
          <h2>Arguments</h2>
          <Json value={j.args ?? []} label="Arguments" />
          {j.result !== undefined ? (
            <>
              <h2>Result</h2>
              <Json value={j.result} label="Result" />
            </>
          ) : null}
        </div>
        <div class="card">
          <h2>Attempts</h2>
          <Attempts attempts={j.attempts} />
        </div>
      </div>
      <div class="card">
        <h2>Events</h2>
        <ErrorBox error={events.error} />
        {events.data ? <Timeline events={events.data.events} /> : <Loading what="events" />}
      </div>
      <details class="card">
        <summary>Envelope</summary>
        <Json value={j} label="Envelope" />
      </details>
    </section>
  );
}

function Progress({ progress }: { progress: NonNullable<JobDetail['progress']> }) {
  // value is 0..1, or null when the worker reported a message only.
  const pct = progress.value === null ? null : Math.round(progress.value * 1000) / 10;
  return (
    <div class="card">
      <h2>Progress</h2>
      {pct === null ? null : (
        <progress max={100} value={pct} aria-label="Progress">
          {pct}%
        </progress>
      )}{' '}
      <span data-testid="progress-text">
        {pct === null ? '' : `${pct}%`}
        {progress.message ? ` – ${progress.message}` : ''}
      </span>{' '}
      {progress.updated_at ? <Time at={progress.updated_at} /> : null}
      {progress.data !== undefined ? <Json value={progress.data} label="Progress data" /> : null}
    </div>
  );
}

function Attempts({ attempts }: { attempts: JobDetail['attempts'] }) {
  if (attempts.length === 0) return <p class="muted">Not started yet.</p>;
  return (
    <ol class="timeline">
      {attempts.map((a) => (
        <li key={a.attempt} class={`outcome-${a.outcome}`}>
          <strong>Attempt {a.attempt}</strong> <StateBadge state={a.outcome} />
          {a.error ? (
            <div class="attempt-error">
              <p>
                <code>{a.error.type}</code>: {a.error.message}{' '}
                {a.error.occurred_at ? <Time at={a.error.occurred_at} /> : null}
              </p>
              {a.error.backtrace && a.error.backtrace.length > 0 ? (
                <pre class="backtrace" title={`Backtrace of attempt ${a.attempt}`}>
                  {a.error.backtrace.join('\n')}
                </pre>
              ) : null}
              {a.error.details !== undefined ? (
                <Json value={a.error.details} label="Error details" />
              ) : null}
            </div>
          ) : null}
        </li>
      ))}
    </ol>
  );
}

function Timeline({ events }: { events: OjsEvent[] }) {
  if (events.length === 0)
    return <p class="muted">No events recorded (the log keeps the newest).</p>;
  return (
    <ol class="events">
      {[...events].reverse().map((e) => (
        <li key={e.id}>
          <code>{e.type}</code> <Time at={e.time} />
          {e.data.error ? <span class="muted small"> {JSON.stringify(e.data.error)}</span> : null}
        </li>
      ))}
    </ol>
  );
}
