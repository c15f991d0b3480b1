// A listed merchant written with invisible characters or look-alike letters is still the
// listed merchant (docs/reference/contract.md §2.6, matching on the normalised key), through real HTTP.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';

const NOW = new Date('2026-11-18T10:00:00.000Z');
let app: TestApp;
let shop: AppliedOrg;
let disguisedList: AppliedOrg;
let istanbul: AppliedOrg;

test.before(async () => {
  app = await startApp({ now: () => NOW });
  shop = await applyManifest(app, shopManifest());
  // The same shop, its block and allow entries written in disguise.
  const manifest: any = shopManifest('shop-disguised-list');
  manifest.policies[0].merchants = [{ listType: 'BLOCK', label: '\u0405had\u0443 G\u03BF\u043Eds\u200B Ltd' }];
  manifest.policies[1].merchants = [{ listType: 'ALLOW', label: '\u{1D40F}aper\u3164 C\u043E' }];
  disguisedList = await applyManifest(app, manifest);
  const turkish: any = shopManifest('shop-istanbul');
  turkish.policies[0].merchants = [{ listType: 'BLOCK', label: 'Istanbul Shop' }];
  istanbul = await applyManifest(app, turkish);
});
test.after.always(() => app?.close());

/** 'Shady Goods Ltd' disguised: each was approved while the key stripped only format characters. */
const DISGUISES: Array<[string, string]> = [
  ['U+034F COMBINING GRAPHEME JOINER', 'Sha\u034Fdy Goods Ltd'],
  ['U+FE0F VARIATION SELECTOR-16', 'Shady\uFE0F Goods Ltd'],
  ['U+3164 HANGUL FILLER', 'Shady Goo\u3164ds Ltd'],
  ['U+180E MONGOLIAN VOWEL SEPARATOR', 'Shady Goods L\u180Etd'],
  ['Cyrillic capital DZE', '\u0405hady Goods Ltd'],
  ['Cyrillic small o', 'Shady G\u043E\u043Eds Ltd'],
  ['Greek small omicron', 'Shady G\u03BFods Ltd'],
  ['mathematical bold S', '\u{1D412}hady Goods Ltd'],
  ['capital I for small l', 'Shady Goods Itd'],
  ['U+2800 BRAILLE PATTERN BLANK, drawn as a space', 'Shady\u2800Goods\u2800Ltd'],
  ['all of them at once', '\u{1D412}\u034Fh\u0430dy\uFE0F G\u03BF\u043Eds\u3164 \u180EItd'],
];

const submit = (key: string, body: unknown) => app.request('/v1/purchase-requests', { key, body });

for (const [what, merchant] of DISGUISES) {
  test(`a blocked merchant disguised with ${what} is MERCHANT_BLOCKED, and shown as submitted`, async (t) => {
    const res = await submit(shop.keys['a-key'], purchase(1000, merchant));
    t.is(res.status, 201);
    t.is(res.body.decision.outcome, 'REJECTED');
    t.deepEqual(res.body.decision.reasonCodes, ['MERCHANT_BLOCKED']);
    t.true(res.body.decision.explanation.includes(merchant), res.body.decision.explanation);
    const read = await app.request(`/v1/purchase-requests/${res.body.purchaseRequest.id}`, { key: shop.keys['a-key'] });
    t.is(read.body.purchase.merchant, merchant);
  });
}

test('a different name that merely resembles a blocked one is not blocked', async (t) => {
  const res = await submit(shop.keys['a-key'], purchase(1000, 'Shade Goods Ltd'));
  t.is(res.body.decision.outcome, 'APPROVED');
  t.deepEqual(res.body.decision.reasonCodes, ['WITHIN_POLICY']);
});

test('an allow-listed merchant in disguise is on the allow list; another name is not', async (t) => {
  const allowed = await submit(shop.keys['b-key'], purchase(1000, '\u03A1\u0430per\u200B C\u03BF'));
  t.is(allowed.body.decision.outcome, 'APPROVED');
  const other = await submit(shop.keys['b-key'], purchase(1000, 'Paper Cow'));
  t.deepEqual(other.body.decision.reasonCodes, ['MERCHANT_NOT_ALLOW_LISTED']);
});

