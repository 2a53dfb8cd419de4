/**
 * Overview: totals per state, each queue's depth by state, throughput and
 * failure rate over the last hour, and the latest events, all live.
 */
import {
  BarChart,
  type Counts,
  DepthBar,
  ErrorBox,
  fmt,
  Head,
  Header,
  JOB_STATES,
  Loading,
  StateBadge,
  StateLegend,
  Time,
} from '../components.tsx';
import { anyEvent, jobEvents, useApi } from '../hooks.ts';
import type { OjsEvent } from '../live.ts';
import { href } from '../router.ts';
import type { QueueRow } from './queues.tsx';

interface Stats {
  queues: number;
  workers: number;
  jobs: Counts;
  throughput: { processed_per_minute: number; failed_per_minute: number };
}

interface Throughput {
  bucket_seconds: number;
  buckets: { start: string; completed: number; failed: number }[];
  totals: { completed: number; failed: number };
}

const clock = (iso: string) =>
  new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

export function OverviewView() {
  const stats = useApi<Stats>('/ojs/v1/admin/stats', jobEvents);
  const queues = useApi<{ items: QueueRow[] }>('/ojs/v1/admin/dashboard/queues', jobEvents);
  const rate = useApi<Throughput>(
    '/ojs/v1/admin/dashboard/throughput?minutes=60&buckets=30',
    (e) => e.type === 'job.completed' || e.type === 'job.discarded',
    // 60 index range counts, for bars of 2 minutes: every 10 s is enough.
    10_000,
  );
  const events = useApi<{ events: OjsEvent[] }>(
    '/ojs/v1/admin/dashboard/events?limit=15',
    anyEvent,
  );
  return (
    <section aria-labelledby="overview-title">
      <Header title="Overview" />
      <ErrorBox error={stats.error} />
      {stats.data ? (
        <ul class="tiles" aria-label="Jobs by state" id="overview-title">
          {JOB_STATES.map((state) => (
            <li key={state}>
              <a href={href('jobs', { state })} class="tile" data-state={state}>
                <StateBadge state={state} />
                <strong data-testid={`total-${state}`}>{fmt(stats.data!.jobs[state])}</strong>
              </a>
            </li>
          ))}
          <li>
            <a href="#/workers" class="tile">
              <span class="badge">workers</span>
              <strong>{fmt(stats.data.workers)}</strong>
            </a>
          </li>
        </ul>
      ) : (
        <Loading what="totals" />
      )}
      <div class="grid2">
        <div class="card">
          <ErrorBox error={rate.error} />
          {rate.data ? <Charts data={rate.data} /> : <Loading what="throughput" />}
        </div>
        <div class="card">
          <h2>Recent events</h2>
          <ErrorBox error={events.error} />
          {events.data ? <EventList events={events.data.events} /> : <Loading what="events" />}
        </div>
      </div>
      <div class="card">
        <h2>Queues</h2>
        <ErrorBox error={queues.error} />
        {queues.data ? (
          <div class="scroll">
            <table class="table">
              <Head cols={['Queue', 'Depth by state', ['Waiting', 'num'], ['Active', 'num']]} />
              <tbody>
                {queues.data.items.map((q) => (
                  <tr key={q.name}>
                    <th scope="row">
                      <a href={href('jobs', { queue: q.name })}>{q.name}</a>
                      {q.paused ? <span class="badge paused">paused</span> : null}
                    </th>
                    <td>
                      <DepthBar counts={q.counts} label={`Queue ${q.name}`} />
                    </td>
                    <td class="num">
                      {fmt(
                        q.counts.available +
                          q.counts.scheduled +
                          q.counts.retryable +
                          q.counts.pending,
                      )}
                    </td>
                    <td class="num">{fmt(q.counts.active)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Loading what="queues" />
        )}
        {queues.data?.items.length === 0 ? <p class="muted">No queues yet.</p> : <StateLegend />}
      </div>
    </section>
  );
}

function Charts({ data }: { data: Throughput }) {
  const minutes = data.bucket_seconds / 60;
  const bars = data.buckets.map((b) => ({
    label: clock(b.start),
    title: `${clock(b.start)}: ${b.completed} completed, ${b.failed} failed`,
    values: [b.completed, b.failed],
  }));
  const rates = data.buckets.map((b) => {
    const total = b.completed + b.failed;
    const pct = total === 0 ? 0 : Math.round((b.failed / total) * 1000) / 10;
    return { label: clock(b.start), title: `${clock(b.start)}: ${pct}% failed`, values: [pct] };
  });
  const all = data.totals.completed + data.totals.failed;
  return (
    <>
      <h2>Last hour</h2>
      <p class="muted small">
        {fmt(data.totals.completed)} completed, {fmt(data.totals.failed)} failed
        {all > 0 ? ` (${Math.round((data.totals.failed / all) * 1000) / 10}% failure rate)` : ''}
        {`; bars of ${minutes} min.`}
      </p>
      <BarChart
        title="Throughput (jobs finished per bucket)"
        bars={bars}
        series={[
          { name: 'completed', className: 'fill-completed' },
          { name: 'failed', className: 'fill-discarded' },
        ]}
      />
      <BarChart
        title="Failure rate"
        bars={rates}
        unit="%"
        max={1}
        series={[{ name: 'failed %', className: 'fill-discarded' }]}
      />
    </>
  );
}

export function EventList({ events }: { events: OjsEvent[] }) {
  if (events.length === 0) return <p class="muted">No events yet.</p>;
  return (
    <ol class="events" aria-live="polite">
      {events.map((e) => (
        <li key={e.id}>
          <code>{e.type}</code> {e.subject ? <SubjectLink event={e} /> : null} <Time at={e.time} />
        </li>
      ))}
    </ol>
  );
}

function SubjectLink({ event }: { event: OjsEvent }) {
  const subject = event.subject!;
  if (event.type.startsWith('job.'))
    return <a href={`#/jobs/${encodeURIComponent(subject)}`}>{subject}</a>;
  if (event.type.startsWith('workflow.'))
    return <a href={`#/workflows/${encodeURIComponent(subject)}`}>{subject}</a>;
  return <span>{subject}</span>;
}
