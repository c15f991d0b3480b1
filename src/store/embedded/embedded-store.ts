// The embedded engine behind the Store contract (docs/internals/design.md §2): MongoDB's API over a
// durable SQLite database in DATA_DIR, so that `npm start` needs no server and keeps its data.
import type { ClientSession, Db, Document } from 'mongodb';
import type { Store, StoreCollection, StoreDb, StoreTransactionOptions } from '../store.ts';
import { clientBulkWrite } from './client-bulk-write.ts';
import { EmbeddedCollection } from './collection.ts';
import { openDatabase, type Synchronous } from './database-file.ts';
import { Engine, GROUP_MAX_MS } from './engine.ts';
import { memo } from './values.ts';

export interface EmbeddedStoreOptions {
  dbName?: string;
  /** A directory for the database file, or ':memory:' (the default) for a private in-memory one. */
  dataDir?: string;
  /** NORMAL survives a crash of the process; FULL also a loss of power (an fsync per commit). */
  synchronous?: Synchronous;
  /** How often TTL indexes are swept (MongoDB's TTL monitor: 60 s). */
  ttlSweepIntervalMs?: number;
  /** How long a commit group may stay open; the default, GROUP_MAX_MS, bounds how long SQLite's write lock is held. */
  groupMaxMs?: number;
}

/** The embedded Db: what the project and Agenda's MongoBackend call on a driver Db. */
export class EmbeddedDb {
  readonly #engine: Engine;
  /**
   * A handle is only a name: past a bound all are forgotten (a reader asking for made-up names would
   * otherwise grow this for ever), and the service's few are made again.
   */
  readonly #handles: (name: string) => EmbeddedCollection;
  readonly options = {};

  constructor(engine: Engine) {
    this.#engine = engine;
    this.#handles = memo(1024, (name: string) => new EmbeddedCollection(engine, name));
  }

  get databaseName(): string {
    return this.#engine.dbName;
  }

  collection(name: string): EmbeddedCollection {
    return this.#handles(name);
  }

  async listCollectionNames(): Promise<string[]> {
    return this.#engine.read(undefined, () => this.#engine.collectionNames());
  }

  listCollections(): { toArray(): Promise<Array<{ name: string; type: 'collection' }>> } {
    return {
      toArray: async () => (await this.listCollectionNames()).map((name) => ({ name, type: 'collection' as const })),
    };
  }

  /** Runs synchronous collection steps as one write (client-bulk-write.ts); `atomic` undoes one step that fails. */
  _write<T>(session: unknown, op: (atomic: <S>(step: () => S) => S) => T): Promise<T> {
    return this.#engine.write(session, () => op((step) => this.#engine.atomic(step)));
  }

  async createCollection(name: string): Promise<EmbeddedCollection> {
    await this.#engine.write(undefined, () => this.#engine.data(name).ensure());
    return this.collection(name);
  }

  async dropCollection(name: string): Promise<boolean> {
    return this.#engine.write(undefined, () => this.#engine.dropCollection(name));
  }

  async dropDatabase(): Promise<boolean> {
    await this.#engine.write(undefined, () => {
      for (const name of this.#engine.collectionNames()) this.#engine.dropCollection(name);
    });
    return true;
  }

  async command(command: Record<string, unknown>): Promise<Record<string, unknown>> {
    if ('ping' in command) return { ok: 1 };
    throw new Error(`the embedded engine does not run the command ${Object.keys(command)[0]}`);
  }
}

export class EmbeddedStore implements Store {
  readonly engine = 'embedded' as const;
  readonly db: StoreDb;
  /** The database file, or ':memory:'. */
  readonly location: string;
  readonly #engine: Engine;

  constructor(options: EmbeddedStoreOptions = {}) {
    const opened = openDatabase(options.dataDir ?? ':memory:', options.synchronous ?? 'NORMAL');
    this.location = opened.location;
    this.#engine = new Engine(opened.db, opened.location, {
      dbName: options.dbName ?? 'spend-control',
      ttlSweepIntervalMs: options.ttlSweepIntervalMs ?? 60_000,
      groupMaxMs: options.groupMaxMs ?? GROUP_MAX_MS,
    });
    const db = new EmbeddedDb(this.#engine);
    this.db = {
      collection: <T extends Document>(name: string) => db.collection(name) as unknown as StoreCollection<T>,
      listCollectionNames: () => db.listCollectionNames(),
      createCollection: async (name) => {
        await db.createCollection(name);
      },
      bulkWrite: (models, options) => clientBulkWrite(db, models, options),
      raw: db as unknown as Db,
    };
  }

  withTransaction<T>(fn: (session: ClientSession) => Promise<T>, options: StoreTransactionOptions = {}): Promise<T> {
    return this.#engine.withTransaction((session) => fn(session as unknown as ClientSession), options.onApplied);
  }

  /** Removes expired TTL documents now instead of at the next sweep; returns how many. */
  sweepExpired(): Promise<number> {
    return this.#engine.sweepExpired();
  }

  /** A generated credential's digest, kept in the database (Engine.credentialDigest). */
  credentialDigest(name: string, make: () => string): Promise<{ sha256: string; created: string | null }> {
    return this.#engine.credentialDigest(name, make);
  }

  /** A value kept in the database (e.g. a generated key): the stored one, or make()'s when none was. */
  secret(name: string, make: () => string): Promise<{ value: string; created: boolean }> {
    return this.#engine.secret(name, make);
  }

  async close(): Promise<void> {
    await this.#engine.close();
  }
}

export async function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
  return new EmbeddedStore(options);
}
