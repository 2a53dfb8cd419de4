/**
 * CPU per job, per phase and per process (decision 0095), one code path for
 * our runs and the anchors': at each phase boundary of common.js (see
 * phase-hook.ts) the bench reads the CPU time of every process taking part,
 * grouped by role, and a phase's CPU is the difference between its end and
 * its start. Roles:
 *
 * - producer: the common.js producer process (ours: the SDK client, or the
 *   client + an engine in-process; BullMQ: its Queue; graphile-worker: its
 *   addJob calls);
 * - worker: the producer's children (the worker process common.js forks);
 * - server: our `ojs serve` process (modes with a server);
 * - redis-server: the Redis server (Redis store, BullMQ); it counts every
 *   client of that Redis;
 * - postgres: the PostgreSQL backends whose client sockets belong to the
 *   producer, the worker or the server (found through /proc/net/tcp and
 *   pg_stat_activity.client_port, so other clients of the same PostgreSQL
 *   are not counted).
 *
 * A process seen once keeps counting with its last reading: a backend that
 * exits between two boundaries loses only what it spent since the last one.
 */
import pg from 'pg';
import { childPids, clientPorts, cpuSeconds, readProcMemory } from './proc.ts';

export const ROLES = ['producer', 'worker', 'server', 'redis-server', 'postgres'] as const;
export type Role = (typeof ROLES)[number];

/** Cumulative CPU seconds per role at one moment. */
export type RoleSeconds = Partial<Record<Role, number>>;

export interface PhaseMark {
  phase: string;
  edge: 'start' | 'end';
  cpu: RoleSeconds;
}

/** CPU seconds per role spent in each phase: the end reading minus the start reading. */
export function phaseSeconds(marks: readonly PhaseMark[]): Record<string, RoleSeconds> {
  const out: Record<string, RoleSeconds> = {};
  const starts = new Map<string, RoleSeconds>();
  for (const mark of marks) {
    if (mark.edge === 'start') {
      starts.set(mark.phase, mark.cpu);
      continue;
    }
    const start = starts.get(mark.phase);
    if (start === undefined) continue;
    const spent: RoleSeconds = {};
    for (const role of ROLES) {
      const end = mark.cpu[role];
      if (end === undefined) continue;
      // A role first seen during the phase (a backend connected in it) started from 0.
      spent[role] = Math.max(0, end - (start[role] ?? 0));
    }
    out[mark.phase] = spent;
  }
  return out;
}

export interface CpuPerJob {
  /** µs of CPU per job, per role. */
  roles: RoleSeconds;
  /** The sum of the roles, µs per job. */
  total: number;
}

/** µs per job of each role and in total (null without jobs). */
export function cpuPerJob(spent: RoleSeconds, jobs: number | null | undefined): CpuPerJob | null {
  if (jobs === null || jobs === undefined || jobs <= 0) return null;
  const roles: RoleSeconds = {};
  let total = 0;
  for (const role of ROLES) {
    const s = spent[role];
    if (s === undefined) continue;
    const us = Math.round(((s * 1e6) / jobs) * 10) / 10;
    roles[role] = us;
    total += us;
  }
  return { roles, total: Math.round(total * 10) / 10 };
}

export interface SamplerTargets {
  /** Our server process. */
  server?: number | null;
  /** redis-server, when the run uses Redis. */
  redis?: number | null;
  /** PostgreSQL URL, when the run uses PostgreSQL: its backends serving our processes count. */
  postgresUrl?: string;
}

/**
 * Reads the CPU of a run's processes by role. The producer pid arrives with
 * the first phase boundary; workers and PostgreSQL backends are looked up
 * again at every reading.
 */
export class CpuSampler {
  readonly #targets: SamplerTargets;
  readonly #last = new Map<number, { role: Role; cpu: number }>();
  readonly #peakRss: Partial<Record<Role, number>> = {};
  #pg: pg.Client | undefined;
  #pgProblem: string | undefined;
  producer: number | undefined;
  /** Our server process, once started. */
  server: number | null | undefined;
  readonly marks: PhaseMark[] = [];

  constructor(targets: SamplerTargets) {
    this.#targets = targets;
    this.server = targets.server;
  }

  async #postgresBackends(clients: number[]): Promise<number[]> {
    const url = this.#targets.postgresUrl;
    if (url === undefined || this.#pgProblem !== undefined) return [];
    const ports = clientPorts(clients, Number(new URL(url).port || 5432));
    if (ports.length === 0) return [];
    try {
      if (this.#pg === undefined) {
        const client = new pg.Client({ connectionString: url, application_name: 'ojs-bench-cpu' });
        client.on('error', () => {});
        await client.connect();
        this.#pg = client;
      }
      const { rows } = await this.#pg.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[]) AND pid <> pg_backend_pid()',
        [ports],
      );
      return rows.map((r) => r.pid);
    } catch (error) {
      this.#pgProblem = (error as Error).message;
      return [];
    }
  }

  /** Reads every process now; returns the cumulative seconds per role. */
  async read(): Promise<RoleSeconds> {
    const byRole: Partial<Record<Role, number[]>> = {};
    const add = (role: Role, pid: number | null | undefined) => {
      if (pid === null || pid === undefined) return;
      const list = byRole[role] ?? [];
      list.push(pid);
      byRole[role] = list;
    };
    add('producer', this.producer);
    if (this.producer !== undefined) for (const pid of childPids(this.producer)) add('worker', pid);
    add('server', this.server);
    add('redis-server', this.#targets.redis);
    const clients = [
      ...(byRole.producer ?? []),
      ...(byRole.worker ?? []),
      ...(byRole.server ?? []),
    ];
    for (const pid of await this.#postgresBackends(clients)) add('postgres', pid);
    for (const [role, pids] of Object.entries(byRole) as [Role, number[]][]) {
      for (const pid of pids) {
        const cpu = cpuSeconds(pid);
        if (cpu !== null) this.#last.set(pid, { role, cpu });
        const peak = readProcMemory(pid).peak_rss_mib;
        if (peak !== null && role !== 'postgres' && role !== 'redis-server')
          this.#peakRss[role] = Math.max(this.#peakRss[role] ?? 0, peak);
      }
    }
    const out: RoleSeconds = {};
    for (const { role, cpu } of this.#last.values()) out[role] = (out[role] ?? 0) + cpu;
    for (const role of Object.keys(byRole) as Role[]) out[role] ??= 0;
    return out;
  }

  /** The listener for runNodeScript's onPhase. */
  readonly onPhase = async (b: { pid: number; phase: string; edge: 'start' | 'end' }) => {
    this.producer ??= b.pid;
    this.marks.push({ phase: b.phase, edge: b.edge, cpu: await this.read() });
  };

  /** Peak RSS (VmHWM) seen per role (producer, worker, server), MiB. */
  get peakRss(): Partial<Record<Role, number>> {
    return { ...this.#peakRss };
  }

  get problem(): string | undefined {
    return this.#pgProblem === undefined
      ? undefined
      : `PostgreSQL backends not read: ${this.#pgProblem}`;
  }

  async close(): Promise<void> {
    await this.#pg?.end().catch(() => {});
    this.#pg = undefined;
  }
}
