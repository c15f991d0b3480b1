// A write that finds no space, outside /v1: the dashboard answers 503 with Retry-After (a page saying
// to try again, not a 500) and readiness fails until a write succeeds again, as on /v1
// (test/store/disk-full.test.ts fills a real file system under a real process). And which store
// errors mean "no space": SQLite's SQLITE_FULL, and the I/O errors a quota or a failed fallocate become.
import test from 'ava';
import { Client, field, setUpDashboardOrg, startDashboardApp } from '../helpers/dashboard.ts';
import { testStore } from '../helpers/store.ts';
import { isStorageFull, type Store, type StoreCollection } from '../../src/store/store.ts';

const noSpace = () => Object.assign(new Error('database or disk is full'), { errcode: 13, errstr: 'database or disk is full' });

/** The store, except that every write fails for lack of space while `full` is set. */
function fillable(store: Store): { store: Store; fill(full: boolean): void } {
  let full = false;
  const writes = new Set(['insertOne', 'insertMany', 'updateOne', 'updateMany', 'replaceOne', 'findOneAndUpdate', 'deleteOne', 'deleteMany', 'bulkWrite']);
  const collection = (name: string): StoreCollection => {
    const real = store.db.collection(name);
    return new Proxy(real, {
      get(target, prop) {
        if (full && typeof prop === 'string' && writes.has(prop)) return async () => Promise.reject(noSpace());
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  const wrapped: Store = {
    engine: store.engine,
    db: { ...store.db, collection: collection as Store['db']['collection'], bulkWrite: (models, options) => (full ? Promise.reject(noSpace()) : store.db.bulkWrite(models, options)) },
    withTransaction: (fn, options) => store.withTransaction(fn, options),
    close: () => store.close(),
  };
  return { store: wrapped, fill: (value) => (full = value) };
}

test('a dashboard purchase that finds no space answers 503 with Retry-After, and readiness fails until a write succeeds', async (t) => {
  const disk = fillable(await testStore());
  const app = await startDashboardApp({ store: disk.store });
  t.teardown(async () => {
    await app.close();
    await disk.store.close(); // the app closes only a store it opened itself
  });
  const acme = await setUpDashboardOrg(app, 'acme', [{ handle: 'ana', name: 'Ana Admin', email: 'ana@acme.example', roles: ['approver', 'admin'] }]);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const form = await client.get('/dashboard/purchases/new');
  const fields = { csrf: field(form.text, 'csrf'), token: field(form.text, 'token'), agent: acme.agents.buyer.id, merchant: 'Paper Co', amount: '12.50', currency: 'EUR', reason: 'Paper' };
  t.is((await fetch(`${app.url}/health/ready`)).status, 200);

  disk.fill(true);
  const refused = await client.post('/dashboard/purchases', fields);
  t.is(refused.status, 503);
  t.regex(refused.text, /cannot store new data right now/);
  t.is(refused.headers.get('retry-after'), '30');
  t.is(refused.headers.get('cache-control'), 'no-store', 'the page names the person and holds their CSRF token');
  t.is((await fetch(`${app.url}/health/ready`)).status, 503, 'readiness tries a write, and it fails too');

  disk.fill(false);
  t.is((await fetch(`${app.url}/health/ready`)).status, 200, 'a write succeeds again');
  t.is(await app.store.db.collection('purchases').countDocuments({ organizationId: acme.organizationId }), 0, 'nothing of the refused purchase was kept');
});

test('which store errors mean no space', (t) => {
  t.true(isStorageFull({ errcode: 13 }), 'SQLITE_FULL');
  t.true(isStorageFull({ errcode: 778 }), 'SQLITE_IOERR_WRITE: a quota, a failed fallocate');
  t.true(isStorageFull({ errcode: 4874 }), 'SQLITE_IOERR_SHMSIZE: the shared-memory file cannot grow');
  t.true(isStorageFull({ code: 'EDQUOT' }));
  t.true(isStorageFull({ code: 14031, codeName: 'OutOfDiskSpace' }));
  t.true(isStorageFull(new Error('wrapped', { cause: { errcode: 13 } })));
  t.false(isStorageFull({ errcode: 10 }), 'another I/O error');
  t.false(isStorageFull({ errcode: 19 }), 'a constraint');
  t.false(isStorageFull(new Error('database is locked')));
});