test('list entries written in disguise match the plain names', async (t) => {
  const blocked = await submit(disguisedList.keys['a-key'], purchase(1000, 'Shady Goods Ltd'));
  t.deepEqual(blocked.body.decision.reasonCodes, ['MERCHANT_BLOCKED']);
  const shade = await submit(disguisedList.keys['a-key'], purchase(1000, 'Shade Goods Ltd'));
  t.is(shade.body.decision.outcome, 'APPROVED');
  const allowed = await submit(disguisedList.keys['b-key'], purchase(1000, 'PAPER CO'));
  t.is(allowed.body.decision.outcome, 'APPROVED');
});

test('a simulation blocks the disguised merchant too, and shows it as submitted', async (t) => {
  for (const [, merchant] of DISGUISES) {
    const res = await app.request('/v1/simulations/current-policies', { key: shop.keys['a-key'], body: purchase(1000, merchant) });
    t.is(res.status, 200);
    t.deepEqual(res.body.simulatedDecision.reasonCodes, ['MERCHANT_BLOCKED'], merchant);
    t.is(res.body.purchase.merchant, merchant);
  }
  const shade = await app.request('/v1/simulations/current-policies', { key: shop.keys['a-key'], body: purchase(1000, 'Shade Goods Ltd') });
  t.is(shade.body.simulatedDecision.outcome, 'APPROVED');
});

test('a policy-version simulation matches disguises on the version as frozen', async (t) => {
  const res = await app.request('/v1/simulations/policy-version', {
    key: shop.keys['org-key'],
    body: { ...purchase(1000, 'Shady G\u043E\u043Eds Ltd'), policyVersionId: shop.policies.main.activeVersionId },
  });
  t.is(res.status, 200);
  t.deepEqual(res.body.simulatedDecision.reasonCodes, ['MERCHANT_BLOCKED']);
});

test('a dot above on an i, which draws no second dot, does not hide a blocked merchant; the Turkish capital İ is the upper case of i', async (t) => {
  const manifest: any = shopManifest('shop-dotted');
  manifest.policies[0].merchants = [{ listType: 'BLOCK', label: 'Spice Imports' }];
  const dotted = await applyManifest(app, manifest);
  // i + U+0307 COMBINING DOT ABOVE looks like i (the dot replaces the i's own: Soft_Dotted); 'İ'.toLowerCase() is that pair.
  for (const merchant of ['Spi\u0307ce Imports', 'SP\u0130CE \u0130MPORTS', 'spice i\u0307mports']) {
    const res = await submit(dotted.keys['a-key'], purchase(1000, merchant));
    t.deepEqual(res.body.decision.reasonCodes, ['MERCHANT_BLOCKED'], merchant);
    const sim = await app.request('/v1/simulations/current-policies', { key: dotted.keys['a-key'], body: purchase(1000, merchant) });
    t.deepEqual(sim.body.simulatedDecision.reasonCodes, ['MERCHANT_BLOCKED'], merchant);
  }
  // A mark that shows is another name.
  const other = await submit(dotted.keys['a-key'], purchase(1000, 'Spi\u0308ce Imports'));
  t.is(other.body.decision.outcome, 'APPROVED');
});

test('a merchant of nothing but braille blanks is empty: 400 MERCHANT_EMPTY', async (t) => {
  const res = await submit(shop.keys['a-key'], purchase(1000, '\u2800\u2800'));
  t.is(res.status, 400);
  t.like(res.body.error.issues[0], { path: 'merchant', code: 'MERCHANT_EMPTY' });
});
test('a blocked name written with a Turkic i (İ, ı, or i with a combining dot above) is blocked; another letter is not', async (t) => {
  // 'İ' lower-cases to 'i' + U+0307, which was kept in the key, so 'İstanbul Shop' was APPROVED.
  for (const merchant of ['\u0130stanbul Shop', '\u0131stanbul shop', 'i\u0307stanbul shop', 'ISTANBUL SHOP']) {
    const res = await submit(istanbul.keys['a-key'], purchase(1000, merchant));
    t.deepEqual(res.body.decision.reasonCodes, ['MERCHANT_BLOCKED'], merchant);
  }
  const other = await submit(istanbul.keys['a-key'], purchase(1000, '\u00CEstanbul Shop'));
  t.is(other.body.decision.outcome, 'APPROVED');
});
