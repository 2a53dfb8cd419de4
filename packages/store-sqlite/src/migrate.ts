/**
 * Applies the numbered SQL files in ../sql in order, once each, recording
 * them in ojs_migrations. Runs inside BEGIN IMMEDIATE so two processes
 * opening the same new file cannot both migrate it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';

const SQL_DIR = new URL('../sql/', import.meta.url);

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function loadMigrations(dir: URL = SQL_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file,
      sql: readFileSync(new URL(file, dir), 'utf8'),
    }));
}

export function migrate(db: DatabaseSync, migrations: Migration[] = loadMigrations()): number {
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec(
      'CREATE TABLE IF NOT EXISTS ojs_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT',
    );
    const applied = new Set(
      (db.prepare('SELECT version FROM ojs_migrations').all() as { version: number }[]).map(
        (row) => row.version,
      ),
    );
    let count = 0;
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare('INSERT INTO ojs_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        new Date().toISOString(),
      );
      count++;
    }
    db.exec('COMMIT');
    return count;
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}
