/**
 * Jobs browser: filters (state, queue, type, error type, created between)
 * kept in the URL, keyset pages (newest first), search by id.
 */
import { useState } from 'preact/hooks';
import { withQuery } from '../api.ts';
import {
  ErrorBox,
  fmt,
  Header,
  JOB_STATES,
  Loading,
  Pager,
  SearchById,
  StateBadge,
  Time,
} from '../components.tsx';
import { jobEvents, useApi } from '../hooks.ts';
import { href, navigate } from '../router.ts';

export interface WireJob {
  id: string;
  type: string;
  queue: string;
  state: string;
  attempt: number;
  max_attempts?: number;
  created_at: string;
  enqueued_at?: string;
  completed_at?: string;
  error?: { type?: string; message?: string } | null;
  errors?: { type?: string; message?: string }[];
}

export interface JobPage {
  items: WireJob[];
  pagination: { total: number | null; next_cursor?: string; has_more: boolean };
}

/** Filters the store counts by reading every job (no index serves them). */
const UNINDEXED = ['error_type', 'since', 'until'] as const;

export interface Total {
  /** The count, once known. */
  value: number | undefined;
  /** Counting is on demand for this filter (it reads every job). */
  onDemand: boolean;
  /** Starts the count of an on-demand filter. */
  count(): void;
}

/**
 * The number of jobs a filter matches, asked once the rows are on screen so
 * the rows never queue behind a count on the store. A filter no index
 * serves (error type, creation time) is counted on request only: at
 * 1,000,000 jobs that reads them all. Not live: a count per event would
 * keep the store busy.
 */
export function useTotal(
  path: string,
  filters: Record<string, string | undefined>,
  rowsShown: boolean,
): Total {
  const onDemand = UNINDEXED.some((f) => (filters[f] ?? '') !== '');
  const [asked, setAsked] = useState<string>();
  const countPath = withQuery(path, { ...filters, per_page: 1 });
  const wanted = rowsShown && (!onDemand || asked === countPath);
  const count = useApi<JobPage>(wanted ? countPath : null);
  return {
    value: wanted ? (count.data?.pagination.total ?? undefined) : undefined,
    onDemand: onDemand && asked !== countPath,
    count: () => setAsked(countPath),
  };
}

/** The filters the URL may carry, as the admin API names them. */
const FILTERS = ['state', 'queue', 'type', 'error_type', 'since', 'until'] as const;

/** `datetime-local` value (local time) <-> ISO instant. */
const toIso = (local: string) => (local === '' ? '' : new Date(local).toISOString());
const toLocal = (iso: string | null) => {
  if (!iso) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

export function JobsView({ query }: { query: URLSearchParams }) {
  const filters = Object.fromEntries(FILTERS.map((f) => [f, query.get(f) ?? undefined]));
  const cursors = (query.get('cursors') ?? '').split(' ').filter((c) => c !== '');
  const path = withQuery('/ojs/v1/admin/jobs', {
    ...filters,
    per_page: 50,
    cursor: cursors.at(-1),
    total: false,
  });
  // Live only on the first page: later pages would shift under the reader.
  const jobs = useApi<JobPage>(path, cursors.length === 0 ? jobEvents : undefined);
  const total = useTotal('/ojs/v1/admin/jobs', filters, jobs.data !== undefined);
  const go = (next: Record<string, string | undefined>) => navigate('jobs', next);
  return (
    <section>
      <Header title="Jobs">
        <SearchById section="jobs" label="Find a job by id" />
      </Header>
      <Filters values={filters} apply={(values) => go(values)} />
      <ErrorBox error={jobs.error} />
      {jobs.data === undefined ? (
        <Loading what="jobs" />
      ) : (
        <>
          <JobTable jobs={jobs.data.items} />
          <Pager
            cursors={cursors}
            next={jobs.data.pagination.next_cursor}
            total={total}
            shown={jobs.data.items.length}
            go={(next) => go({ ...filters, cursors: next.join(' ') || undefined })}
          />
        </>
      )}
    </section>
  );
}

export function JobTable({
  jobs,
  select,
}: {
  jobs: WireJob[];
  select?: { selected: Set<string>; toggle: (id: string) => void };
}) {
  if (jobs.length === 0) return <p class="muted">No jobs match.</p>;
  return (
    <div class="scroll">
      <table class="table jobs">
        <thead>
          <tr>
            {select ? (
              <th scope="col">
                <span class="sr-only">Select</span>
              </th>
            ) : null}
            <th scope="col">Job</th>
            <th scope="col">State</th>
            <th scope="col">Queue</th>
            <th scope="col" class="num">
              Attempt
            </th>
            <th scope="col">Last error</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => {
            const error = job.error ?? job.errors?.at(-1);
            return (
              <tr key={job.id} data-job={job.id}>
                {select ? (
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select job ${job.id}`}
                      checked={select.selected.has(job.id)}
                      onChange={() => select.toggle(job.id)}
                    />
                  </td>
                ) : null}
                <th scope="row">
                  <a href={`#/jobs/${encodeURIComponent(job.id)}`}>{job.type}</a>
                  <div class="muted small mono">{job.id}</div>
                </th>
                <td>
                  <StateBadge state={job.state} />
                </td>
                <td>{job.queue}</td>
                <td class="num">
                  {fmt(job.attempt)}
                  {job.max_attempts ? ` / ${job.max_attempts}` : ''}
                </td>
                <td class="error-cell">
                  {error ? `${error.type ?? 'error'}: ${error.message ?? ''}` : ''}
                </td>
                <td>
                  <Time at={job.created_at} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function Filters(props: {
  values: Record<string, string | undefined>;
  apply: (values: Record<string, string | undefined>) => void;
}) {
  const [values, setValues] = useState(props.values);
  const set = (name: string) => (e: Event) =>
    setValues({ ...values, [name]: (e.target as HTMLInputElement).value });
  return (
    <form
      class="filters"
      aria-label="Filter jobs"
      onSubmit={(e) => {
        e.preventDefault();
        props.apply(values);
      }}
    >
      <label>
        State
        <select value={values.state ?? ''} onChange={set('state')}>
          <option value="">any</option>
          {JOB_STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label>
        Queue
        <input value={values.queue ?? ''} onInput={set('queue')} placeholder="default" />
      </label>
      <label>
        Type
        <input
          value={values.type ?? ''}
          onInput={set('type')}
          placeholder="email.* or email.send"
        />
      </label>
      <label>
        Error type
        <input value={values.error_type ?? ''} onInput={set('error_type')} />
      </label>
      {(
        [
          ['since', 'Created from'],
          ['until', 'Created before'],
        ] as const
      ).map(([name, label]) => (
        <label key={name}>
          {label}
          <input
            type="datetime-local"
            value={toLocal(values[name] ?? null)}
            onInput={(e) =>
              setValues({ ...values, [name]: toIso((e.target as HTMLInputElement).value) })
            }
          />
        </label>
      ))}
      <div class="toolbar">
        <button type="submit" class="primary">
          Apply filters
        </button>
        <a class="button" href={href('jobs')}>
          Clear
        </a>
      </div>
    </form>
  );
}
