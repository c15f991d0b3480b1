// POST /v1/purchase-requests and GET /v1/purchase-requests/{id} (docs/reference/contract.md §4.1, §4.2) through real HTTP.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, acmeManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
// A fixed mid-month instant: day and month budgets cannot roll over during the test.
const NOW = new Date('2026-11-18T10:00:00.000Z');

let app: TestApp;
let shop: AppliedOrg;
let other: AppliedOrg;

test.before(async () => {
  app = await startApp({ now: () => NOW });
  shop = await applyManifest(app, shopManifest());
  other = await applyManifest(app, acmeManifest('other-tenant'));
});
test.after.always(() => app?.close());

const submit = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  app.request('/v1/purchase-requests', { key, body, headers });

test('an approved purchase answers 201 with every field of the response', async (t) => {
  const res = await submit(shop.keys['a-key'], purchase('1250', 'Paper Co', { category: 'office', merchantDomain: 'paper.example', metadata: { ticket: 'T-1' } }));
  t.is(res.status, 201);
  const b = res.body;
  t.deepEqual(Object.keys(b).sort(), ['approval', 'decision', 'policyVersions', 'purchaseRequest', 'replayed', 'ruleEvaluations']);
  t.regex(b.purchaseRequest.id, UUID);
  t.deepEqual({ ...b.purchaseRequest, id: undefined }, { id: undefined, status: 'APPROVED', amountMinor: '1250', currency: 'EUR' });
  t.regex(b.decision.id, UUID);
  t.is(b.decision.outcome, 'APPROVED');
  t.deepEqual(b.decision.reasonCodes, ['WITHIN_POLICY']);
  t.is(typeof b.decision.explanation, 'string');
  t.regex(b.decision.evaluatedAt, TIMESTAMP);
  t.regex(b.decision.engineVersion, /^[a-z-]+@\d+\.\d+\.\d+$/);
  t.deepEqual(b.approval, { required: false, expiresAt: null });
  t.deepEqual(b.policyVersions, [{ policyVersionId: shop.policies.main.activeVersionId, applicabilityReason: 'AGENT_SCOPE' }]);
  t.true(b.ruleEvaluations.length >= 4, 'every rule is reported, passed ones included');
  for (const e of b.ruleEvaluations) {
    t.truthy(e.rule);
    t.truthy(e.outcome);
    t.truthy(e.role);
  }
  t.false(b.replayed);
});

test('the readback shows what the submitting key may see, and reading writes nothing', async (t) => {
  const created = await submit(shop.keys['a-key'], purchase(999, 'Paper Co', { metadata: { n: 1 } }));
  const id = created.body.purchaseRequest.id;
  const before = await app.store.db.collection('purchase_views').findOne({ _id: id });
  const res = await app.request(`/v1/purchase-requests/${id}`, { key: shop.keys['a-key'] });
  t.is(res.status, 200);
  const p = res.body.purchase;
  t.like(p, {
    id,
    status: 'APPROVED',
    merchant: 'Paper Co',
    reason: 'Printer paper for the office',
    amountMinor: '999',
    currency: 'EUR',
    category: null,
    merchantDomain: null,
    origin: 'API',
    initiatedBy: null,
    approval: null,
  });
  t.deepEqual(p.agent, { id: shop.agents.a.id, name: 'Agent A', status: 'ENABLED' });
  t.deepEqual(p.submittedVia, { type: 'API_KEY', apiKeyPrefix: shop.result.apiKeys['a-key'].prefix });
  t.is(p.decision.kind, 'INITIAL');
  t.is(p.decision.outcome, 'APPROVED');
  t.regex(p.requestedAt, TIMESTAMP);
  t.regex(p.resolvedAt, TIMESTAMP);
  t.deepEqual(await app.store.db.collection('purchase_views').findOne({ _id: id }), before);
  const stored = await app.store.db.collection('purchases').findOne({ _id: id });
  t.is(stored!.requestBody, JSON.stringify(purchase(999, 'Paper Co', { metadata: { n: 1 } })), 'the body is kept verbatim as evidence');
  t.deepEqual(stored!.metadata, { n: 1 });
});

test('metadata whose keys look like Extended JSON ($date, $oid) is recorded as the object it was', async (t) => {
  const metadata = { order: { $date: '2020-01-01T00:00:00Z' }, ref: { $oid: '64b7f0c2a1b2c3d4e5f60718' }, both: { a: 1, $numberLong: '5' } };
  const created = await submit(shop.keys['a-key'], purchase(501, 'Paper Co', { metadata }));
  t.is(created.status, 201);
  const stored = await app.store.db.collection('purchases').findOne({ _id: created.body.purchaseRequest.id });
  t.deepEqual(stored!.metadata, metadata);
});

