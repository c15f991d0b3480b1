// A shadow's changes page (src/simulations/shadow.ts) read while the shadow writes: its chunks are read a few at a
// time, and a chunk committed meanwhile whose first change was requested before the ones read (purchases commit in
// another order than they were requested) must not make the page list a change twice. No HTTP client can time a
// write between two of the page's reads, so the store is wrapped to make one there.
import test from 'ava';
import { testStore } from '../helpers/store.ts';
import { shadowChanges, shadowChangesPage } from '../../src/simulations/shadow.ts';
import type { StoreDb } from '../../src/store/store.ts';
import type { ShadowChangesDoc } from '../../src/policies/shadows.ts';

const VERSION = '0193c1a0-0000-7000-8000-000000000001';

const chunk = (minute: number): ShadowChangesDoc => {
  const requestedAt = new Date(Date.UTC(2026, 10, 1, 10, minute)).toISOString();
  const purchaseRequestId = `0193c1a0-0000-7000-8000-${String(minute).padStart(12, '0')}`;
  const key = `${requestedAt}|${purchaseRequestId}`;
  return { _id: `${VERSION}:${minute}`, versionId: VERSION, organizationId: 'org', fromKey: key, toKey: key, changes: JSON.stringify([{ purchaseRequestId, requestedAt }]) };
};

test('a chunk committed between two reads of a page does not list a change twice', async (t) => {
  const store = await testStore();
  t.teardown(() => store.close());
  for (const minute of [10, 20, 30, 40, 50, 60]) await shadowChanges(store.db).insertOne(chunk(minute));
  // After the page's first read, a purchase requested at 10:15 commits its chunk (behind four already read).
  let reads = 0;
  const db = new Proxy(store.db, {
    get(target, name) {
      if (name !== 'collection') return Reflect.get(target, name);
      return (collectionName: string) => {
        const collection = target.collection(collectionName);
        if (collectionName !== shadowChanges(target).collectionName) return collection;
        return new Proxy(collection, {
          get(c, method) {
            if (method !== 'find') {
              const value = Reflect.get(c, method);
              return typeof value === 'function' ? value.bind(c) : value;
            }
            // A cursor that runs the real query when read, after the write on the second read.
            return (...args: Parameters<typeof c.find>) => {
              const chain: [string, unknown[]][] = [];
              const cursor = {
                sort: (...a: unknown[]) => (chain.push(['sort', a]), cursor),
                skip: (...a: unknown[]) => (chain.push(['skip', a]), cursor),
                limit: (...a: unknown[]) => (chain.push(['limit', a]), cursor),
                toArray: async () => {
                  if (++reads === 2) await shadowChanges(store.db).insertOne(chunk(15));
                  let real: any = c.find(...args);
                  for (const [m, a] of chain) real = real[m](...a);
                  return real.toArray();
                },
              };
              return cursor;
            };
          },
        });
      };
    },
  }) as StoreDb;
  const page = await shadowChangesPage(db, VERSION, { limit: 50, after: null });
  const ids = page.changes.map((c) => c.purchaseRequestId);
  t.true(reads >= 2, 'the page was read in more than one go');
  t.is(new Set(ids).size, ids.length, `no change twice: ${ids.join(', ')}`);
});
