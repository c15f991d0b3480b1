// A fresh store for one test file: the embedded engine on a private in-memory database, or a new
// database on TEST_MONGODB_URI (set by `npm run test:mongo`), emptied again when the store is closed.
import { randomBytes } from 'node:crypto';
import { openStore } from '../../src/store/open-store.ts';
import type { Store, StoreDb } from '../../src/store/store.ts';

/**
 * Empties every collection, one at a time: a plain `readWrite` user (an Atlas user, say) may not
 * dropDatabase, and the indexes stay for the next run.
 */
/**
 * Every document of every collection, but a credential's lastUsedAt (docs/reference/decisions.md: recorded
 * on every call, the only write a simulation causes): what a test compares to prove nothing was written.
 */
export async function storeSnapshot(db: StoreDb): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const name of (await db.listCollectionNames()).sort()) {
    out[name] = (await db.collection(name).find({}).sort({ _id: 1 }).toArray()).map(({ lastUsedAt: _, ...doc }) => doc);
  }
  return out;
}

export async function emptyCollections(db: StoreDb): Promise<void> {
  for (const name of await db.listCollectionNames()) await db.collection(name).deleteMany({});
}

// The deadline of each command in the driver lane. The service's default (10 s) is for a real mongod;
// the wire listener over SQLite is far slower at emptying thousands of test documents with one
// deleteMany on a loaded 2-core machine. test/store/mongo-deadlines.test.ts tests the deadline itself.
export const LANE_TIMEOUT_MS = 120_000;

export async function testStore(): Promise<Store> {
  const uri = process.env.TEST_MONGODB_URI || undefined;
  const store = await openStore({ mongodbUri: uri, dbName: `test_${randomBytes(6).toString('hex')}`, dataDir: ':memory:', timeoutMs: LANE_TIMEOUT_MS });
  if (store.engine !== 'mongodb') return store;
  const close = store.close.bind(store);
  return Object.assign(store, {
    async close() {
      try {
        await emptyCollections(store.db);
      } finally {
        await close();
      }
    },
  });
}

/**
 * The same store as another process sees it: what a process remembers per store starts afresh (a restart).
 * `collection` may stand in for the db's own, to inject a failure into one collection's writes.
 */
export function asNewProcess(store: Store, collection?: StoreDb['collection']): Store {
  const another = <T extends object>(target: T, own: Partial<T> = {}): T =>
    new Proxy(target, {
      get: (t, prop) => {
        if (prop in own) return own[prop as keyof T];
        const value = Reflect.get(t, prop, t);
        return typeof value === 'function' ? value.bind(t) : value;
      },
    });
  return another(store, { db: another(store.db, collection ? { collection } : {}) });
}
