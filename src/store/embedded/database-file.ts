// Opening the embedded store's SQLite database: DATA_DIR checked before anything is written
// (a problem stops the start with a message naming the path), the schema created or checked,
// and the connection tuned (WAL, synchronous, busy_timeout).
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { quoteIdent, tableOf } from './table-names.ts';

/** The schema this code writes and reads; a database of a later version is refused. */
export const SCHEMA_VERSION = 3;
export const DATABASE_FILE = 'spend-control.db';

/** The prefix of the engine's own tables; a collection may not start with it, nor with sqlite_. */
export const INTERNAL_PREFIX = '_sc_';

/** The collections' tables. Not LIKE: its _ matches any character, and would hide a collection named escrow. */
export const COLLECTION_TABLES = `SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ${INTERNAL_PREFIX.length}) <> '${INTERNAL_PREFIX}' AND substr(name, 1, 7) <> 'sqlite_'`;

export type Synchronous = 'NORMAL' | 'FULL';

/** DATA_DIR or its database cannot be used; nothing was changed. */
export class DataDirError extends Error {
  constructor(path: string, problem: string) {
    super(`DATA_DIR: ${path} ${problem}`);
    this.name = 'DataDirError';
  }
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS _sc_meta (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _sc_indexes (ix INTEGER PRIMARY KEY, coll TEXT NOT NULL, name TEXT NOT NULL, spec TEXT NOT NULL, UNIQUE (coll, name));
CREATE TABLE IF NOT EXISTS _sc_keys (ix INTEGER NOT NULL, k TEXT NOT NULL, r INTEGER NOT NULL, u INTEGER, t INTEGER, PRIMARY KEY (ix, k, r)) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS _sc_keys_unique ON _sc_keys (ix, k) WHERE u = 1;
CREATE INDEX IF NOT EXISTS _sc_keys_ttl ON _sc_keys (ix, t) WHERE t IS NOT NULL;
`;

/**
 * Version 1 to 2: each collection table gets its rows' index keys in a column of its own (see
 * collection-data.ts), filled from _sc_keys through _sc_keys_row, which is then dropped.
 */
function migrateToVersion2(db: DatabaseSync): void {
  const tables = db.prepare(COLLECTION_TABLES).all() as Array<{ name: string }>;
  for (const { name } of tables) {
    const table = quoteIdent(name);
    db.exec(`ALTER TABLE ${table} ADD COLUMN ks TEXT`);
    db.prepare(
      `UPDATE ${table} SET ks = (
        SELECT CASE WHEN count(*) > 0 THEN json_group_object(ix, json(keys)) END FROM (
          SELECT ix, json_group_array(k) AS keys FROM _sc_keys
          WHERE ix IN (SELECT ix FROM _sc_indexes WHERE coll = ?) AND r = ${table}.r GROUP BY ix))`,
    ).run(name);
  }
  db.exec('DROP INDEX _sc_keys_row');
}

/**
 * Version 2 to 3: the table of a collection whose name has capital letters is renamed to tableOf's
 * name for it. Until then Foo and foo shared one table.
 */
function migrateToVersion3(db: DatabaseSync): void {
  const tables = db.prepare(COLLECTION_TABLES).all() as Array<{ name: string }>;
  for (const { name } of tables) {
    if (/[A-Z]/.test(name)) db.exec(`ALTER TABLE ${quoteIdent(name)} RENAME TO ${quoteIdent(tableOf(name))}`);
  }
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
  } catch {
    return false;
  }
  // root passes access(2) everywhere: honour the owner's write bit as the operator's intent.
  return (statSync(path).mode & 0o200) !== 0;
}

/**
 * Checks the file's header and schema version by reading its first 100 bytes: even a read-only
 * SQLite connection would create the -wal and -shm files of a WAL database.
 */
function inspect(file: string): void {
  const header = Buffer.alloc(100);
  const fd = openSync(file, 'r');
  let length: number;
  try {
    length = readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (length === 0) return;
  if (length < 100 || header.toString('latin1', 0, 16) !== 'SQLite format 3\0') {
    throw new DataDirError(file, 'is not a readable database (corrupt or not SQLite): its header is not an SQLite header');
  }
  const version = header.readInt32BE(60);
  if (version > SCHEMA_VERSION) {
    throw new DataDirError(file, `was written by a newer version of this service (schema version ${version}; this version knows up to ${SCHEMA_VERSION}): upgrade the service or restore a backup`);
  }
}

/**
 * Opens DATA_DIR's database (creating DATA_DIR mode 0700 and the file mode 0600 when missing),
 * or ':memory:' for a private in-memory database.
 */
export function openDatabase(dataDir: string, synchronous: Synchronous): { db: DatabaseSync; location: string } {
  let location = ':memory:';
  if (dataDir !== ':memory:') {
    const dir = resolve(dataDir);
    if (existsSync(dir)) {
      if (!statSync(dir).isDirectory()) throw new DataDirError(dir, 'is not a directory (a file is in the way)');
      if (!writable(dir)) throw new DataDirError(dir, 'is not writable');
    } else {
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
      } catch (error) {
        throw new DataDirError(dir, `cannot be created: ${(error as Error).message}`);
      }
    }
    location = join(dir, DATABASE_FILE);
    if (existsSync(location)) {
      if (!statSync(location).isFile()) throw new DataDirError(location, 'is not a regular file');
      if (!writable(location)) throw new DataDirError(location, 'is not writable');
      inspect(location);
    } else {
      // SQLite creates the -wal and -shm files with the database file's permissions.
      closeSync(openSync(location, 'a', 0o600));
    }
  }
  const db = new DatabaseSync(location);
  try {
    db.exec('PRAGMA busy_timeout = 10000');
    if (location !== ':memory:') {
      db.exec('PRAGMA journal_mode = WAL');
      // Checkpoints run on the checkpointer thread; this connection steps in only past ~256 MB.
      db.exec('PRAGMA wal_autocheckpoint = 65536');
      db.exec('PRAGMA journal_size_limit = 67108864');
    }
    db.exec(`PRAGMA synchronous = ${synchronous}`);
    // 4 MB of pages per connection: the hot path's rows are few and stay in the engine's own row cache
    // during a group; with 16 MB the soak ended 28 MB higher, and the bench's CPU per decision did not
    // tell the two apart (docs/internals/performance.md, "Memory: the soak").
    db.exec('PRAGMA cache_size = -4000');
    // Savepoint sub-journals (one per write inside a transaction) in memory, not in temporary files.
    db.exec('PRAGMA temp_store = MEMORY');
    db.exec('BEGIN IMMEDIATE');
    const { user_version: version } = db.prepare('PRAGMA user_version').get() as { user_version: number };
    if (version > SCHEMA_VERSION) throw new DataDirError(location, `was written by a newer version of this service (schema version ${version})`);
    db.exec(SCHEMA);
    if (version === 1) migrateToVersion2(db);
    if (version >= 1 && version < 3) migrateToVersion3(db);
    if (version < SCHEMA_VERSION) db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    db.exec('COMMIT');
  } catch (error) {
    if (db.isOpen && db.isTransaction) db.exec('ROLLBACK');
    db.close();
    if (error instanceof DataDirError) throw error;
    const message = (error as Error).message;
    // SQLITE_BUSY through the 10 s busy timeout: another program holds the database (an sqlite3 shell in
    // a transaction, a copy tool), not a damaged file.
    if (/database is locked/.test(message)) {
      throw new DataDirError(location, 'is locked by another program, which held it for 10 s (an sqlite3 shell with a transaction open, a copy or backup tool?): end that program\'s transaction, then start again');
    }
    throw new DataDirError(location, `cannot be opened as this service's database: ${message}`);
  }
  return { db, location };
}
