// 500 internal_error (docs/reference/contract.md §7): a server failure renders the error body, says it is safe to retry,
// and does not leak the cause.
import test from 'ava';
import { startApp } from '../helpers/app.ts';
import { applyManifest, acmeManifest } from '../helpers/fixtures.ts';
import { testStore } from '../helpers/store.ts';
import type { Store, StoreCollection } from '../../src/store/store.ts';

/** The store, except that writing a purchase fails once `broken` is set, as a lost connection would. */
function breakable(store: Store): { store: Store; break(): void } {
  let broken = false;
  const failing = async () => {
    throw new Error('connection to the database was lost: secret-host:27017');
  };
  const collection = (name: string): StoreCollection => {
    const real = store.db.collection(name);
    if (name !== 'purchases') return real;
    return new Proxy(real, {
      get(target, prop) {
        if (prop === 'insertOne' && broken) return failing;
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  const wrapped: Store = {
    engine: store.engine,
    db: {
      ...store.db,
      collection: collection as Store['db']['collection'],
      bulkWrite: (models, options) => (broken && models.some((m) => m.namespace.endsWith('.purchases')) ? failing() : store.db.bulkWrite(models, options)),
    },
    withTransaction: (fn) => store.withTransaction(fn),
    close: () => store.close(),
  };
  return { store: wrapped, break: () => (broken = true) };
}

test('a failing store answers 500 internal_error without exposing the cause', async (t) => {
  const failing = breakable(await testStore());
  const app = await startApp({ store: failing.store });
  t.teardown(() => failing.store.close());
  try {
    const org = await applyManifest(app, acmeManifest('doomed'));
    failing.break();
    const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: 100, reason: 'paper' } });
    t.is(res.status, 500);
    t.is(res.body.error.code, 'internal_error');
    t.regex(res.body.error.message, /safe to retry/);
    t.false(res.text.includes('secret-host'));
  } finally {
    await app.close();
  }
});
