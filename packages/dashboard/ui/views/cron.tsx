/** Cron: schedules, the next fire times in each cron's own zone, enable / disable, run now. */
import { useState } from 'preact/hooks';
import { api, enc } from '../api.ts';
import { Action, ErrorBox, fmt, Header, inZone, Loading, Notice, Time } from '../components.tsx';
import { useApi } from '../hooks.ts';

interface Cron {
  name: string;
  expression: string;
  timezone: string;
  enabled: boolean;
  description?: string;
  overlap_policy: string;
  next_fire_times: string[];
  last_run_at?: string | null;
  last_job_id?: string | null;
  run_count: number;
  job_template: { type?: string; options?: { queue?: string } };
}

const cronEvents = (e: { type: string }) => e.type.startsWith('cron.');

export function CronView() {
  const crons = useApi<{ items: Cron[] }>('/ojs/v1/admin/dashboard/cron', cronEvents);
  const [notice, setNotice] = useState<string>();
  return (
    <section>
      <Header title="Cron" />
      <Notice text={notice} />
      <ErrorBox error={crons.error} />
      {crons.data === undefined ? (
        <Loading what="cron schedules" />
      ) : crons.data.items.length === 0 ? (
        <p class="muted">No cron schedules registered (POST /ojs/v1/cron).</p>
      ) : (
        <div class="cards">
          {crons.data.items.map((c) => (
            <article
              class="card"
              key={c.name}
              data-cron={c.name}
              aria-labelledby={`cron-${c.name}`}
            >
              <h2 id={`cron-${c.name}`}>
                {c.name}{' '}
                <span class={`badge ${c.enabled ? 'running' : 'paused'}`}>
                  {c.enabled ? 'enabled' : 'disabled'}
                </span>
              </h2>
              {c.description ? <p>{c.description}</p> : null}
              <dl class="facts">
                <dt>Schedule</dt>
                <dd>
                  <code>{c.expression}</code> in {c.timezone}
                </dd>
                <dt>Job</dt>
                <dd>
                  {c.job_template.type ?? '?'} on {c.job_template.options?.queue ?? 'default'}
                </dd>
                <dt>Overlap</dt>
                <dd>{c.overlap_policy}</dd>
                <dt>Runs</dt>
                <dd>
                  {fmt(c.run_count)}
                  {c.last_run_at ? (
                    <>
                      , last <Time at={c.last_run_at} />
                      {c.last_job_id ? (
                        <>
                          {' '}
                          (<a href={`#/jobs/${enc(c.last_job_id)}`}>job</a>)
                        </>
                      ) : null}
                    </>
                  ) : null}
                </dd>
              </dl>
              <h3>Next fire times ({c.timezone})</h3>
              {c.next_fire_times.length === 0 ? (
                <p class="muted">None while disabled.</p>
              ) : (
                <ol class="fires">
                  {c.next_fire_times.map((t) => (
                    <li key={t}>
                      <time dateTime={t}>{inZone(new Date(t), c.timezone)}</time>
                    </li>
                  ))}
                </ol>
              )}
              <div class="toolbar">
                <Action
                  label={c.enabled ? 'Disable' : 'Enable'}
                  ariaLabel={`${c.enabled ? 'Disable' : 'Enable'} cron ${c.name}`}
                  run={() =>
                    api(`/ojs/v1/cron/${enc(c.name)}`, {
                      method: 'PATCH',
                      body: { enabled: !c.enabled },
                    })
                  }
                  done={crons.reload}
                />
                <Action
                  label="Run now"
                  ariaLabel={`Run cron ${c.name} now`}
                  run={() =>
                    api<{ job: { id: string } }>(`/ojs/v1/cron/${enc(c.name)}/trigger`, {
                      method: 'POST',
                    })
                  }
                  done={(r) => {
                    setNotice(
                      `Enqueued job ${(r as { job: { id: string } }).job.id} from ${c.name}.`,
                    );
                    crons.reload();
                  }}
                />
              </div>
            </article>
          ))}
        </div>
      )}
    </section>
  );
}
