// Budget windows and currencies through the real HTTP surface (docs/reference/contract.md §2.1, §2.6;
// docs/internals/design.md §4 item 8): zero- and three-decimal currencies, the organisation's default
// currency against an explicit one, a currency no policy covers, and codes that are not ISO 4217.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, onePolicyManifest, type AppliedOrg } from '../helpers/fixtures.ts';

let app: TestApp;
let org: AppliedOrg;
test.before(async () => {
  app = await startApp({ now: () => new Date('2026-06-15T10:00:00.000Z') });
  org = await applyManifest(
    app,
    onePolicyManifest('currencies', {
      timezone: 'Europe/Berlin',
      currency: 'JPY',
      currencies: ['JPY', 'KWD'],
      rules: [
        { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '1000', currency: 'JPY' },
        { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '1000', currency: 'KWD' },
      ],
    }),
  );
});
test.after.always(() => app?.close());

const buy = (body: Record<string, unknown>) =>
  app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', reason: 'Supplies', ...body } });

test.serial('the default currency and the explicit one share a window; yen have no decimals, dinars three', async (t) => {
  t.like((await buy({ amountMinor: 900 })).body, { purchaseRequest: { currency: 'JPY' }, decision: { outcome: 'APPROVED' } });
  t.like((await buy({ amountMinor: 100, currency: 'JPY' })).body, { decision: { outcome: 'APPROVED' } });
  const over = await buy({ amountMinor: 1, currency: null });
  t.deepEqual(over.body.decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  t.regex(over.body.decision.explanation, /spending this day to 1001 JPY, above the daily budget of 1000 JPY/);
  t.is((await buy({ amountMinor: 1000, currency: 'KWD' })).body.decision.outcome, 'APPROVED');
  const dinar = await buy({ amountMinor: 1, currency: 'KWD' });
  t.regex(dinar.body.decision.explanation, /0\.001 KWD .* to 1\.001 KWD, above the daily budget of 1\.000 KWD/);
  const windows = await app.store.db.collection('budget_windows').find({ policyId: org.policies.budget.id }).sort({ currency: 1 }).toArray();
  t.deepEqual(windows.map((w) => [w.currency, w.periodKey, w.committedMinor]), [['JPY', '2026-06-15', 1000], ['KWD', '2026-06-15', 1000]]);
});

test.serial('a currency no policy covers is refused, not counted anywhere, up to the largest amount', async (t) => {
  for (const amountMinor of ['1', '9007199254740991']) {
    const res = await buy({ amountMinor, currency: 'BHD' });
    t.is(res.status, 201);
    t.deepEqual(res.body.decision.reasonCodes, ['CURRENCY_NOT_COVERED']);
  }
  t.is(await app.store.db.collection('budget_windows').countDocuments({ policyId: org.policies.budget.id, currency: 'BHD' }), 0);
});

test('codes that are not ISO 4217 currencies are 400 invalid_request at the currency', async (t) => {
  for (const [currency, code] of [['jpy', 'INVALID_FORMAT'], ['JP', 'INVALID_FORMAT'], ['ZZZ', 'CURRENCY_NOT_ISO_4217'], ['XTS', 'CURRENCY_NOT_ISO_4217'], ['XAU', 'CURRENCY_NOT_ISO_4217']]) {
    const res = await buy({ amountMinor: 1, currency });
    t.is(res.status, 400, currency);
    t.like(res.body.error, { code: 'invalid_request', issues: [{ path: 'currency', code }] }, currency);
  }
  const tooLarge = await buy({ amountMinor: '9007199254740992', currency: 'JPY' });
  t.like(tooLarge.body.error, { code: 'invalid_request', issues: [{ path: 'amountMinor', code: 'AMOUNT_TOO_LARGE' }] });
});
