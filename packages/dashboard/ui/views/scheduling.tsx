/**
 * Fair scheduling: the pools (strategy, queues with their weights as a
 * share bar, isolation, live workers, active jobs; delete one) and the
 * dispatches per queue over the last minute.
 */
import { api, enc } from '../api.ts';
import { Action, ErrorBox, fmt, Head, Header, Loading } from '../components.tsx';
import { useApi } from '../hooks.ts';

interface Pool {
  name: string;
  queues: string[];
  strategy: string;
  weights?: Record<string, number>;
  concurrency?: number;
  isolated?: boolean;
  starvation_guard?: { enabled: boolean; rotation_interval: string; min_dispatch_ratio: number };
  active_workers: number;
  active_jobs: number;
}

interface QueueStats {
  name: string;
  dispatch_count_1m: number;
  dispatch_ratio_1m: number;
  avg_wait_ms: number;
  active_jobs: number;
}

const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;

const dispatchEvents = (e: { type: string }) =>
  e.type === 'job.started' || e.type.startsWith('scheduling.') || e.type.startsWith('worker.');

/** The pool's queues as one bar, each segment its weight's share (1 when unset). */
function WeightBar({ pool }: { pool: Pool }) {
  const weight = (q: string) => (pool.strategy === 'weighted' ? (pool.weights?.[q] ?? 1) : 1);
  const total = pool.queues.reduce((sum, q) => sum + weight(q), 0);
  const text = pool.queues.map((q) => `${q} ${pct(weight(q) / total)}`).join(', ');
  return (
    <div>
      <div class="depth" role="img" aria-label={`Weights of ${pool.name}: ${text}`}>
        {pool.queues.map((q, i) => (
          <span
            key={q}
            class={`seg weight-${i % 6}`}
            style={{ flexGrow: weight(q), flexBasis: `${(weight(q) / total) * 100}%` }}
            title={`${q}: weight ${weight(q)} (${pct(weight(q) / total)})`}
          />
        ))}
      </div>
      <div class="small">
        {pool.queues.map((q, i) => (
          <span key={q} class="weight-label">
            <span class={`swatch weight-${i % 6}`} aria-hidden="true" /> {q}
            {pool.weights?.[q] === undefined ? '' : `: ${pool.weights[q]}`}{' '}
          </span>
        ))}
      </div>
    </div>
  );
}

export function SchedulingView() {
  const pools = useApi<{ items: Pool[] }>('/ojs/v1/admin/pools', dispatchEvents);
  const stats = useApi<{ stats: { queues: QueueStats[]; window: string } }>(
    '/ojs/v1/admin/scheduling/stats',
    dispatchEvents,
  );
  return (
    <section>
      <Header title="Scheduling" />
      <h2>Pools</h2>
      <ErrorBox error={pools.error} />
      {pools.data === undefined ? (
        <Loading what="pools" />
      ) : pools.data.items.length === 0 ? (
        <p class="muted">
          No pools: a fetch of several queues takes its first job from the first non-empty queue and
          mixes the rest.
        </p>
      ) : (
        <div class="scroll">
          <table class="table">
            <Head
              cols={[
                'Pool',
                'Strategy',
                'Queues and weights',
                ['Workers', 'num'],
                ['Active jobs', 'num'],
                'Actions',
              ]}
            />
            <tbody>
              {pools.data.items.map((p) => (
                <tr key={p.name} data-pool={p.name}>
                  <th scope="row">
                    <span class="mono">{p.name}</span>
                    <div class="muted small">
                      {p.isolated ? 'isolated' : ''}
                      {p.concurrency ? ` concurrency ${p.concurrency}` : ''}
                      {p.starvation_guard?.enabled
                        ? ` guard ≥ ${pct(p.starvation_guard.min_dispatch_ratio)} per ${p.starvation_guard.rotation_interval}`
                        : ''}
                    </div>
                  </th>
                  <td>{p.strategy}</td>
                  <td>
                    <WeightBar pool={p} />
                  </td>
                  <td class="num">{fmt(p.active_workers)}</td>
                  <td class="num">{fmt(p.active_jobs)}</td>
                  <td class="actions">
                    <Action
                      label="Delete"
                      danger
                      ariaLabel={`Delete pool ${p.name}`}
                      confirm={`Delete pool ${p.name}? Its workers fall back to plain fetches.`}
                      run={() => api(`/ojs/v1/admin/pools/${enc(p.name)}`, { method: 'DELETE' })}
                      done={pools.reload}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>Dispatches, last minute</h2>
      <ErrorBox error={stats.error} />
      {stats.data === undefined ? (
        <Loading what="scheduling stats" />
      ) : stats.data.stats.queues.length === 0 ? (
        <p class="muted">Nothing dispatched in the last minute.</p>
      ) : (
        <div class="scroll">
          <table class="table">
            <Head
              cols={[
                'Queue',
                ['Dispatched', 'num'],
                'Share',
                ['Average wait', 'num'],
                ['Active jobs', 'num'],
              ]}
            />
            <tbody>
              {stats.data.stats.queues.map((q) => (
                <tr key={q.name} data-dispatch-queue={q.name}>
                  <th scope="row" class="mono">
                    {q.name}
                  </th>
                  <td class="num">{fmt(q.dispatch_count_1m)}</td>
                  <td>
                    <div
                      class="depth"
                      role="img"
                      aria-label={`${q.name}: ${pct(q.dispatch_ratio_1m)} of dispatches`}
                    >
                      <span
                        class="seg weight-0"
                        style={{ flexBasis: `${Math.max(q.dispatch_ratio_1m * 100, 0.5)}%` }}
                      />
                    </div>
                    <span class="small">{pct(q.dispatch_ratio_1m)}</span>
                  </td>
                  <td class="num">{fmt(q.avg_wait_ms)} ms</td>
                  <td class="num">{fmt(q.active_jobs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="muted small">
            Every server process's dispatches ({stats.data.stats.window} window; other processes' up
            to 2 s behind).
          </p>
        </div>
      )}
    </section>
  );
}
