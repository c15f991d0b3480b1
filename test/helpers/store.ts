// A fresh store for one test file: the embedded engine on a private in-memory database, or a new
// database on TEST_MONGODB_URI (set by `npm run test:mongo`), dropped again when the store is closed.
import { randomBytes } from 'node:crypto';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';

export async function testStore(): Promise<Store> {
  const uri = process.env.TEST_MONGODB_URI || undefined;
  const store = await openStore({ mongodbUri: uri, dbName: `test_${randomBytes(6).toString('hex')}`, dataDir: ':memory:' });
  if (store.engine !== 'mongodb') return store;
  const close = store.close.bind(store);
  return Object.assign(store, {
    async close() {
      try {
        await store.db.raw.dropDatabase();
      } finally {
        await close();
      }
    },
  });
}
