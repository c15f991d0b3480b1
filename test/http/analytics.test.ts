// The analysts' read models match their published JSON Schemas, and the queries of docs/operate/wire-protocol.md answer.
import test from 'ava';
import { Compile } from 'typebox/compile';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { AnalyticsDailySpend, AnalyticsPurchase } from '../../schemas/analytics.ts';

const NOW = new Date('2026-11-18T10:00:00.000Z');
let app: TestApp;
test.before(async () => {
  app = await startApp({ now: () => NOW });
});
test.after.always(() => app?.close());

const asJson = (doc: unknown) => JSON.parse(JSON.stringify(doc));

test('every analytics row validates against its schema; daily totals add up', async (t) => {
  const org = await applyManifest(app, shopManifest('analytics'));
  const key = org.keys['a-key'];
  const results = [];
  for (const [amount, merchant] of [[1000, 'Paper Co'], [2000, 'Paper Co'], [100, 'Shady Goods Ltd'], [30000, 'Paper Co'], [60000, 'Paper Co']] as const) {
    results.push((await app.request('/v1/purchase-requests', { key, body: purchase(amount, merchant) })).body);
  }
  const rows = await app.store.db.collection('analytics_purchases').find({ organizationId: org.organizationId }).toArray();
  t.is(rows.length, 5);
  const checkRow = Compile(AnalyticsPurchase);
  for (const row of rows) t.true(checkRow.Check(asJson(row)), JSON.stringify([...checkRow.Errors(asJson(row))]));
  t.true(rows.every((r: any) => r.dayKey === '2026-11-18' && r.monthKey === '2026-11'));

  const daily = await app.store.db.collection('analytics_daily_spend').find({ organizationId: org.organizationId }).toArray();
  t.is(daily.length, 1);
  const checkDaily = Compile(AnalyticsDailySpend);
  t.true(checkDaily.Check(asJson(daily[0])), JSON.stringify([...checkDaily.Errors(asJson(daily[0]))]));
  t.like(daily[0], { requestedCount: 5, approvedCount: 2, approvedMinor: 3000, rejectedCount: 2, pendingCount: 1, pendingMinor: 30000 });

  // docs/operate/wire-protocol.md: spend per agent this month
  const spend = await app.store.db
    .collection('analytics_daily_spend')
    .aggregate([
      { $match: { organizationId: org.organizationId, monthKey: '2026-11' } },
      { $group: { _id: { agentId: '$agentId', currency: '$currency' }, approvedMinor: { $sum: '$approvedMinor' }, purchases: { $sum: '$approvedCount' } } },
    ])
    .toArray();
  t.deepEqual(spend, [{ _id: { agentId: org.agents.a.id, currency: 'EUR' }, approvedMinor: 3000, purchases: 2 }]);
  // docs/operate/wire-protocol.md: rejection reasons this week
  const reasons = await app.store.db
    .collection('analytics_purchases')
    .aggregate([
      { $match: { organizationId: org.organizationId, outcome: 'REJECTED', requestedAt: { $gte: new Date('2026-11-16T00:00:00Z') } } },
      { $unwind: '$reasonCodes' },
      { $group: { _id: '$reasonCodes', count: { $sum: 1 } } },
      { $sort: { _id: 1 } },
    ])
    .toArray();
  t.deepEqual(reasons, [{ _id: 'AMOUNT_EXCEEDS_MAX', count: 1 }, { _id: 'MERCHANT_BLOCKED', count: 1 }]);
  // docs/operate/wire-protocol.md: approvals waiting
  const waiting = await app.store.db
    .collection('analytics_purchases')
    .aggregate([{ $match: { organizationId: org.organizationId, status: 'PENDING_APPROVAL' } }, { $group: { _id: '$agentName', waiting: { $sum: 1 }, heldMinor: { $sum: '$amountMinor' } } }])
    .toArray();
  t.deepEqual(waiting, [{ _id: 'Agent A', waiting: 1, heldMinor: 30000 }]);
  // An answer moves the purchase between the daily buckets.
  await app.admin(`/admin/purchase-requests/${results[3].purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  const after = await app.store.db.collection('analytics_daily_spend').findOne({ organizationId: org.organizationId });
  t.like(after, { approvedCount: 3, approvedMinor: 33000, pendingCount: 0, pendingMinor: 0 });
});

// Known defect, not fixed yet (docs/internals/design.md §2: amounts in storage are integers of at most
// 2^53-1, so analysts can $sum them). The daily counters are `$inc`ed with no bound: three approved purchases of
// 2^53-1 by one agent in one day store approvedMinor as 27021597764222972, not 27021597764222973. Nothing
// refuses these purchases (a policy without amount rules approves them). `test.failing` passes while the defect
// is there; whoever fixes it (a decision is needed: saturate at 2^53-1 as budget windows do, and what then for
// pendingMinor, which also goes down) turns this into a plain test.
test.failing('a day\'s approvedMinor stays an exact integer of at most 2^53-1 however much is approved', async (t) => {
  const org = await applyManifest(app, shopManifest('analytics-huge'));
  const max = '9007199254740991';
  for (let i = 0; i < 3; i++) {
    const res = await app.request('/v1/purchase-requests', { key: org.keys['b-key'], body: purchase(max) });
    t.is(res.body.decision.outcome, 'APPROVED');
  }
  const daily = await app.store.db.collection('analytics_daily_spend').findOne({ organizationId: org.organizationId });
  t.is(daily!.approvedCount, 3);
  t.true(Number.isSafeInteger(daily!.approvedMinor), `approvedMinor ${daily!.approvedMinor} is not an exact integer`);
});
