/**
 * Dead letter: jobs discarded to the dead letter queue, filtered by queue
 * and type; retry or delete the selected ones, or everything matching.
 */
import { useState } from 'preact/hooks';
import { api, enc, withQuery } from '../api.ts';
import { Action, ErrorBox, Header, Loading, Notice, Pager } from '../components.tsx';
import { useApi } from '../hooks.ts';
import { navigate } from '../router.ts';
import { type JobPage, JobTable, useTotal } from './jobs.tsx';

const deadEvents = (e: { type: string }) =>
  e.type === 'job.discarded' || e.type === 'job.retried' || e.type.startsWith('job.');

export function DeadLetterView({ query }: { query: URLSearchParams }) {
  const queue = query.get('queue') ?? '';
  const type = query.get('type') ?? '';
  const cursors = (query.get('cursors') ?? '').split(' ').filter((c) => c !== '');
  const path = withQuery('/ojs/v1/admin/dead-letter', {
    queue,
    type,
    per_page: 50,
    cursor: cursors.at(-1),
    total: false,
  });
  const page = useApi<JobPage>(path, cursors.length === 0 ? deadEvents : undefined);
  const total = useTotal('/ojs/v1/admin/dead-letter', { queue, type }, page.data !== undefined);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [outcome, setOutcome] = useState<string>();
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const ids = [...selected];
  const filter = { ...(queue ? { queue } : {}), ...(type ? { type } : {}) };
  const filterText =
    Object.keys(filter).length === 0
      ? 'in the dead letter queue'
      : `matching ${JSON.stringify(filter)}`;
  const after = (text: string) => () => {
    setSelected(new Set());
    setOutcome(text);
    page.reload();
  };
  const each = async (action: (id: string) => Promise<unknown>) => {
    const results = await Promise.allSettled(ids.map(action));
    const failed = results.filter((r) => r.status === 'rejected').length;
    if (failed > 0) throw new Error(`${failed} of ${ids.length} failed; the others succeeded.`);
  };
  return (
    <section>
      <Header title="Dead letter">
        <form
          class="search"
          aria-label="Filter the dead letter queue"
          onSubmit={(e) => {
            e.preventDefault();
            const form = new FormData(e.currentTarget as HTMLFormElement);
            navigate('dead-letter', {
              queue: String(form.get('queue') ?? ''),
              type: String(form.get('type') ?? ''),
            });
          }}
        >
          <label>
            Queue <input name="queue" defaultValue={queue} />
          </label>
          <label>
            Type <input name="type" defaultValue={type} />
          </label>
          <button type="submit">Filter</button>
        </form>
      </Header>
      <fieldset class="toolbar bulk">
        <legend class="sr-only">Bulk actions</legend>
        <Action
          label={`Retry selected (${ids.length})`}
          disabled={ids.length === 0}
          run={() =>
            each((id) => api(`/ojs/v1/admin/dead-letter/${enc(id)}/retry`, { method: 'POST' }))
          }
          done={after(`Retried ${ids.length} job(s).`)}
        />
        <Action
          label={`Delete selected (${ids.length})`}
          danger
          disabled={ids.length === 0}
          confirm={`Delete ${ids.length} dead job(s) for good?`}
          run={() =>
            each((id) => api(`/ojs/v1/admin/dead-letter/${enc(id)}`, { method: 'DELETE' }))
          }
          done={after(`Deleted ${ids.length} job(s).`)}
        />
        <Action
          label="Retry all matching"
          confirm={`Retry every job ${filterText}?`}
          run={() =>
            api('/ojs/v1/admin/dead-letter/retry', {
              method: 'POST',
              body: { filter, confirm: true },
            })
          }
          done={(r) => after(`Retried ${(r as { retried: number }).retried} job(s).`)()}
        />
        <Action
          label="Delete all matching"
          danger
          confirm={`Delete every job ${filterText} for good?`}
          run={() =>
            api('/ojs/v1/admin/dead-letter', {
              method: 'DELETE',
              body: { ...filter, confirm: true },
            })
          }
          done={(r) => after(`Deleted ${(r as { purged_count: number }).purged_count} job(s).`)()}
        />
      </fieldset>
      <Notice text={outcome} />
      <ErrorBox error={page.error} />
      {page.data === undefined ? (
        <Loading what="the dead letter queue" />
      ) : (
        <>
          <JobTable jobs={page.data.items} select={{ selected, toggle }} />
          <Pager
            cursors={cursors}
            next={page.data.pagination.next_cursor}
            total={total}
            shown={page.data.items.length}
            go={(next) =>
              navigate('dead-letter', { queue, type, cursors: next.join(' ') || undefined })
            }
          />
        </>
      )}
    </section>
  );
}
