// `npm run admin -- verify-log` on a store the service goes on deciding in (docs/operate/auditors.md#3-check-the-store-itself-operator):
// decisions committed while it reads are neither a chain head "past the receipts" nor a decision
// "without a receipt"; a head set back below receipts still stored is found all the same. The
// interleaving is made exact: the store verify-log reads through makes a purchase over HTTP at the
// moment named.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { verifyLog } from '../../src/receipts/audit.ts';
import { receiptHash } from '../../src/receipts/chain.ts';
import { RECEIPT_COLLECTIONS } from '../../src/receipts/documents.ts';
import type { StoreDb } from '../../src/store/store.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

const buy = async (org: AppliedOrg) => {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: 'paper' } });
  if (res.status !== 201) throw new Error(`purchase refused: ${res.status} ${res.text}`);
  return res.headers.get('decision-receipt')!;
};

/** The store, with `before(call)` awaited ahead of each findOne on `collection` (call counts from 1). */
function interleaved(db: StoreDb, collection: string, before: (call: number) => Promise<void>): StoreDb {
  let calls = 0;
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== 'collection') return typeof value === 'function' ? value.bind(target) : value;
      return (name: string) => {
        const c = target.collection(name);
        if (name !== collection) return c;
        return new Proxy(c, {
          get(ct, method) {
            const m = Reflect.get(ct, method, ct);
            if (typeof m !== 'function') return m;
            if (method !== 'findOne') return m.bind(ct);
            return async (...args: unknown[]) => {
              await before(++calls);
              return m.apply(ct, args);
            };
          },
        });
      };
    },
  }) as StoreDb;
}

test('decisions committed while verify-log reads are not taken for tampering', async (t) => {
  const org = await applyManifest(app, acmeManifest('live-log'));
  for (let i = 0; i < 3; i++) await buy(org);
  // One decision while it reads the receipts' decisions, one just before it lists the organisation's decisions.
  const during = interleaved(app.deps.store.db, 'decisions', async (call) => {
    if (call === 1) await buy(org);
  });
  const before = interleaved(during, RECEIPT_COLLECTIONS.chains, async (call) => {
    if (call === 2) await buy(org);
  });
  const verdict = await verifyLog(before, org.organizationId, app.deps.config);
  t.like(verdict, { ok: true, count: 3 }, JSON.stringify(verdict));
  t.like(await verifyLog(app.deps.store.db, org.organizationId, app.deps.config), { ok: true, count: 5 });
});

test('verify-log: a chain head set back below receipts still stored fails, naming the seq after it', async (t) => {
  const org = await applyManifest(app, acmeManifest('set-back-log'));
  const first = await buy(org);
  for (let i = 0; i < 2; i++) await buy(org);
  await app.deps.store.db.collection<{ _id: string; seq: number; head: string }>(RECEIPT_COLLECTIONS.chains).updateOne({ _id: org.organizationId }, { $set: { seq: 1, head: receiptHash(first) } });
  t.deepEqual(await verifyLog(app.deps.store.db, org.organizationId, app.deps.config), { ok: false, seq: 2, reason: 'the chain head says seq 1, the stored receipts go on to 3' });
});
