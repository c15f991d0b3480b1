// A budget window counts at most 2^53-1 minor units (what storage holds exactly). Amounts are at most
// that much each, but holds pile up past a limit that asks a person: a purchase that would take a
// window past what it can count is refused, never a 500 for everyone after it.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { periodOf, periodOfPurchase, windowOfPurchase } from '../helpers/windows.ts';

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

/** Fills one month's window to what it can count, then asks for more; returns what was answered and the months it ran in. */
async function overflow() {
  const first = await submit(MAX);
  const more = [];
  for (const amount of [MAX, '1']) more.push(await submit(amount));
  const simulated = await app.request('/v1/simulations/current-policies', { key: acme.keys['travel-key'], body: { merchant: 'Airline', amountMinor: '1', currency: 'USD', reason: 'flight' } });
  const months = new Set<string>();
  for (const res of [first, ...more]) if (res.status === 201) months.add(await periodOfPurchase(app.store.db, res.body.purchaseRequest.id, 'MONTH'));
  if (simulated.status === 200) months.add(periodOf('MONTH', simulated.body.simulation.simulatedAt, 'Europe/Berlin'));
  return { first, more, simulated, months };
}

test('holds past a limit that asks a person stop where a window cannot count them: REJECTED, not 500', async (t) => {
  // The travel policy asks a person beyond 10,000.00 USD a month. The subject is one month's window: a run that
  // straddles a month's end in Berlin spreads the purchases over two, so it runs once more, wholly in the new month.
  let run = await overflow();
  if (run.months.size > 1) run = await overflow();
  t.is(run.months.size, 1, 'every purchase and the simulation fell in one month');
  const { first, more, simulated } = run;
  t.is(first.status, 201, first.text);
  t.is(first.body.decision.outcome, 'REQUIRES_APPROVAL');
  for (const res of more) {
    t.is(res.status, 201, res.text);
    t.is(res.body.decision.outcome, 'REJECTED');
    t.deepEqual(res.body.decision.reasonCodes, ['MONTHLY_LIMIT_EXCEEDED']);
    t.regex(res.body.decision.explanation, /more than a budget can count/);
  }
  t.is(simulated.status, 200, simulated.text);
  t.is(simulated.body.simulatedDecision.outcome, 'REJECTED');
  // The window holds exactly the first purchase.
  const window = await windowOfPurchase(app.store.db, acme.policies['travel-usd'].id, first.body.purchaseRequest.id, 'MONTH');
  t.is(window?.heldMinor, Number(MAX));
});
