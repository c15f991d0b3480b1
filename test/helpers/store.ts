// A fresh store for one test file: the embedded engine on a private in-memory database, or a new
// database on TEST_MONGODB_URI (set by `npm run test:mongo`), emptied again when the store is closed.
import { randomBytes } from 'node:crypto';
import { openStore } from '../../src/store/open-store.ts';
import type { Store, StoreDb } from '../../src/store/store.ts';

/**
 * Empties every collection, one at a time: a plain `readWrite` user (an Atlas user, say) may not
 * dropDatabase, and the indexes stay for the next run.
 */
export async function emptyCollections(db: StoreDb): Promise<void> {
  for (const name of await db.listCollectionNames()) await db.collection(name).deleteMany({});
}

export async function testStore(): Promise<Store> {
  const uri = process.env.TEST_MONGODB_URI || undefined;
  const store = await openStore({ mongodbUri: uri, dbName: `test_${randomBytes(6).toString('hex')}`, dataDir: ':memory:' });
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
