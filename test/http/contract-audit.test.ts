// Fixes from the contract audit and the hostile-input probe, each through real HTTP: one list of
// every problem, query parameters, page values, JSON depth, __proto__, TRACE, MERCHANT_EMPTY.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { MAX_ISSUES } from '../../src/http/validate.ts';

let app: TestApp;
let shop: AppliedOrg;

test.before(async () => {
  app = await startApp();
  shop = await applyManifest(app, shopManifest());
});
test.after.always(() => app?.close());

const submit = (body: unknown) => app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body });
const issuesOf = (res: { body: any }) => (res.body.error.issues as { path: string; code: string }[]).map((i) => `${i.path}:${i.code}`).sort();
const purchases = () => app.store.db.collection('purchases').countDocuments({});

test('issues list schema and domain problems together', async (t) => {
  const res = await submit({ amountMinor: '0' });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'invalid_request');
  t.deepEqual(issuesOf(res), ['amountMinor:AMOUNT_NOT_POSITIVE', 'merchant:REQUIRED', 'reason:REQUIRED']);
});

test('an unknown field hides no other problem', async (t) => {
  const res = await submit({ amountMinor: '-5', merchant: '', reason: 'ok', currency: 'ABC', colour: 'red' });
  t.deepEqual(issuesOf(res), ['amountMinor:AMOUNT_NOT_POSITIVE', 'colour:UNKNOWN_FIELD', 'currency:CURRENCY_NOT_ISO_4217', 'merchant:MERCHANT_EMPTY']);
});

test('every unknown field is listed, up to the documented cap, and the list is never empty', async (t) => {
  const nine: Record<string, unknown> = { amountMinor: 5 };
  for (let i = 0; i < 9; i++) nine[`u${i}`] = i;
  const res = await submit(nine);
  t.deepEqual(issuesOf(res), [...Array.from({ length: 9 }, (_, i) => `u${i}:UNKNOWN_FIELD`), 'merchant:REQUIRED', 'reason:REQUIRED'].sort());

  const many: Record<string, unknown> = purchase(100);
  for (let i = 0; i < 500; i++) many[`x${i}`] = i;
  const capped = await submit(many);
  t.is(capped.status, 400);
  t.is(capped.body.error.issues.length, MAX_ISSUES);
  t.true(capped.body.error.issues.every((i: any) => i.code === 'UNKNOWN_FIELD'));
});

test('an empty merchant is MERCHANT_EMPTY and an empty reason REASON_EMPTY, as README promises', async (t) => {
  const res = await submit(purchase(100, '', { reason: '' }));
  t.deepEqual(issuesOf(res), ['merchant:MERCHANT_EMPTY', 'reason:REASON_EMPTY']);
  const sim = await app.request('/v1/simulations/current-policies', { key: shop.keys['a-key'], body: purchase(100, '  ') });
  t.deepEqual(issuesOf(sim), ['merchant:MERCHANT_EMPTY']);
});

test('simulation: the agentId rule is listed with the other problems', async (t) => {
  const res = await app.request('/v1/simulations/current-policies', { key: shop.keys['org-key'], body: { amountMinor: '0', reason: 'r', merchant: 'Paper Co' } });
  t.deepEqual(issuesOf(res), ['agentId:AGENT_ID_REQUIRED', 'amountMinor:AMOUNT_NOT_POSITIVE']);
  t.is(await purchases(), 0);
});
