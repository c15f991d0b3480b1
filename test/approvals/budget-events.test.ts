// Budget events are judged on spending under a policy (docs/reference/contract.md §6.2, §8; docs/approve/approvals.md):
// holds waiting for a person never count, every real crossing is reported, and budget.exhausted is
// reported when the limit starts refusing purchases.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { inOnePeriod, tracked } from '../helpers/windows.ts';

let app: TestApp;

test.before(async () => {
  app = await startApp({ jobs: { sweepEvery: '1 second' } });
});
test.after.always(() => app?.close());

const budgetEvents = (organizationId: string) =>
  app.store.db.collection('events').find({ organizationId, type: { $in: ['budget.threshold_reached', 'budget.exhausted'] } }).sort({ _id: 1 }).toArray();

// Each scenario is one day's budget: a run across midnight in Berlin runs it once more, in the new day (inOnePeriod).
test('expired holds use up nothing; approved spend passing 80% is reported; a refusing limit is exhausted once', (t) => inOnePeriod(t, app.store.db, 'DAY', async (t, track, attempt) => {
  const manifest = acmeManifest(`budget-events-${attempt}`);
  // Daily budget 200,000 EUR cents; purchases above 20,000 wait for a person, for one second.
  const org = await applyManifest(app, { ...manifest, organization: { ...manifest.organization, approvalTtl: 'PT1S' } });
  const buy = (amountMinor: number) => tracked(track, app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor, reason: 'Supplies' } }));

  const held: string[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await buy(45_000); // 180,000 held: 90% of the limit, but nobody approved any of it
    t.is(res.body.decision.outcome, 'REQUIRES_APPROVAL');
    held.push(res.body.purchaseRequest.id);
  }
  t.deepEqual(await budgetEvents(org.organizationId), [], 'holds are not spending');
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && (await app.store.db.collection<{ _id: string }>('purchases').countDocuments({ _id: { $in: held }, status: 'EXPIRED' })) < held.length) await sleep(100);
  t.is(await app.store.db.collection<{ _id: string }>('purchases').countDocuments({ _id: { $in: held }, status: 'EXPIRED' }), held.length);

  for (let i = 0; i < 9; i++) t.is((await buy(19_000)).body.decision.outcome, 'APPROVED'); // 171,000: passes 80% at the 9th
  t.is((await buy(2_200)).body.decision.outcome, 'APPROVED'); // 173,200
  let events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.limitMinor, e.data.cause]), [['budget.threshold_reached', '171000', '200000', 'SPENDING']]);

  t.is((await buy(19_000)).body.decision.outcome, 'APPROVED'); // 192,200
  const refused = await buy(19_000); // would be 211,200: refused by the used-up budget
  t.deepEqual(refused.body.decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  t.is((await buy(10_000)).body.decision.outcome, 'REJECTED'); // refused again: already reported
  events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.cause]), [
    ['budget.threshold_reached', '171000', 'SPENDING'],
    ['budget.exhausted', '192200', 'PURCHASE_REFUSED'],
  ]);
  t.like(events[1].data, { policyId: org.policies.office.id, effect: 'BLOCK', periodKind: 'DAY', thresholdPercent: 100 });
}));

test('spending that lands on the limit is exhausted once, and a refusal afterwards reports nothing new', (t) => inOnePeriod(t, app.store.db, 'DAY', async (t, track, attempt) => {
  const org = await applyManifest(app, acmeManifest(`budget-exact-${attempt}`));
  const buy = (amountMinor: number) => tracked(track, app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor, reason: 'Supplies' } }));
  for (let i = 0; i < 10; i++) t.is((await buy(20_000)).body.decision.outcome, 'APPROVED'); // exactly 200,000
  t.is((await buy(1)).body.decision.outcome, 'REJECTED');
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.cause]), [
    ['budget.threshold_reached', '180000', 'SPENDING'],
    ['budget.exhausted', '200000', 'SPENDING'],
  ]);
}));

test('a person approving a held purchase is spending: its crossing is reported at the approval', (t) => inOnePeriod(t, app.store.db, 'DAY', async (t, track, attempt) => {
  const org = await applyManifest(app, acmeManifest(`budget-approval-${attempt}`));
  const buy = (amountMinor: number) => tracked(track, app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor, reason: 'Supplies' } }));
  for (let i = 0; i < 7; i++) await buy(20_000); // 140,000 spent: 70%
  const big = (await buy(30_000)).body.purchaseRequest.id; // held: still 70% spent
  t.deepEqual(await budgetEvents(org.organizationId), []);
  const answered = await app.admin(`/admin/purchase-requests/${big}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(answered.status, 200, answered.text);
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor]), [['budget.threshold_reached', '170000']]);
}));
