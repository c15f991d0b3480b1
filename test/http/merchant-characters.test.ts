// A merchant name holds no control character or line break (docs/reference/decisions.md): wherever a
// merchant is given (a purchase, a simulation, a policy's merchant list in a manifest) one is refused
// with 400 invalid_request, issue CONTROL_CHARACTER at the field, and nothing is stored. The MCP
// tools share the purchase's rule (test/mcp/mcp.test.ts).
import test from 'ava';
import fc from 'fast-check';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { compile } from '../../src/http/validate.ts';
import { PurchaseRequestBody } from '../../schemas/purchases.ts';
import { Manifest } from '../../schemas/manifest.ts';

let app: TestApp;
let shop: AppliedOrg;
test.before(async () => {
  app = await startApp();
  shop = await applyManifest(app, shopManifest('merchant-characters'));
});
test.after.always(() => app?.close());

const FORBIDDEN = /[\u0000-\u001F\u007F-\u009F\u2028\u2029]/;
const REFUSED: Array<[string, string]> = [
  ['NUL', 'Paper\u0000Co'],
  ['CR LF', 'Paper Co\r\nX-Forged: yes'],
  ['LF', 'Paper\nCo'],
  ['tab', 'Paper\tCo'],
  ['ESC', 'Paper \u001B[31mCo'],
  ['DEL', 'Paper\u007FCo'],
  ['NEL (C1)', 'Paper\u0085Co'],
  ['LINE SEPARATOR', 'Paper\u2028Co'],
  ['PARAGRAPH SEPARATOR', 'Paper\u2029Co'],
];
const issuesOf = (res: { body: any }) => res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]);
const purchases = () => app.store.db.collection('purchases').countDocuments({ organizationId: shop.organizationId });

test('property: the purchase schema refuses a merchant exactly when it holds a control character or line break', (t) => {
  const validator = compile(PurchaseRequestBody);
  // Mostly ordinary text, with the refused characters and their neighbours (space, U+00A0, U+2027, U+202A) mixed in.
  const char = fc.oneof(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
    fc.integer({ min: 0, max: 0x20 }).map((c) => String.fromCharCode(c)),
    fc.integer({ min: 0x7e, max: 0xa0 }).map((c) => String.fromCharCode(c)),
    fc.constantFrom('\u2027', '\u2028', '\u2029', '\u202A', '\u200B'),
  );
  fc.assert(
    fc.property(fc.array(char, { maxLength: 20 }).map((cs) => cs.join('')), (merchant) => {
      const codes = validator.issues({ merchant, amountMinor: '100', reason: 'r' }).filter((i) => i.path === 'merchant').map((i) => i.code);
      return codes.includes('CONTROL_CHARACTER') === FORBIDDEN.test(merchant);
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('property: a manifest refuses a merchant label exactly when it holds a control character or line break', (t) => {
  const validator = compile(Manifest);
  const manifest: any = shopManifest('property');
  fc.assert(
    fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }), (label) => {
      manifest.policies[0].merchants = [{ listType: 'BLOCK', label }];
      const refused = validator.issues(manifest).some((i) => i.path === 'policies.0.merchants.0.label' && i.code === 'CONTROL_CHARACTER');
      return refused === FORBIDDEN.test(label);
    }),
    { numRuns: 200 },
  );
  t.pass();
});

test('a purchase whose merchant holds a control character or line break is 400 at merchant, and nothing is recorded', async (t) => {
  const before = await purchases();
  for (const [what, merchant] of REFUSED) {
    const res = await app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: purchase(100, merchant) });
    t.is(res.status, 400, what);
    t.is(res.body.error.code, 'invalid_request', what);
    t.deepEqual(issuesOf(res), [['merchant', 'CONTROL_CHARACTER']], what);
  }
  t.is(await purchases(), before);
  // What is not a control character stays accepted: letters of any script, symbols, invisible format characters.
  for (const merchant of ['Papierwaren Müller ✓', 'Shady\u200B Goods', 'שוק\u200F Co', 'Paper Co ']) {
    const res = await app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: purchase(100, merchant) });
    t.is(res.status, 201, `${JSON.stringify(merchant)}: ${res.text}`);
  }
});

test.serial('a purchase\'s category and merchantDomain, labels too, refuse the same characters at their field; a simulation too', async (t) => {
  // A category is one of the approver email's fact lines: a line break in it would forge the lines after it.
  const before = await purchases();
  for (const field of ['category', 'merchantDomain']) {
    for (const [what, text] of REFUSED) {
      const value = field === 'category' ? `office${text}` : `paper${text}.example`;
      const res = await app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: purchase(100, 'Paper Co', { [field]: value }) });
      t.is(res.status, 400, `${field} ${what}: ${res.text}`);
      t.deepEqual(issuesOf(res), [[field, 'CONTROL_CHARACTER']], `${field} ${what}`);
      const simulated = await app.request('/v1/simulations/current-policies', { key: shop.keys['a-key'], body: purchase(100, 'Paper Co', { [field]: value }) });
      t.deepEqual(issuesOf(simulated), [[field, 'CONTROL_CHARACTER']], `simulated ${field} ${what}`);
    }
  }
  t.is(await purchases(), before);
  const ok = await app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: purchase(100, 'Paper Co', { category: 'Bürobedarf ✓', merchantDomain: 'xn--papier-mller-jlb.example' }) });
  t.is(ok.status, 201, ok.text);
});

test('the simulations refuse the same merchants, at the same path', async (t) => {
  for (const [what, merchant] of REFUSED) {
    const current = await app.request('/v1/simulations/current-policies', { key: shop.keys['a-key'], body: purchase(100, merchant) });
    t.is(current.status, 400, what);
    t.deepEqual(issuesOf(current), [['merchant', 'CONTROL_CHARACTER']], what);
    const version = await app.request('/v1/simulations/policy-version', {
      key: shop.keys['org-key'],
      body: purchase(100, merchant, { policyVersionId: shop.policies.main.activeVersionId }),
    });
    t.is(version.status, 400, what);
    t.deepEqual(issuesOf(version), [['merchant', 'CONTROL_CHARACTER']], what);
  }
});

test('a manifest whose merchant label holds a control character or line break is 400 at the label, and nothing is applied', async (t) => {
  for (const [what, label] of REFUSED) {
    const manifest: any = shopManifest('merchant-characters');
    manifest.policies[0].merchants = [{ listType: 'ALLOW', label: 'Paper Co' }, { listType: 'BLOCK', label }];
    const res = await app.admin('/admin/manifests', { body: manifest });
    t.is(res.status, 400, what);
    t.is(res.body.error.code, 'invalid_request', what);
    t.deepEqual(issuesOf(res), [['policies.0.merchants.1.label', 'CONTROL_CHARACTER']], what);
  }
  const stored = await app.store.db.collection('policy_versions').find({ policyId: shop.policies.main.id }).toArray();
  t.false(stored.some((v: any) => v.merchants.some((m: any) => FORBIDDEN.test(m.label))));
});
