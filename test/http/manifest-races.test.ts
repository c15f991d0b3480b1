// A manifest applied while purchases are on their way (docs/operate/manifests.md "Everything happens in one
// transaction"): each decision is made under one complete configuration, the one before the apply or the
// one after it, never a part of each. A purchase is held at the door of its transaction, after it was
// authenticated, while the apply commits; then it goes on.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { testStore } from '../helpers/store.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import type { Store } from '../../src/store/store.ts';

/** The store, with the next transaction begun after `hold()` waiting until `release()`. */
function gatedStore(store: Store) {
  let armed = false;
  let reached = () => {};
  let open = () => {};
  const gate = {
    store: {
      engine: store.engine,
      db: store.db,
      close: () => store.close(),
      async withTransaction(fn, options) {
        if (armed) {
          armed = false;
          const opened = new Promise<void>((resolve) => (open = resolve));
          reached();
          await opened;
        }
        return store.withTransaction(fn, options);
      },
    } as Store,
    /** Resolves once a transaction waits at the gate. */
    hold(): Promise<void> {
      armed = true;
      return new Promise((resolve) => (reached = resolve));
    },
    release: () => open(),
  };
  return gate;
}

let app: TestApp;
let gate: ReturnType<typeof gatedStore>;
test.before(async () => {
  gate = gatedStore(await testStore());
  app = await startApp({ store: gate.store });
});
test.after.always(async () => {
  await app?.close();
  await gate?.store.close();
});

/** A purchase of `amountMinor` with `key`, authenticated before `manifest` is applied and decided after it. */
async function purchaseAcrossApply(key: string, manifest: object, amountMinor: string) {
  const reached = gate.hold();
  const purchase = app.request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor, reason: 'paper' } });
  await reached;
  await applyManifest(app, manifest);
  gate.release();
  return purchase;
}

test.serial('a purchase authenticated before an apply and decided after it is judged wholly by the new configuration', async (t) => {
  const manifest: any = acmeManifest('race-config');
  const org = await applyManifest(app, manifest);
  // Before: 10000 is under the approval threshold (20000). After: it needs approval, which waits 1 hour.
  manifest.organization.approvalTtl = 'PT1H';
  manifest.policies[0].rules[1].amountMinor = '5000';
  const res = await purchaseAcrossApply(org.keys['buyer-key'], manifest, '10000');

  t.is(res.status, 201, res.text);
  t.is(res.body.decision.outcome, 'REQUIRES_APPROVAL');
  const stored = await app.store.db.collection('approvals').findOne({ purchaseId: res.body.purchaseRequest.id });
  t.truthy(stored, 'the approval is stored');
  t.is(stored!.expiresAt.getTime() - stored!.createdAt.getTime(), 60 * 60 * 1000, 'the new configuration\'s approvalTtl, with its new threshold');
});

test.serial('a purchase authenticated before an apply suspends its organisation or revokes its key is refused as the next one is, not decided', async (t) => {
  const cases: Array<[string, (m: any) => void, number, string]> = [
    ['race-suspend', (m) => (m.organization.status = 'SUSPENDED'), 403, 'organization_suspended'],
    ['race-revoke', (m) => (m.apiKeys[0].revoked = true), 401, 'api_key_revoked'],
  ];
  for (const [handle, change, status, code] of cases) {
    const manifest: any = acmeManifest(handle);
    const org = await applyManifest(app, manifest);
    change(manifest);
    const res = await purchaseAcrossApply(org.keys['buyer-key'], manifest, '1000');
    t.is(res.status, status, res.text);
    t.is(res.body.error.code, code);
    t.is(await app.store.db.collection('purchases').countDocuments({ organizationId: org.organizationId }), 0);
  }
});

