/**
 * What a 201 means on this Redis: read from its persistence settings at
 * start (CONFIG GET) and said in one line, with a warning when an
 * acknowledged job does not survive a restart. Managed services that
 * refuse CONFIG are reported as unknown, not guessed.
 */
export interface Persistence {
  appendonly: string | null;
  appendfsync: string | null;
  save: string | null;
  maxmemoryPolicy: string | null;
}

export interface PersistenceVerdict {
  level: 'info' | 'warn';
  message: string;
}

export function judgePersistence(p: Persistence): PersistenceVerdict {
  if (p.appendonly === null) {
    return {
      level: 'warn',
      message:
        'Redis persistence unknown (CONFIG GET refused): an acknowledged job survives a Redis restart only if the server runs with appendonly yes.',
    };
  }
  const eviction =
    p.maxmemoryPolicy !== null && p.maxmemoryPolicy !== 'noeviction'
      ? ` maxmemory-policy is ${p.maxmemoryPolicy}: Redis may evict job keys under memory pressure; set noeviction.`
      : '';
  if (p.appendonly === 'yes' && p.appendfsync === 'always') {
    return {
      level: eviction ? 'warn' : 'info',
      message: `Redis AOF with appendfsync always: an acknowledged job is on disk before its reply.${eviction}`,
    };
  }
  if (p.appendonly === 'yes' && p.appendfsync === 'everysec') {
    return {
      level: eviction ? 'warn' : 'info',
      message: `Redis AOF with appendfsync everysec: a crash of the machine can lose up to about one second of acknowledged writes.${eviction}`,
    };
  }
  if (p.appendonly === 'yes') {
    // 'no' (or unreadable): the kernel writes the AOF back when it likes.
    return {
      level: 'warn',
      message: `Redis AOF with appendfsync ${p.appendfsync ?? 'unknown'}: the operating system decides when the AOF reaches the disk (about 30 s on Linux), so a crash of the machine can lose that much of acknowledged writes; a crash of Redis alone loses nothing. Use appendfsync everysec or always.${eviction}`,
    };
  }
  const snapshots =
    p.save !== null && p.save.trim() !== ''
      ? ` RDB snapshots (save ${p.save}) keep what existed at the last snapshot.`
      : ' Nothing is written to disk.';
  return {
    level: 'warn',
    message: `Redis runs without AOF (appendonly no): acknowledged jobs are lost when Redis restarts.${snapshots} Run Redis with appendonly yes (appendfsync everysec or always).${eviction}`,
  };
}
