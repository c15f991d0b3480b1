// A consistent copy of the live embedded database, taken without stopping the service: VACUUM
// INTO reads one snapshot (WAL lets the service keep writing meanwhile) and writes a compact,
// self-contained database file.
import { chmodSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DATABASE_FILE } from './database-file.ts';

export function backupDatabase(dataDir: string, target: string): { source: string; target: string } {
  const source = join(resolve(dataDir), DATABASE_FILE);
  const out = resolve(target);
  if (!existsSync(source)) throw new Error(`no database at ${source} (is DATA_DIR right?)`);
  if (existsSync(out)) throw new Error(`${out} already exists: choose a new file name`);
  const db = new DatabaseSync(source);
  try {
    db.exec('PRAGMA busy_timeout = 10000');
    db.prepare('VACUUM INTO ?').run(out);
  } finally {
    db.close();
  }
  chmodSync(out, 0o600);
  return { source, target: out };
}