test.serial('two different manifests applied to one organisation at once end as one of the two serial orders, never a mix', async (t) => {
  const base: any = acmeManifest('race-two');
  await applyManifest(app, base);
  const a = structuredClone(base);
  a.organization.timezone = 'Asia/Tokyo';
  a.policies[0].rules[0].amountMinor = '60000';
  a.agents.push({ handle: 'only-a', name: 'Only A' });
  const b = structuredClone(base);
  b.organization.timezone = 'America/New_York';
  b.policies[0].rules[0].amountMinor = '70000';
  b.apiKeys.push({ handle: 'only-b' });

  const [ra, rb] = await Promise.all([app.admin('/admin/manifests', { body: a }), app.admin('/admin/manifests', { body: b })]);
  t.is(ra.status, 200, ra.text);
  t.is(rb.status, 200, rb.text);
  const db = app.store.db;
  const org = (await db.collection('organizations').findOne({ handle: 'race-two' }))!;
  const policy = (await db.collection('policies').findOne({ organizationId: org._id, handle: 'office' }))!;
  const versions = await db.collection('policy_versions').find({ policyId: policy._id }).sort({ versionNumber: 1 }).toArray();
  const limitOf = (v: any) => v.rules.find((r: any) => r.effect === 'BLOCK' && r.ruleType === 'AMOUNT_LIMIT').amountMinor;
  // The later apply's time zone goes with the later apply's active version; the earlier one's version is archived.
  const last = org.timezone === 'Asia/Tokyo' ? 60000 : 70000;
  const earlier = last === 60000 ? 70000 : 60000;
  t.deepEqual(versions.map((v) => [v.versionNumber, v.status, limitOf(v)]), [[1, 'ARCHIVED', 50000], [2, 'ARCHIVED', earlier], [3, 'ACTIVE', last]]);
  t.is(policy.activeVersionId, versions[2]._id);
  // Nothing is deleted, so both applies' additions are there in either order.
  t.truthy(await db.collection('agents').findOne({ organizationId: org._id, handle: 'only-a' }));
  t.truthy(await db.collection('api_keys').findOne({ organizationId: org._id, handle: 'only-b' }));
});

/**
 * The store, its transactions' reads of the organisation `handle` seeing it absent once after it exists: what a
 * transaction on MongoDB sees when its snapshot was taken before another apply's creation committed. (The embedded
 * engine runs one transaction at a time, so the interleaving is made here, on either engine.)
 */
function staleOrganizationRead(store: Store, handle: string): Store {
  let hidden = false;
  const db = {
    ...store.db,
    collection: (name: string) => {
      const collection = store.db.collection(name);
      if (name !== 'organizations') return collection;
      return new Proxy(collection, {
        get(target, property) {
          const value = Reflect.get(target, property, target);
          if (property !== 'findOne') return typeof value === 'function' ? value.bind(target) : value;
          return async (filter: any, options: any) => {
            const found = await value.call(target, filter, options);
            if (found && options?.session && filter?.handle === handle && !hidden) {
              hidden = true;
              return null;
            }
            return found;
          };
        },
      });
    },
  } as Store['db'];
  return { engine: store.engine, db, close: () => store.close(), withTransaction: (fn, options) => store.withTransaction(fn, options) } as Store;
}

test('two first applies of one new organisation at once both answer 200: the one that lost the race to create it applies again, as an update', async (t) => {
  const store = await testStore();
  const racing = await startApp({ store: staleOrganizationRead(store, 'race-new') });
  try {
    const manifest: any = acmeManifest('race-new');
    const [ra, rb] = await Promise.all([racing.admin('/admin/manifests', { body: manifest }), racing.admin('/admin/manifests', { body: manifest })]);
    t.is(ra.status, 200, ra.text);
    t.is(rb.status, 200, rb.text);
    t.is(ra.body.organization.id, rb.body.organization.id);
    // One created everything; the other, applied again, found all of it as the manifest says.
    t.deepEqual([ra.body.changed, rb.body.changed].sort(), [false, true]);
    t.is(await store.db.collection('organizations').countDocuments({ handle: 'race-new' }), 1);
    t.is(await store.db.collection('agents').countDocuments({ organizationId: ra.body.organization.id }), manifest.agents.length);
  } finally {
    await racing.close();
    await store.close();
  }
});