test('a purchase is readable only by the key that submitted it: everything else is the same 404', async (t) => {
  const created = await submit(shop.keys['a-key'], purchase(500));
  const id = created.body.purchaseRequest.id;
  const notFound = await app.request('/v1/purchase-requests/0190aaaa-0000-7000-8000-000000000000', { key: shop.keys['a-key'] });
  t.is(notFound.status, 404);
  for (const [key, path] of [
    [shop.keys['a-key-2'], `/v1/purchase-requests/${id}`], // same agent, another key
    [shop.keys['b-key'], `/v1/purchase-requests/${id}`], // another agent
    [other.keys['buyer-key'], `/v1/purchase-requests/${id}`], // another tenant
    [shop.keys['a-key'], '/v1/purchase-requests/not-a-uuid'],
  ]) {
    const res = await app.request(path, { key });
    t.is(res.status, 404, path);
    t.deepEqual(res.body, notFound.body);
  }
  const orgKey = await app.request(`/v1/purchase-requests/${id}`, { key: shop.keys['org-key'] });
  t.is(orgKey.status, 403);
  t.is(orgKey.body.error.code, 'api_key_not_bound_to_agent');
});

test('every engine reason code is reachable through the API', async (t) => {
  const cases: [string, unknown, string, string[]][] = [
    ['a-key', purchase(100, 'Paper Co'), 'APPROVED', ['WITHIN_POLICY']],
    ['a-key', purchase(100, 'SHADY goods ltd.'), 'REJECTED', ['MERCHANT_BLOCKED']],
    ['b-key', purchase(100, 'Ink Inc'), 'REJECTED', ['MERCHANT_NOT_ALLOW_LISTED']],
    ['a-key', purchase(60000, 'Paper Co'), 'REJECTED', ['AMOUNT_EXCEEDS_MAX']],
    ['a-key', purchase(25000, 'Paper Co'), 'REQUIRES_APPROVAL', ['APPROVAL_THRESHOLD_EXCEEDED']],
    ['off-key', purchase(100, 'Paper Co'), 'REJECTED', ['AGENT_DISABLED']],
    ['lonely-key', purchase(100, 'Paper Co'), 'REJECTED', ['NO_APPLICABLE_POLICY']],
    ['a-key', purchase(100, 'Paper Co', { currency: 'USD' }), 'REJECTED', ['CURRENCY_NOT_COVERED']],
    ['m-key', purchase(20000, 'Paper Co'), 'APPROVED', ['WITHIN_POLICY']],
    ['m-key', purchase(15000, 'Paper Co'), 'REJECTED', ['MONTHLY_LIMIT_EXCEEDED']],
  ];
  for (const [key, body, outcome, reasons] of cases) {
    const res = await submit(shop.keys[key], body);
    t.is(res.status, 201, JSON.stringify(body));
    t.is(res.body.decision.outcome, outcome, JSON.stringify(body));
    t.deepEqual(res.body.decision.reasonCodes, reasons, JSON.stringify(body));
  }
});

