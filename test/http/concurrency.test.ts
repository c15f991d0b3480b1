// Concurrency is proven, not hoped (docs/internals/design.md §1): many simultaneous submissions at one budget through
// two app instances sharing one store never overspend it; one idempotency key yields one decision.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { testStore } from '../helpers/store.ts';
import { periodOfPurchase, sumByPeriodOfPurchase, windowOfPurchase, windowsOf } from '../helpers/windows.ts';
import type { Store } from '../../src/store/store.ts';

let store: Store;
let one: TestApp;
let two: TestApp;

const LIMIT = 500_000;

function budgetManifest(handle: string) {
  return {
    organization: { handle, name: 'Tight budget', currency: 'EUR', timezone: 'Europe/Berlin' },
    agents: [{ handle: 'x', name: 'X' }, { handle: 'y', name: 'Y' }],
    policies: [
      {
        handle: 'daily',
        name: 'One shared daily budget',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: String(LIMIT) }],
        merchants: [],
      },
    ],
    apiKeys: [{ handle: 'x-key', agent: 'x' }, { handle: 'y-key', agent: 'y' }],
  };
}

test.before(async () => {
  store = await testStore();
  one = await startApp({ store });
  two = await startApp({ store });
});
test.after.always(async () => {
  await one?.close();
  await two?.close();
  await store?.close();
});

test('240 concurrent submissions from two agents through two instances never overspend one daily budget', async (t) => {
  const org = await applyManifest(one, budgetManifest('race'));
  // Amounts vary so that the limit is crossed part-way and smaller purchases still fit afterwards.
  const requests = Array.from({ length: 240 }, (_, i) => {
    const app = i % 2 === 0 ? one : two;
    const key = i % 3 === 0 ? org.keys['y-key'] : org.keys['x-key'];
    const amountMinor = 1000 + ((i * 7919) % 9000);
    return app.request('/v1/purchase-requests', { key, body: { merchant: 'Parts Ltd', amountMinor, reason: `part ${i}` } }).then((res) => ({ res, amountMinor }));
  });
  const results = await Promise.all(requests);
  t.true(results.every(({ res }) => res.status === 201), 'every request got a decision');
  const approved = results.filter(({ res }) => res.body.decision.outcome === 'APPROVED');
  const rejected = results.filter(({ res }) => res.body.decision.outcome === 'REJECTED');
  t.is(approved.length + rejected.length, 240);
  t.true(rejected.length > 0, 'the budget was exhausted');
  t.true(rejected.every(({ res }) => res.body.decision.reasonCodes.includes('DAILY_LIMIT_EXCEEDED')));
  // One window per day the purchases were requested in (two when Berlin's midnight falls during the run), each
  // judged on its own: within the limit, counting exactly that day's approvals, refusing nothing that fitted.
  const entries = (list: typeof results) => list.map(({ res, amountMinor }) => ({ purchaseId: res.body.purchaseRequest.id, amountMinor }));
  const approvedByDay = await sumByPeriodOfPurchase(store.db, entries(approved));
  const windows = await windowsOf(store.db, { policyId: org.policies.daily.id });
  t.deepEqual(windows.map((w) => w.periodKey), [...approvedByDay.keys()].sort());
  for (const window of windows) {
    t.true(window.committedMinor <= LIMIT, `committed ${window.committedMinor} on ${window.periodKey} must not exceed ${LIMIT}`);
    t.is(window.committedMinor, approvedByDay.get(window.periodKey), 'approved amounts add up exactly to the committed total');
    t.is(window.heldMinor, 0);
  }
  const smallestRejected = new Map<string, number>();
  for (const { purchaseId, amountMinor } of entries(rejected)) {
    const day = await periodOfPurchase(store.db, purchaseId);
    smallestRejected.set(day, Math.min(amountMinor, smallestRejected.get(day) ?? Infinity));
  }
  for (const [day, smallest] of smallestRejected) {
    const committed = windows.find((w) => w.periodKey === day)?.committedMinor ?? 0;
    t.true(committed + smallest > LIMIT, `nothing was refused on ${day} that would have fitted at the end`);
  }
  t.is(await store.db.collection('purchases').countDocuments({ organizationId: org.organizationId }), 240);
});

test('50 concurrent requests with one Idempotency-Key produce one decision', async (t) => {
  const org = await applyManifest(one, budgetManifest('idem-race'));
  const body = { merchant: 'Parts Ltd', amountMinor: 1234, reason: 'once only' };
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? one : two).request('/v1/purchase-requests', { key: org.keys['x-key'], body, headers: { 'Idempotency-Key': 'the-one' } })),
  );
  const created = results.filter((r) => r.status === 201);
  const replays = results.filter((r) => r.status === 200);
  t.is(created.length, 1);
  t.is(replays.length, 49);
  t.true(replays.every((r) => r.body.replayed === true && r.body.decision.id === created[0].body.decision.id));
  t.is(await store.db.collection('purchases').countDocuments({ organizationId: org.organizationId }), 1);
  const window = await windowOfPurchase(store.db, org.policies.daily.id, created[0].body.purchaseRequest.id);
  t.is(window!.committedMinor, 1234);
});
