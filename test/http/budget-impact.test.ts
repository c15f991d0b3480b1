// validate's budgetImpact and the opening balance of a spend limit that appears mid-period (SPEC.md 4.9).
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
