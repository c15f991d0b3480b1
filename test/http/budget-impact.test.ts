// validate's budgetImpact and the opening balance of a spend limit that appears mid-period (docs/reference/contract.md §4.9).
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { purchase } from '../helpers/shop.ts';

const NOW = new Date('2026-11-18T10:00:00.000Z');
let app: TestApp;
test.before(async () => {
  app = await startApp({ now: () => NOW });
});
test.after.always(() => app?.close());

test('a spend limit added mid-day starts from the day’s spending, and validate says so first', async (t) => {
  const manifest: any = {
    organization: { handle: 'impact', name: 'Impact', currency: 'EUR', timezone: 'Europe/Berlin' },
    agents: [{ handle: 'a', name: 'A' }],
    policies: [{ handle: 'p', name: 'P', scope: 'ORGANIZATION', currencies: ['EUR'], rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '90000' }], merchants: [] }],
    apiKeys: [{ handle: 'a-key', agent: 'a' }, { handle: 'org-key' }],
  };
  const org = await applyManifest(app, manifest);
  const key = org.keys['a-key'];
  for (const amount of [30000, 20000]) t.is((await app.request('/v1/purchase-requests', { key, body: purchase(amount) })).body.decision.outcome, 'APPROVED');

  const validateActive = await app.request(`/v1/policies/${org.policies.p.id}/versions/${org.policies.p.activeVersionId}/validate`, { method: 'POST', key: org.keys['org-key'] });
  t.deepEqual(validateActive.body.budgetImpact, [], 'empty in the ordinary case');

  manifest.policies[0].rules.push({ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '60000' });
  manifest.policies[0].activate = false;
  const drafted = await applyManifest(app, manifest);
  const draftId = drafted.policies.p.draftVersionId!;
  const res = await app.request(`/v1/policies/${org.policies.p.id}/versions/${draftId}/validate`, { method: 'POST', key: org.keys['org-key'] });
  t.is(res.status, 200);
  t.deepEqual(res.body.budgetImpact, [
    {
      attributableMinor: '50000',
      currency: 'EUR',
      limits: [{ effect: 'BLOCK', limitMinor: '60000', remainingMinor: '10000' }],
      openingBalanceMinor: '50000',
      periodKey: '2026-11-18',
      periodKind: 'DAY',
      reservedMinor: '0',
    },
  ]);

  manifest.policies[0].activate = true;
  await applyManifest(app, manifest);
  const over = await app.request('/v1/purchase-requests', { key, body: purchase(15000) });
  t.deepEqual(over.body.decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED'], '50000 already spent today + 15000 > 60000');
  const fits = await app.request('/v1/purchase-requests', { key, body: purchase(10000) });
  t.is(fits.body.decision.outcome, 'APPROVED');
  const window = await app.store.db.collection('budget_windows').findOne({ policyId: org.policies.p.id });
  t.like(window, { openingBalanceMinor: 50000, committedMinor: 10000, heldMinor: 0 });
});

test('limits added mid-month start from the approved spend of their day and month in the organisation’s zone, not UTC’s', async (t) => {
  // New York: 2026-11-01 is the Sunday its summer time ends. `clock` is the instant each purchase is made at.
  let clock = new Date('2026-10-31T12:00:00.000Z');
  const zoned = await startApp({ now: () => clock });
  t.teardown(() => zoned.close());
  const manifest: any = {
    organization: { handle: 'zoned', name: 'Zoned', currency: 'USD', timezone: 'America/New_York' },
    agents: [{ handle: 'a', name: 'A' }],
    policies: [{ handle: 'p', name: 'P', scope: 'ORGANIZATION', currencies: ['USD'], rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '90000' }], merchants: [] }],
    apiKeys: [{ handle: 'a-key', agent: 'a' }, { handle: 'org-key' }],
  };
  const org = await applyManifest(zoned, manifest);
  const key = org.keys['a-key'];
  const buy = async (at: string, amount: number, outcome = 'APPROVED') => {
    clock = new Date(at);
    const res = await zoned.request('/v1/purchase-requests', { key, body: purchase(amount, 'Paper Co', { currency: 'USD' }) });
    t.is(res.body.decision?.outcome, outcome, res.text);
  };
  await buy('2026-10-31T12:00:00.000Z', 1000); // October in New York
  await buy('2026-11-01T03:30:00.000Z', 2000); // 23:30 on 31 October in New York, November in UTC
  await buy('2026-11-01T12:00:00.000Z', 4000); // 1 November
  await buy('2026-11-18T04:30:00.000Z', 8000); // 23:30 on 17 November in New York, the 18th in UTC
  await buy('2026-11-18T15:00:00.000Z', 16000); // today
  await buy('2026-11-18T15:10:00.000Z', 95000, 'REJECTED');
  clock = new Date('2026-11-18T16:00:00.000Z');

  manifest.policies[0].rules.push(
    { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '100000' },
    { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '500000' },
  );
  manifest.policies[0].activate = false;
  const draftId = (await applyManifest(zoned, manifest)).policies.p.draftVersionId!;
  const validated = await zoned.request(`/v1/policies/${org.policies.p.id}/versions/${draftId}/validate`, { method: 'POST', key: org.keys['org-key'] });
  const impact = (kind: string) => validated.body.budgetImpact.find((i: any) => i.periodKind === kind);
  t.like(impact('DAY'), { periodKey: '2026-11-18', attributableMinor: '16000', openingBalanceMinor: '16000' });
  t.like(impact('MONTH'), { periodKey: '2026-11', attributableMinor: '28000', openingBalanceMinor: '28000' });

  manifest.policies[0].activate = true;
  await applyManifest(zoned, manifest);
  await buy('2026-11-18T16:00:00.000Z', 1000);
  const windows = zoned.store.db.collection('budget_windows');
  t.like(await windows.findOne({ policyId: org.policies.p.id, periodKind: 'DAY' }), { periodKey: '2026-11-18', openingBalanceMinor: 16000, committedMinor: 1000 });
  t.like(await windows.findOne({ policyId: org.policies.p.id, periodKind: 'MONTH' }), { periodKey: '2026-11', openingBalanceMinor: 28000, committedMinor: 1000 });
});
