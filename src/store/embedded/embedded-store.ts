// The embedded engine behind the Store contract (DESIGN.md section 2): an in-process, in-memory
// stand-in for MongoDB so that `npm start` and `npm test` need no server.
import type { ClientSession, Db, Document } from 'mongodb';
import type { Store, StoreCollection, StoreDb } from '../store.ts';
import { EmbeddedCollection } from './collection.ts';
import { Engine } from './engine.ts';

export interface EmbeddedStoreOptions {
  dbName?: string;
  /** How often TTL indexes are swept (MongoDB's TTL monitor: 60 s). */
  ttlSweepIntervalMs?: number;
}

/** The embedded Db: what the project and Agenda's MongoBackend call on a driver Db. */
export class EmbeddedDb {
  readonly #engine: Engine;
  readonly #collections = new Map<string, EmbeddedCollection>();
  readonly options = {};

  constructor(engine: Engine) {
    this.#engine = engine;
  }

  get databaseName(): string {
    return this.#engine.dbName;
  }

  collection(name: string): EmbeddedCollection {
    let c = this.#collections.get(name);
    if (!c) this.#collections.set(name, (c = new EmbeddedCollection(this.#engine, name)));
    return c;
  }

  async listCollectionNames(): Promise<string[]> {
    return this.#engine.run(undefined, () =>
      [...this.#engine.collections.values()].filter((c) => c.exists).map((c) => c.name).sort()
    );
  }

  listCollections(): { toArray(): Promise<Array<{ name: string; type: 'collection' }>> } {
    return {
      toArray: async () => (await this.listCollectionNames()).map((name) => ({ name, type: 'collection' as const })),
    };
  }

  async createCollection(name: string): Promise<EmbeddedCollection> {
    await this.#engine.run(undefined, () => this.#engine.markExists(this.#engine.data(name), undefined));
    return this.collection(name);
  }

  async dropCollection(name: string): Promise<boolean> {
    return this.#engine.run(undefined, () => this.#engine.collections.delete(name));
  }

  async dropDatabase(): Promise<boolean> {
    await this.#engine.run(undefined, () => this.#engine.collections.clear());
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
  readonly #engine: Engine;

  constructor(options: EmbeddedStoreOptions = {}) {
    this.#engine = new Engine({
      dbName: options.dbName ?? 'spend-control',
      ttlSweepIntervalMs: options.ttlSweepIntervalMs ?? 60_000,
    });
    const db = new EmbeddedDb(this.#engine);
    this.db = {
      collection: <T extends Document>(name: string) => db.collection(name) as unknown as StoreCollection<T>,
      listCollectionNames: () => db.listCollectionNames(),
      createCollection: async (name) => {
        await db.createCollection(name);
      },
      raw: db as unknown as Db,
    };
  }

  withTransaction<T>(fn: (session: ClientSession) => Promise<T>): Promise<T> {
    return this.#engine.withTransaction((session) => fn(session as unknown as ClientSession));
  }

  /** Removes expired TTL documents now instead of at the next sweep; returns how many. */
  sweepExpired(): Promise<number> {
    return this.#engine.sweepExpired();
  }

  async close(): Promise<void> {
    this.#engine.close();
  }
}

export async function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
  return new EmbeddedStore(options);
}