test('a daily budget refuses the purchase that would cross it', async (t) => {
  const fresh = await applyManifest(app, shopManifest('daily'));
  const key = fresh.keys['a-key'];
  for (let i = 0; i < 6; i++) t.is((await submit(key, purchase(15000))).body.decision.outcome, 'APPROVED');
  const over = await submit(key, purchase(15000));
  t.is(over.body.decision.outcome, 'REJECTED');
  t.deepEqual(over.body.decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  const exact = await submit(key, purchase(10000));
  t.is(exact.body.decision.outcome, 'APPROVED', 'reaching the limit exactly is allowed');
  const window = await app.store.db.collection('budget_windows').findOne({ policyId: fresh.policies.main.id, periodKind: 'DAY' });
  t.is(window!.committedMinor, 100000);
});

test('REQUIRES_APPROVAL holds the budget and opens a pending approval', async (t) => {
  const res = await submit(shop.keys['a-key'], purchase(30000));
  t.is(res.body.decision.outcome, 'REQUIRES_APPROVAL');
  t.is(res.body.purchaseRequest.status, 'PENDING_APPROVAL');
  t.true(res.body.approval.required);
  t.is(Date.parse(res.body.approval.expiresAt) - NOW.getTime(), 60 * 60 * 1000, 'the organisation approvalTtl is PT1H');
  const read = await app.request(`/v1/purchase-requests/${res.body.purchaseRequest.id}`, { key: shop.keys['a-key'] });
  t.like(read.body.purchase.approval, { state: 'PENDING', isPending: true, escalationReasonCodes: ['APPROVAL_THRESHOLD_EXCEEDED'], resolvedAt: null, resolvedBy: null, comment: null });
  t.is(read.body.purchase.resolvedAt, null);
  const event = await app.store.db.collection('events').findOne({ type: 'purchase.approval_required', 'data.purchaseRequestId': res.body.purchaseRequest.id });
  t.truthy(event);
});

test('engine decisions emit purchase.approved / purchase.rejected with resolvedBy ENGINE', async (t) => {
  const approved = await submit(shop.keys['a-key'], purchase(101));
  const rejected = await submit(shop.keys['a-key'], purchase(100, 'Shady Goods Ltd'));
  for (const [res, type] of [[approved, 'purchase.approved'], [rejected, 'purchase.rejected']] as const) {
    const e = await app.store.db.collection('events').findOne({ 'data.purchaseRequestId': res.body.purchaseRequest.id });
    t.is(e!.type, type);
    t.is(e!.data.resolvedBy, 'ENGINE');
    t.is(e!.data.approvalRequestId, null);
    t.regex(String(e!._id), UUID);
  }
});

test('currency defaults to the organisation’s; JSON integers and strings are both accepted', async (t) => {
  const asNumber = await submit(shop.keys['a-key'], purchase(42));
  const asString = await submit(shop.keys['a-key'], purchase('42', 'Paper Co', { currency: null }));
  for (const res of [asNumber, asString]) {
    t.is(res.status, 201);
    t.is(res.body.purchaseRequest.currency, 'EUR');
    t.is(res.body.purchaseRequest.amountMinor, '42');
  }
});

test.serial('bad input is a clear 400 and records nothing', async (t) => {
  const key = shop.keys['a-key'];
  const before = await app.store.db.collection('purchases').countDocuments({});
  const cases: [unknown, string, string][] = [
    [{ amountMinor: 1, reason: 'x' }, 'merchant', 'REQUIRED'],
    [purchase(0), 'amountMinor', 'AMOUNT_NOT_POSITIVE'],
    [purchase(-5), 'amountMinor', 'AMOUNT_NOT_POSITIVE'],
    [purchase('9007199254740992'), 'amountMinor', 'AMOUNT_TOO_LARGE'],
    [purchase('1'.repeat(39)), 'amountMinor', 'AMOUNT_TOO_LARGE'],
    [purchase(1.5), 'amountMinor', 'INVALID_TYPE'],
    [purchase('12.50'), 'amountMinor', 'INVALID_FORMAT'],
    [purchase(1, 'Paper Co', { currency: 'eur' }), 'currency', 'INVALID_FORMAT'],
    [purchase(1, 'Paper Co', { currency: 'ABC' }), 'currency', 'CURRENCY_NOT_ISO_4217'],
    [purchase(1, 'Paper Co', { colour: 'red' }), 'colour', 'UNKNOWN_FIELD'],
    [purchase(1, 'Paper Co', { metadata: 'not an object' }), 'metadata', 'INVALID_TYPE'],
    [purchase(1, ''), 'merchant', 'MERCHANT_EMPTY'],
    [purchase(1, 'Paper Co', { reason: '' }), 'reason', 'REASON_EMPTY'],
    [[1, 2], 'body', 'INVALID_TYPE'],
    ['"just a string"', 'body', 'INVALID_TYPE'],
  ];
  for (const [body, path, code] of cases) {
    const res = typeof body === 'string' ? await app.request('/v1/purchase-requests', { key, raw: body, headers: { 'content-type': 'application/json' } }) : await submit(key, body);
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error.code, 'invalid_request');
    t.true(res.body.error.issues.some((i: any) => i.path === path && i.code === code), `${JSON.stringify(body)} → ${JSON.stringify(res.body.error.issues)}`);
  }
  const huge = await app.request('/v1/purchase-requests', { key, raw: '{"merchant":"x","reason":"y","amountMinor":1e400}', headers: { 'content-type': 'application/json' } });
  t.is(huge.status, 400);
  t.is(huge.body.error.code, 'invalid_request');
  t.is(await app.store.db.collection('purchases').countDocuments({}), before);
});

