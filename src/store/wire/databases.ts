// Which store answers for a database name. The web process serves its one store under its own
// name; the test lane opens a fresh store for every database name a test file asks for.
import type { Store } from '../store.ts';

export interface Databases {
  /** The store behind a name; with create, one is opened when the name allows it. */
  get(name: string, create: boolean): Promise<Store | undefined>;
  names(): string[];
  /** Empties the database (and forgets it where stores are opened on demand). */
  drop(name: string): Promise<void>;
  close(): Promise<void>;
}

/** One store, under the database name it was opened with. */
export function singleDatabase(store: Store): Databases {
  const name = store.db.raw.databaseName;
  return {
    get: async (asked) => (asked === name ? store : undefined),
    names: () => [name],
    drop: async (asked) => {
      if (asked === name) await store.db.raw.dropDatabase();
    },
    close: async () => {},
  };
}

/** A new store for each database name, closed when dropped. */
export function storePerDatabase(open: (name: string) => Promise<Store>): Databases {
  const stores = new Map<string, Promise<Store>>();
  return {
    get: (name, create) => {
      let store = stores.get(name);
      if (!store && create) stores.set(name, (store = open(name)));
      return store ?? Promise.resolve(undefined);
    },
    names: () => [...stores.keys()].sort(),
    drop: async (name) => {
      const store = stores.get(name);
      stores.delete(name);
      if (store) await (await store).close();
    },
    close: async () => {
      const all = [...stores.values()];
      stores.clear();
      await Promise.all(all.map(async (s) => (await s).close()));
    },
  };
}
