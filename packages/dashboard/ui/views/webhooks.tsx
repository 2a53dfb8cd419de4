/** Webhooks: each subscription with its delivery log; send a test event, replay a dead delivery. */
import { useState } from 'preact/hooks';
import { api, enc } from '../api.ts';
import { Action, ErrorBox, Head, Header, Loading, Notice, Time } from '../components.tsx';
import { useApi } from '../hooks.ts';

interface Subscription {
  id: string;
  url: string;
  events: string[];
  filter: { queues?: string[]; job_types?: string[] } | null;
  active: boolean;
  timeout_ms: number;
  tenant_id?: string;
  created_at: string;
}

interface Delivery {
  id: string;
  event_type: string;
  event_id: string;
  state: 'pending' | 'delivering' | 'delivered' | 'dead';
  attempts: number;
  max_attempts: number;
  next_attempt_at?: string;
  last_status_code?: number;
  last_error?: string;
  last_response_time_ms?: number;
  updated_at: string;
}

interface TestResult {
  success: boolean;
  status_code: number | null;
  response_time_ms: number;
  error?: string;
}

const webhookEvents = (e: { type: string }) => e.type.startsWith('webhook.');

const DELIVERY_BADGE: Record<Delivery['state'], string> = {
  pending: 'scheduled',
  delivering: 'active',
  delivered: 'completed',
  dead: 'discarded',
};

export function WebhooksView() {
  const subs = useApi<{ subscriptions: Subscription[] }>(
    '/ojs/v1/webhooks/subscriptions',
    webhookEvents,
  );
  const [notice, setNotice] = useState<string>();
  return (
    <section>
      <Header title="Webhooks" />
      <Notice text={notice} />
      <ErrorBox error={subs.error} />
      {subs.data === undefined ? (
        <Loading what="webhook subscriptions" />
      ) : subs.data.subscriptions.length === 0 ? (
        <p class="muted">No webhook subscriptions (POST /ojs/v1/webhooks/subscriptions).</p>
      ) : (
        subs.data.subscriptions.map((s) => (
          <SubscriptionCard key={s.id} sub={s} onNotice={setNotice} />
        ))
      )}
    </section>
  );
}

function SubscriptionCard({ sub, onNotice }: { sub: Subscription; onNotice: (t: string) => void }) {
  const log = useApi<{ deliveries: Delivery[] }>(
    `/ojs/v1/webhooks/deliveries?subscription_id=${enc(sub.id)}&limit=20`,
    webhookEvents,
    1000,
  );
  const filter = [
    sub.filter?.queues?.length ? `queues ${sub.filter.queues.join(', ')}` : '',
    sub.filter?.job_types?.length ? `job types ${sub.filter.job_types.join(', ')}` : '',
  ]
    .filter((s) => s !== '')
    .join('; ');
  return (
    <article class="card" data-subscription={sub.id} aria-labelledby={`sub-${sub.id}`}>
      <h2 id={`sub-${sub.id}`}>
        <span class="mono">{sub.url}</span>{' '}
        <span class={`badge ${sub.active ? 'running' : 'paused'}`}>
          {sub.active ? 'active' : 'inactive'}
        </span>
      </h2>
      <dl class="facts">
        <dt>Subscription</dt>
        <dd class="mono">{sub.id}</dd>
        <dt>Events</dt>
        <dd>{sub.events.join(', ')}</dd>
        {filter ? (
          <>
            <dt>Filter</dt>
            <dd>{filter}</dd>
          </>
        ) : null}
        {sub.tenant_id ? (
          <>
            <dt>Tenant</dt>
            <dd>{sub.tenant_id}</dd>
          </>
        ) : null}
        <dt>Created</dt>
        <dd>
          <Time at={sub.created_at} />
        </dd>
      </dl>
      <div class="toolbar">
        <Action
          label="Send test event"
          ariaLabel={`Send a test event to ${sub.url}`}
          run={() =>
            api<TestResult>(`/ojs/v1/webhooks/subscriptions/${enc(sub.id)}/test`, {
              method: 'POST',
            })
          }
          done={(r) => {
            const t = r as TestResult;
            onNotice(
              t.success
                ? `Test event delivered to ${sub.url}: ${t.status_code} in ${t.response_time_ms} ms.`
                : `Test event not delivered to ${sub.url}: ${t.status_code ?? t.error}.`,
            );
          }}
        />
      </div>
      <h3>Recent deliveries</h3>
      <ErrorBox error={log.error} />
      {log.data === undefined ? (
        <Loading what="deliveries" />
      ) : log.data.deliveries.length === 0 ? (
        <p class="muted">No deliveries yet.</p>
      ) : (
        <div class="scroll">
          <table class="table">
            <Head
              cols={['Event', 'State', ['Attempts', 'num'], 'Last result', 'Updated', 'Actions']}
            />
            <tbody>
              {log.data.deliveries.map((d) => (
                <tr key={d.id} data-delivery={d.id}>
                  <th scope="row">
                    {d.event_type}
                    <div class="muted small mono">{d.id}</div>
                  </th>
                  <td>
                    <span class={`badge ${DELIVERY_BADGE[d.state]}`}>{d.state}</span>
                    {d.state === 'pending' && d.next_attempt_at ? (
                      <div class="muted small">
                        next <Time at={d.next_attempt_at} />
                      </div>
                    ) : null}
                  </td>
                  <td class="num">
                    {d.attempts} / {d.max_attempts}
                  </td>
                  <td>
                    {d.last_status_code !== undefined
                      ? `HTTP ${d.last_status_code}`
                      : (d.last_error ?? '')}
                    {d.last_response_time_ms !== undefined ? (
                      <span class="muted small"> ({d.last_response_time_ms} ms)</span>
                    ) : null}
                  </td>
                  <td>
                    <Time at={d.updated_at} />
                  </td>
                  <td>
                    {d.state === 'dead' ? (
                      <Action
                        label="Retry"
                        ariaLabel={`Retry delivery ${d.id}`}
                        run={() =>
                          api(`/ojs/v1/webhooks/deliveries/${enc(d.id)}/retry`, { method: 'POST' })
                        }
                        done={() => {
                          onNotice(`Delivery ${d.id} queued again.`);
                          log.reload();
                        }}
                      />
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </article>
  );
}
