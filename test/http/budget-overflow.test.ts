// A budget window counts at most 2^53-1 minor units (what storage holds exactly). Amounts are at most
// that much each, but holds pile up past a limit that asks a person: a purchase that would take a
// window past what it can count is refused, never a 500 for everyone after it.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';

const MAX = '9007199254740991';
let app: TestApp;
let acme: AppliedOrg;
test.before(async () => {
  app = await startApp();
  acme = await applyManifest(app, acmeManifest());
});
test.after.always(() => app?.close());

const submit = (amountMinor: string) =>
  app.request('/v1/purchase-requests', { key: acme.keys['travel-key'], body: { merchant: 'Airline', amountMinor, currency: 'USD', reason: 'flight' } });

test('holds past a limit that asks a person stop where a window cannot count them: REJECTED, not 500', async (t) => {
  // The travel policy asks a person beyond 10,000.00 USD a month.
  const first = await submit(MAX);
  t.is(first.status, 201, first.text);
  t.is(first.body.decision.outcome, 'REQUIRES_APPROVAL');
  for (const amount of [MAX, '1']) {
    const res = await submit(amount);
    t.is(res.status, 201, res.text);
    t.is(res.body.decision.outcome, 'REJECTED');
    t.deepEqual(res.body.decision.reasonCodes, ['MONTHLY_LIMIT_EXCEEDED']);
    t.regex(res.body.decision.explanation, /more than a budget can count/);
  }
  const simulated = await app.request('/v1/simulations/current-policies', { key: acme.keys['travel-key'], body: { merchant: 'Airline', amountMinor: '1', currency: 'USD', reason: 'flight' } });
  t.is(simulated.status, 200, simulated.text);
  t.is(simulated.body.simulatedDecision.outcome, 'REJECTED');
  // The window holds exactly the first purchase.
  const window = await app.store.db.collection('budget_windows').findOne({ organizationId: acme.organizationId, currency: 'USD' });
  t.is(window?.heldMinor, Number(MAX));
});