test('malformed JSON, wrong media types and oversized bodies', async (t) => {
  const key = shop.keys['a-key'];
  const malformed = await app.request('/v1/purchase-requests', { key, raw: '{"merchant": "x",', headers: { 'content-type': 'application/json' } });
  t.is(malformed.status, 400);
  t.is(malformed.body.error.code, 'malformed_json');
  const empty = await app.request('/v1/purchase-requests', { key, method: 'POST', raw: '', headers: { 'content-type': 'application/json' } });
  t.is(empty.status, 400);
  t.is(empty.body.error.code, 'malformed_json');
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', null]) {
    const res = await app.request('/v1/purchase-requests', { key, raw: JSON.stringify(purchase(1)), headers: type ? { 'content-type': type } : {} });
    t.is(res.status, 415, String(type));
    t.is(res.body.error.code, 'unsupported_media_type');
  }
  const charset = await app.request('/v1/purchase-requests', { key, raw: JSON.stringify(purchase(1)), headers: { 'content-type': 'application/json; charset=utf-8' } });
  t.is(charset.status, 201);
  const big = await submit(key, purchase(1, 'Paper Co', { metadata: { pad: 'x'.repeat(70 * 1024) } }));
  t.is(big.status, 413);
  t.is(big.body.error.code, 'payload_too_large');
});

test('an organization-scoped key cannot submit: 403 api_key_not_bound_to_agent', async (t) => {
  const res = await submit(shop.keys['org-key'], purchase(1));
  t.is(res.status, 403);
  t.is(res.body.error.code, 'api_key_not_bound_to_agent');
});

test('Idempotency-Key: a replay answers 200 with the same decision and reserves nothing more', async (t) => {
  const fresh = await applyManifest(app, shopManifest('idem'));
  const key = fresh.keys['a-key'];
  const body = purchase(30000, 'Paper Co', { metadata: { a: 1, b: 2 } });
  const first = await submit(key, body, { 'Idempotency-Key': 'order-1' });
  t.is(first.status, 201);
  const reordered = { metadata: { b: 2, a: 1 }, reason: body.reason, amountMinor: 30000, merchant: 'Paper Co' };
  const replay = await submit(key, reordered, { 'Idempotency-Key': 'order-1' });
  t.is(replay.status, 200);
  t.true(replay.body.replayed);
  t.is(replay.body.decision.id, first.body.decision.id);
  t.deepEqual({ ...replay.body, replayed: false }, first.body);
  const window = await app.store.db.collection('budget_windows').findOne({ policyId: fresh.policies.main.id });
  t.is(window!.heldMinor, 30000, 'held once, not twice');
  const reuse = await submit(key, purchase(30001), { 'Idempotency-Key': 'order-1' });
  t.is(reuse.status, 409);
  t.is(reuse.body.error.code, 'idempotency_key_reuse');
  const otherKey = await submit(fresh.keys['a-key-2'], body, { 'Idempotency-Key': 'order-1' });
  t.is(otherKey.status, 201, 'keys are scoped to the submitting credential');
  const bad = await submit(key, body, { 'Idempotency-Key': 'ünïcode' });
  t.is(bad.status, 400);
  t.is(bad.body.error.code, 'invalid_request');
});

test('Idempotency-Key: metadata numbers are compared as written, not as the doubles they read as', async (t) => {
  const key = (await applyManifest(app, shopManifest('idem-numbers'))).keys['a-key'];
  const send = (idempotencyKey: string, metadata: string) =>
    app.request('/v1/purchase-requests', {
      key,
      raw: `{"merchant":"Paper Co","amountMinor":"100","reason":"numbers","metadata":${metadata}}`,
      headers: { 'content-type': 'application/json', 'Idempotency-Key': idempotencyKey },
    });
  // Each pair reads as one double but is two numbers: the second request is another body.
  for (const [i, [first, second]] of [
    ['{"id":9007199254740993}', '{"id":9007199254740992}'],
    ['{"ratio":0.1000000000000000055511}', '{"ratio":0.1}'],
    ['{"tiny":1e-400}', '{"tiny":-2e-400}'],
    ['{"ids":[12345678901234567890,1]}', '{"ids":[12345678901234567891,1]}'],
  ].entries()) {
    t.is((await send(`n-${i}`, first)).status, 201, first);
    const other = await send(`n-${i}`, second);
    t.is(other.status, 409, `${first} then ${second}`);
    t.is(other.body.error.code, 'idempotency_key_reuse');
  }
  // The same number written otherwise, or the same text again, is the same body.
  t.is((await send('same', '{"a":1.50,"b":9007199254740993,"c":[0.1000000000000000055511]}')).status, 201);
  const again = await send('same', '{"c":[1000000000000000055511e-22],"b":9007199254740993.0,"a":15e-1}');
  t.is(again.status, 200, again.text);
  t.true(again.body.replayed);
});
