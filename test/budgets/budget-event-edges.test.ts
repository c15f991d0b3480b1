// budget.threshold_reached and budget.exhausted at their edges, through the real HTTP surface
// (docs/reference/contract.md §6.2, §8; docs/approve/approvals.md#budget-events): many purchases at
// once, holds released and taken again, a new version of the policy that keeps the limit. The clock
// is fixed, so that every purchase falls in one day.
import test from 'ava';
import fc from 'fast-check';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp({ now: () => new Date('2026-06-15T10:00:00.000Z') });
});
test.after.always(() => app?.close());

const budgetEvents = (organizationId: string) =>
  app.store.db.collection('events').find({ organizationId, type: { $in: ['budget.threshold_reached', 'budget.exhausted'] } }).sort({ _id: 1 }).toArray();

// acmeManifest's office policy: a daily BLOCK budget of 200,000 EUR cents; above 20,000 a person decides.
const buyer = (org: AppliedOrg) => (amountMinor: number) =>
  app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor, reason: 'Supplies' } });

test('forty purchases at once: the 80% mark and the limit are each reported once, with exact data', async (t) => {
  const org = await applyManifest(app, acmeManifest('events-burst'));
  const answers = await Promise.all(Array.from({ length: 40 }, () => buyer(org)(10_000)));
  t.is(answers.filter((r) => r.body.decision?.outcome === 'APPROVED').length, 20);
  t.is(answers.filter((r) => r.body.decision?.outcome === 'REJECTED').length, 20);
  const events = await budgetEvents(org.organizationId);
  const policy = org.policies.office;
  const version = await app.store.db.collection('policy_versions').findOne({ _id: policy.activeVersionId as never });
  const rule = version!.rules.find((r: any) => r.ruleType === 'SPEND_LIMIT');
  const data = {
    budgetWindowId: `${policy.id}:EUR:DAY:2026-06-15`,
    policyId: policy.id,
    policyName: 'Office supplies',
    policyVersionId: policy.activeVersionId,
    policyRuleId: rule.id,
    effect: 'BLOCK',
    currency: 'EUR',
    periodKind: 'DAY',
    periodKey: '2026-06-15',
    limitMinor: '200000',
  };
  t.deepEqual(events.map((e: any) => [e.type, e.data]), [
    ['budget.threshold_reached', { ...data, usedMinor: '170000', thresholdPercent: 80, cause: 'SPENDING' }],
    ['budget.exhausted', { ...data, usedMinor: '200000', thresholdPercent: 100, cause: 'SPENDING' }],
  ]);
});

