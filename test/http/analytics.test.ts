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
  t.like(daily[0], { requestedCount: 5, approvedCount: 2, approvedMinor: 3000, rejectedCount: 2, pendingCount: 1, pendingMinor: 30000, saturated: false });

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
  t.like(after, { approvedCount: 3, approvedMinor: 33000, pendingCount: 0, pendingMinor: 0, saturated: false });
});

// docs/operate/analysts.md: a day's Minor totals saturate at 2^53-1, the most storage holds exactly (docs/internals/design.md
// §2), and say so with `saturated`; the day's analytics_purchases rows keep the exact amounts. Nothing refuses these
// purchases: agent b's policy has no amount rules.
test('a day\'s approvedMinor saturates at 2^53-1 and says so; the rows keep the exact amounts', async (t) => {
  const org = await applyManifest(app, shopManifest('analytics-huge'));
  const max = '9007199254740991';
  for (let i = 0; i < 3; i++) {
    const res = await app.request('/v1/purchase-requests', { key: org.keys['b-key'], body: purchase(max) });
    t.is(res.body.decision.outcome, 'APPROVED');
  }
  const daily = await app.store.db.collection('analytics_daily_spend').findOne({ organizationId: org.organizationId });
  t.like(daily, { requestedCount: 3, approvedCount: 3, approvedMinor: Number.MAX_SAFE_INTEGER, pendingMinor: 0, saturated: true });
  t.true(Number.isSafeInteger(daily!.approvedMinor));
  const checkDaily = Compile(AnalyticsDailySpend);
  t.true(checkDaily.Check(asJson(daily)), JSON.stringify([...checkDaily.Errors(asJson(daily))]));
  // The exact total, from the rows (each one purchase's amount, an exact integer).
  const rows = await app.store.db.collection('analytics_purchases').find({ organizationId: org.organizationId, dayKey: daily!.dayKey, status: 'APPROVED' }).toArray();
  t.is(rows.reduce((sum, r: any) => sum + BigInt(r.amountMinor), 0n), 3n * BigInt(max));
  // Saturated stays: a small purchase the same day leaves the cap and the flag.
  t.is((await app.request('/v1/purchase-requests', { key: org.keys['b-key'], body: purchase(100) })).body.decision.outcome, 'APPROVED');
  t.like(await app.store.db.collection('analytics_daily_spend').findOne({ _id: daily!._id }), { approvedCount: 4, approvedMinor: Number.MAX_SAFE_INTEGER, saturated: true });
});

test('pendingMinor saturates too, and never goes below 0 once saturated', async (t) => {
  const manifest = shopManifest('analytics-held');
  manifest.policies[1].rules = [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: 1000 }] as never;
  const org = await applyManifest(app, manifest);
  const key = org.keys['b-key'];
  const max = '9007199254740991';
  t.is((await app.request('/v1/purchase-requests', { key, body: purchase(500) })).body.decision.outcome, 'APPROVED');
  const held = [];
  for (let i = 0; i < 2; i++) {
    const res = await app.request('/v1/purchase-requests', { key, body: purchase(max) });
    t.is(res.body.decision.outcome, 'REQUIRES_APPROVAL');
    held.push(res.body.purchaseRequest.id);
  }
  const dailySpend = () => app.store.db.collection('analytics_daily_spend').findOne({ organizationId: org.organizationId });
  t.like(await dailySpend(), { approvedMinor: 500, pendingCount: 2, pendingMinor: Number.MAX_SAFE_INTEGER, saturated: true });
  // Approving one moves its amount from the capped pendingMinor (to 0, below the truth) into approvedMinor (capped).
  await app.admin(`/admin/purchase-requests/${held[0]}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.like(await dailySpend(), { approvedCount: 2, approvedMinor: Number.MAX_SAFE_INTEGER, pendingCount: 1, pendingMinor: 0, saturated: true });
  // Rejecting the other would take pendingMinor below 0: it stays at 0.
  await app.admin(`/admin/purchase-requests/${held[1]}/answer`, { body: { answer: 'REJECT', person: 'ana' } });
  const daily = await dailySpend();
  t.like(daily, { approvedCount: 2, approvedMinor: Number.MAX_SAFE_INTEGER, rejectedCount: 1, pendingCount: 0, pendingMinor: 0, saturated: true });
  const checkDaily = Compile(AnalyticsDailySpend);
  t.true(checkDaily.Check(asJson(daily)), JSON.stringify([...checkDaily.Errors(asJson(daily))]));
});
