/**
 * Readings of other processes from Linux's /proc (decision 0095): CPU time
 * (`/proc/<pid>/stat` utime + stime, every thread of the process), memory
 * (`/proc/<pid>/status` VmRSS and its peak VmHWM), a process's children,
 * and which local TCP ports a process's sockets use (to find the
 * PostgreSQL backends that serve it). The parsers are pure and tested; the
 * readers return null when the process is gone.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in ticks of 1/100 s. */
export const TICKS_PER_S = 100;

export interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  /** User + system CPU time of the process (all its threads), seconds. */
  cpu_s: number;
}

/** Parses `/proc/<pid>/stat`; the command name may hold spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  // Fields after the command name, from field 3 (state) on: ppid is field 4,
  // utime field 14, stime field 15 (proc(5)).
  const fields = text
    .slice(close + 2)
    .trim()
    .split(' ');
  const ppid = Number(fields[1]);
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (![ppid, utime, stime].every(Number.isFinite)) return null;
  return {
    pid: Number(text.slice(0, open).trim()),
    comm: text.slice(open + 1, close),
    ppid,
    cpu_s: (utime + stime) / TICKS_PER_S,
  };
}

export function readProcStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** User + system CPU seconds of a process so far (null if unreadable). */
export function cpuSeconds(pid: number | null | undefined): number | null {
  if (pid === null || pid === undefined) return null;
  return readProcStat(pid)?.cpu_s ?? null;
}

export interface ProcMemory {
  rss_mib: number | null;
  /** Peak resident set size since the process started (VmHWM). */
  peak_rss_mib: number | null;
}

/** Parses VmRSS and VmHWM (kB) of `/proc/<pid>/status`. */
export function parseProcStatus(text: string): ProcMemory {
  const kib = (field: string) => {
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
    return match ? Math.round((Number(match[1]) / 1024) * 10) / 10 : null;
  };
  return { rss_mib: kib('VmRSS'), peak_rss_mib: kib('VmHWM') };
}

export function readProcMemory(pid: number | null | undefined): ProcMemory {
  if (pid === null || pid === undefined) return { rss_mib: null, peak_rss_mib: null };
  try {
    return parseProcStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return { rss_mib: null, peak_rss_mib: null };
  }
}

/** The live processes whose parent is `pid` (a scan of /proc). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProcStat(Number(entry));
    if (stat?.ppid === pid) out.push(stat.pid);
  }
  return out;
}

export interface TcpSocket {
  local_port: number;
  remote_port: number;
  inode: number;
}

/** Parses `/proc/net/tcp` or `/proc/net/tcp6` (header line first; ports in hex). */
export function parseNetTcp(text: string): TcpSocket[] {
  const out: TcpSocket[] = [];
  for (const line of text.split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 10) continue;
    const port = (address: string | undefined) => Number.parseInt(address?.split(':')[1] ?? '', 16);
    const socket = {
      local_port: port(cols[1]),
      remote_port: port(cols[2]),
      inode: Number(cols[9]),
    };
    if (Number.isFinite(socket.local_port) && Number.isFinite(socket.remote_port)) out.push(socket);
  }
  return out;
}

/** Socket inodes held open by a process (`/proc/<pid>/fd/* -> socket:[inode]`). */
export function socketInodes(pid: number): Set<number> {
  const out = new Set<number>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (match) out.add(Number(match[1]));
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // process gone
  }
  return out;
}

/**
 * Local ports of the TCP connections that the processes `pids` hold to
 * `remotePort` (e.g. their PostgreSQL connections), from /proc/net/tcp{,6}.
 */
export function clientPorts(pids: readonly number[], remotePort: number): number[] {
  const inodes = new Set<number>();
  for (const pid of pids) for (const inode of socketInodes(pid)) inodes.add(inode);
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const s of parseNetTcp(text))
      if (s.remote_port === remotePort && inodes.has(s.inode)) ports.push(s.local_port);
  }
  return ports;
}