test('a hold released and taken again reports nothing; its approval passing 80% reports once', async (t) => {
  const org = await applyManifest(app, acmeManifest('events-rehold'));
  const buy = buyer(org);
  for (let i = 0; i < 7; i++) t.is((await buy(20_000)).body.decision.outcome, 'APPROVED'); // 140,000: 70%
  const first = await buy(30_000); // held: 170,000 with the hold, still 70% spent
  t.is(first.body.decision.outcome, 'REQUIRES_APPROVAL');
  const rejected = await app.admin(`/admin/purchase-requests/${first.body.purchaseRequest.id}/answer`, { body: { answer: 'REJECT', person: 'ana' } });
  t.is(rejected.status, 200, rejected.text);
  const again = await buy(30_000);
  t.is(again.body.decision.outcome, 'REQUIRES_APPROVAL');
  t.deepEqual(await budgetEvents(org.organizationId), [], 'holds are not spending');
  const approved = await app.admin(`/admin/purchase-requests/${again.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(approved.status, 200, approved.text);
  t.is((await buy(1_000)).body.decision.outcome, 'APPROVED'); // 171,000: past 80% already
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.cause]), [['budget.threshold_reached', '170000', 'SPENDING']]);
  const window = await app.store.db.collection('budget_windows').findOne({ _id: `${org.policies.office.id}:EUR:DAY:2026-06-15` as never });
  t.like(window, { heldMinor: 0, committedMinor: 171_000 });
});

test('a new version that keeps the limit does not report it exhausted again when it refuses', async (t) => {
  const manifest = acmeManifest('events-version');
  const org = await applyManifest(app, manifest);
  const buy = buyer(org);
  for (let i = 0; i < 10; i++) t.is((await buy(20_000)).body.decision.outcome, 'APPROVED'); // exactly 200,000
  t.is((await buy(1)).body.decision.outcome, 'REJECTED');
  // A new version: one more blocked merchant, the same daily budget. The window carries its spending over.
  const next = structuredClone(manifest);
  next.policies[0].merchants = [...next.policies[0].merchants, { listType: 'BLOCK', label: 'Other Shady Goods' }];
  const applied = await applyManifest(app, next);
  t.not(applied.policies.office.activeVersionId, org.policies.office.activeVersionId);
  const refused = await buy(1);
  t.deepEqual(refused.body.decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.cause]), [
    ['budget.threshold_reached', '180000', 'SPENDING'],
    ['budget.exhausted', '200000', 'SPENDING'],
  ]);
});

test('a new version that lowers the limit reports the new limit once when it starts refusing', async (t) => {
  const manifest = acmeManifest('events-lowered');
  const org = await applyManifest(app, manifest);
  const buy = buyer(org);
  for (let i = 0; i < 8; i++) t.is((await buy(20_000)).body.decision.outcome, 'APPROVED'); // 160,000: 80% exactly
  const next = structuredClone(manifest);
  next.policies[0].rules[2] = { ...next.policies[0].rules[2], amountMinor: '170000' };
  await applyManifest(app, next);
  t.is((await buy(20_000)).body.decision.outcome, 'REJECTED'); // 180,000 > 170,000; 160,000 is past 80% of it
  t.is((await buy(20_000)).body.decision.outcome, 'REJECTED');
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.limitMinor, e.data.cause]), [['budget.exhausted', '160000', '170000', 'PURCHASE_REFUSED']]);
});

test('a window that recorded its reported limit by rule id, as windows written before did, is not reported again', async (t) => {
  const org = await applyManifest(app, acmeManifest('events-legacy-tag'));
  const buy = buyer(org);
  for (let i = 0; i < 9; i++) await buy(20_000); // 180,000: past 80%
  const version = await app.store.db.collection('policy_versions').findOne({ _id: org.policies.office.activeVersionId as never });
  const rule = version!.rules.find((r: any) => r.ruleType === 'SPEND_LIMIT');
  const id = `${org.policies.office.id}:EUR:DAY:2026-06-15`;
  // As every writer of a window does, at a new version (the organisation's actor remembers the one before).
  await app.store.db.collection('budget_windows').updateOne({ _id: id as never }, { $set: { notified: [`EXHAUSTED:${rule.id}`] }, $inc: { version: 1 } });
  t.is((await buy(20_001)).body.decision.outcome, 'REJECTED'); // by the used-up budget
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.cause]), [['budget.threshold_reached', 'SPENDING']]);
});

test('people approving held purchases at once: the 80% mark is reported once', async (t) => {
  const manifest = acmeManifest('events-approvals-burst');
  const org = await applyManifest(app, manifest);
  const buy = buyer(org);
  for (let i = 0; i < 7; i++) t.is((await buy(20_000)).body.decision.outcome, 'APPROVED'); // 140,000: 70%
  const held: string[] = [];
  for (let i = 0; i < 2; i++) {
    const res = await buy(25_000); // held: 190,000 with both
    t.is(res.body.decision.outcome, 'REQUIRES_APPROVAL');
    held.push(res.body.purchaseRequest.id);
  }
  const answers = await Promise.all(held.map((id) => app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } })));
  t.deepEqual(answers.map((a) => a.status), [200, 200]);
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor]), [['budget.threshold_reached', '165000']]);
  t.like(await app.store.db.collection('budget_windows').findOne({ _id: `${org.policies.office.id}:EUR:DAY:2026-06-15` as never }), { heldMinor: 0, committedMinor: 190_000 });
});

test('property: any run of purchases reports each crossing once, as a model of the limit says', async (t) => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 20_000 }), { minLength: 1, maxLength: 16 }), async (amounts) => {
      const org = await applyManifest(app, acmeManifest(`events-model-${run++}`));
      const expected: Array<[string, string, string]> = [];
      let spent = 0;
      let exhausted = false;
      for (const amount of amounts) {
        const outcome = (await buyer(org)(amount)).body.decision.outcome;
        if (spent + amount > 200_000) {
          if (outcome !== 'REJECTED') return false;
          if (spent > 160_000 && !exhausted) expected.push(['budget.exhausted', String(spent), 'PURCHASE_REFUSED']);
          exhausted ||= spent > 160_000;
          continue;
        }
        if (outcome !== 'APPROVED') return false;
        if (spent <= 160_000 && spent + amount > 160_000) expected.push(['budget.threshold_reached', String(spent + amount), 'SPENDING']);
        if (spent + amount === 200_000) {
          expected.push(['budget.exhausted', '200000', 'SPENDING']);
          exhausted = true;
        }
        spent += amount;
      }
      const events = await budgetEvents(org.organizationId);
      t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.cause]), expected);
      return true;
    }),
    // Besides random runs, two that land on the limit exactly, then ask for more.
    { numRuns: 12, examples: [[Array(10).fill(20_000).concat([1])], [Array(9).fill(19_000).concat([20_000, 20_000, 5_000])]] },
  );
});

test('a budget of 2^53-1: reached exactly in one purchase, reported exactly, and nothing past it', async (t) => {
  const MAX = '9007199254740991';
  const manifest = acmeManifest('events-max');
  manifest.policies[0].rules = [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: MAX, currency: 'EUR' }];
  const org = await applyManifest(app, manifest);
  const buy = (amountMinor: string) => app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor, reason: 'Supplies' } });
  t.is((await buy('9007199254740990')).body.decision.outcome, 'APPROVED');
  t.is((await buy('1')).body.decision.outcome, 'APPROVED');
  const past = await buy('1');
  t.is(past.status, 201);
  t.deepEqual(past.body.decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.limitMinor, e.data.cause]), [
    ['budget.threshold_reached', '9007199254740990', MAX, 'SPENDING'],
    ['budget.exhausted', MAX, MAX, 'SPENDING'],
  ]);
  t.like(await app.store.db.collection('budget_windows').findOne({ _id: `${org.policies.office.id}:EUR:DAY:2026-06-15` as never }), { committedMinor: Number(MAX), heldMinor: 0 });
});

test('approving a purchase held under a policy that stopped governing its agent reports the crossing of that policy\'s limit', async (t) => {
  // The office policy governs the buyer and the travel agent; an organisation-wide policy without rules keeps the buyer covered.
  const manifest = acmeManifest('events-scope');
  manifest.policies[0] = { ...manifest.policies[0], scope: 'AGENT', agents: ['buyer', 'travel'] } as (typeof manifest.policies)[0];
  manifest.policies[1] = { ...manifest.policies[1], handle: 'everyone', name: 'Everyone', scope: 'ORGANIZATION', agents: [], currencies: ['EUR'], rules: [] } as (typeof manifest.policies)[1];
  const org = await applyManifest(app, manifest);
  const buy = buyer(org);
  for (let i = 0; i < 7; i++) t.is((await buy(20_000)).body.decision.outcome, 'APPROVED'); // 140,000: 70%
  const held = await buy(30_000);
  t.is(held.body.decision.outcome, 'REQUIRES_APPROVAL');
  // The office policy now governs the travel agent only: its daily budget still limits the travel agent's purchases.
  await applyManifest(app, { ...manifest, policies: [{ ...manifest.policies[0], agents: ['travel'] }, manifest.policies[1]] });
  const answered = await app.admin(`/admin/purchase-requests/${held.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(answered.body.purchase.decision.outcome, 'APPROVED');
  const window = await app.store.db.collection('budget_windows').findOne({ _id: `${org.policies.office.id}:EUR:DAY:2026-06-15` as never });
  t.like(window, { heldMinor: 0, committedMinor: 170_000 }, 'the money is spent where it was held');
  const events = await budgetEvents(org.organizationId);
  t.deepEqual(events.map((e: any) => [e.type, e.data.usedMinor, e.data.policyId, e.data.policyName, e.data.periodKey]), [['budget.threshold_reached', '170000', org.policies.office.id, 'Office supplies', '2026-06-15']]);
});
