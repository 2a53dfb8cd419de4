/** Workflows: the recent ones, and one drawn as a graph with each step's state. */
import { enc } from '../api.ts';
import { ErrorBox, Head, Header, Loading, SearchById, StateBadge, Time } from '../components.tsx';
import { type GraphStep, WorkflowGraph } from '../graph.tsx';
import { useApi } from '../hooks.ts';
import type { OjsEvent } from '../live.ts';

interface WorkflowSummary {
  id: string;
  name?: string;
  type?: string;
  state: string;
  created_at: string;
  steps_total: number;
}

interface WireStep {
  index?: number;
  id?: string;
  type: string;
  state: string;
  job_id: string | null;
  depends_on?: string[];
  workflow_id?: string;
  error?: unknown;
}

interface WireWorkflow {
  id: string;
  name?: string;
  type?: string;
  state: string;
  created_at: string;
  steps: WireStep[];
  callbacks?: Record<string, { type?: string }>;
  callback_jobs?: Record<string, string>;
}

const workflowEvents = (e: OjsEvent) => e.type.startsWith('workflow.');

export function WorkflowsView() {
  const list = useApi<{ items: WorkflowSummary[] }>(
    '/ojs/v1/admin/dashboard/workflows?limit=50',
    workflowEvents,
  );
  return (
    <section>
      <Header title="Workflows">
        <SearchById section="workflows" label="Find a workflow by id" />
      </Header>
      <ErrorBox error={list.error} />
      {list.data === undefined ? (
        <Loading what="workflows" />
      ) : list.data.items.length === 0 ? (
        <p class="muted">No workflows started recently.</p>
      ) : (
        <div class="scroll">
          <table class="table">
            <Head cols={['Workflow', 'Kind', 'State', ['Steps', 'num'], 'Created']} />
            <tbody>
              {list.data.items.map((w) => (
                <tr key={w.id}>
                  <th scope="row">
                    <a href={`#/workflows/${enc(w.id)}`}>{w.name ?? w.id}</a>
                    <div class="muted small mono">{w.id}</div>
                  </th>
                  <td>{w.type ?? 'graph'}</td>
                  <td>
                    <StateBadge state={w.state} />
                  </td>
                  <td class="num">{w.steps_total}</td>
                  <td>
                    <Time at={w.created_at} />
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

/** The wire workflow as graph steps: chain in sequence, group side by side, batch then callbacks. */
export function graphSteps(w: WireWorkflow): GraphStep[] {
  const kind = w.type ?? 'dag';
  const steps: GraphStep[] = w.steps.map((s, i) => ({
    key: s.id ?? `step-${s.index ?? i}`,
    label: s.id ? `${s.id} · ${s.type}` : s.type,
    state: s.state,
    jobId: s.job_id,
    dependsOn:
      kind === 'chain' && i > 0 ? [`step-${w.steps[i - 1]!.index ?? i - 1}`] : (s.depends_on ?? []),
  }));
  for (const [kind_, spec] of Object.entries(w.callbacks ?? {})) {
    steps.push({
      key: `callback-${kind_}`,
      label: `${kind_} · ${spec.type ?? ''}`,
      state: w.callback_jobs?.[kind_] ? 'enqueued' : 'waiting',
      jobId: w.callback_jobs?.[kind_] ?? null,
      dependsOn: w.steps.map((s, i) => s.id ?? `step-${s.index ?? i}`),
    });
  }
  return steps;
}

export function WorkflowView({ id }: { id: string }) {
  // Steps change with their jobs: refresh on this workflow's events and its jobs' events.
  const jobIds = new Set<string>();
  const workflow = useApi<{ workflow: WireWorkflow }>(
    `/ojs/v1/workflows/${enc(id)}`,
    (e) => e.subject === id || (e.subject !== undefined && jobIds.has(e.subject)),
  );
  for (const s of workflow.data?.workflow.steps ?? []) if (s.job_id) jobIds.add(s.job_id);
  if (workflow.error) {
    return (
      <section>
        <Header title="Workflow" />
        <ErrorBox error={workflow.error} />
      </section>
    );
  }
  const w = workflow.data?.workflow;
  if (w === undefined) return <Loading what="the workflow" />;
  const steps = graphSteps(w);
  return (
    <section>
      <Header title={w.name ?? `Workflow ${w.id}`}>
        <StateBadge state={w.state} />
      </Header>
      <p class="muted">
        {w.type ?? 'graph'} of {w.steps.length} steps, created <Time at={w.created_at} /> ·{' '}
        <span class="mono">{w.id}</span>
      </p>
      <WorkflowGraph steps={steps} title={`Workflow ${w.name ?? w.id}`} />
      <h2>Steps</h2>
      <ol class="steps">
        {steps.map((s) => (
          <li key={s.key}>
            {s.jobId ? <a href={`#/jobs/${enc(s.jobId)}`}>{s.label}</a> : s.label}{' '}
            <StateBadge state={s.state} />
            {s.dependsOn.length > 0 ? (
              <span class="muted small"> after {s.dependsOn.join(', ')}</span>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  );
}
