/** Tenants (ext-multi-tenancy): each tenant's jobs by state, throughput, limits in use and fairness. */
import { ErrorBox, fmt, Head, Header, Loading } from '../components.tsx';
import { useApi } from '../hooks.ts';

interface LimitUse {
  limit: number;
  current: number;
}

interface Tenant {
  tenant_id: string;
  name?: string;
  fairness_weight: number;
  quota_mode: 'hard' | 'soft';
  stats: {
    total_jobs: number;
    jobs: {
      available: number;
      active: number;
      scheduled: number;
      retryable: number;
      completed_24h: number;
      failed_24h: number;
    };
    throughput: { processed_per_minute: number; enqueued_per_minute: number };
    limits: Record<string, LimitUse>;
    fairness: { weight: number; effective_share: number; actual_share: number };
  };
}

const LIMIT_LABELS: Record<string, string> = {
  max_concurrency: 'active',
  max_queue_depth: 'depth',
  max_scheduled: 'scheduled',
  max_enqueue_rate: 'enqueues',
};

const tenantEvents = (e: { type: string }) =>
  e.type.startsWith('tenant.') || e.type === 'job.enqueued' || e.type === 'job.completed';

const percent = (share: number) => `${Math.round(share * 100)}%`;

export function TenantsView() {
  const tenants = useApi<{ tenants: Tenant[] }>('/ojs/v1/admin/tenants', tenantEvents);
  const data = tenants.data;
  return (
    <section>
      <Header title="Tenants" />
      <ErrorBox error={tenants.error} />
      {data === undefined ? (
        <Loading what="tenants" />
      ) : data.tenants.length === 0 ? (
        <p class="muted">
          No tenant yet: a tenant appears with its first job sent with an X-OJS-Tenant header.
        </p>
      ) : (
        <div class="scroll">
          <table class="table">
            <Head
              cols={[
                'Tenant',
                ['Jobs', 'num'],
                ['Available', 'num'],
                ['Active', 'num'],
                ['Scheduled', 'num'],
                ['Done / failed 24 h', 'num'],
                ['Per minute', 'num'],
                'Limits',
                'Fair share',
              ]}
            />
            <tbody>
              {data.tenants.map((t) => (
                <tr key={t.tenant_id} data-tenant={t.tenant_id}>
                  <th scope="row">
                    <span class="mono">{t.tenant_id}</span>
                    {t.name ? <div class="muted small">{t.name}</div> : null}
                  </th>
                  <td class="num">{fmt(t.stats.total_jobs)}</td>
                  <td class="num">{fmt(t.stats.jobs.available)}</td>
                  <td class="num">{fmt(t.stats.jobs.active)}</td>
                  <td class="num">{fmt(t.stats.jobs.scheduled)}</td>
                  <td class="num">
                    {fmt(t.stats.jobs.completed_24h)} / {fmt(t.stats.jobs.failed_24h)}
                  </td>
                  <td class="num">
                    {fmt(t.stats.throughput.processed_per_minute)} done,{' '}
                    {fmt(t.stats.throughput.enqueued_per_minute)} in
                  </td>
                  <td>
                    {Object.keys(t.stats.limits).length === 0 ? (
                      <span class="muted">none</span>
                    ) : (
                      Object.entries(t.stats.limits).map(([name, use]) => (
                        <div key={name} class="small" data-limit={name}>
                          {LIMIT_LABELS[name] ?? name} {fmt(use.current)} / {fmt(use.limit)}
                        </div>
                      ))
                    )}
                    {t.quota_mode === 'soft' ? <div class="muted small">soft quotas</div> : null}
                  </td>
                  <td>
                    weight {t.stats.fairness.weight}: {percent(t.stats.fairness.effective_share)}{' '}
                    due, {percent(t.stats.fairness.actual_share)} of active jobs
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
