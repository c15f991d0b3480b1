// Fixes from the contract audit and the hostile-input probe, each through real HTTP: one list of
// every problem, query parameters, page values, JSON depth, __proto__, TRACE, MERCHANT_EMPTY.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { MAX_ISSUES } from '../../src/http/validate.ts';
import { LIMITS, MAX_JSON_DEPTH } from '../../src/http/body.ts';
import { rawRequest } from '../helpers/raw-http.ts';

let app: TestApp;
let shop: AppliedOrg;

test.before(async () => {
  app = await startApp();
  shop = await applyManifest(app, shopManifest());
});
test.after.always(() => app?.close());

const submit = (body: unknown) => app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body });
const issuesOf = (res: { body: any }) => (res.body.error.issues as { path: string; code: string }[]).map((i) => `${i.path}:${i.code}`).sort();
// Tests run concurrently: each counts the purchases of its own agent.
const purchases = (agent = 'a') => app.store.db.collection('purchases').countDocuments({ agentId: shop.agents[agent].id });

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

test('an empty merchant is MERCHANT_EMPTY and an empty reason REASON_EMPTY, as the REST API page promises', async (t) => {
  const res = await submit(purchase(100, '', { reason: '' }));
  t.deepEqual(issuesOf(res), ['merchant:MERCHANT_EMPTY', 'reason:REASON_EMPTY']);
  const sim = await app.request('/v1/simulations/current-policies', { key: shop.keys['a-key'], body: purchase(100, '  ') });
  t.deepEqual(issuesOf(sim), ['merchant:MERCHANT_EMPTY']);
});

// Serial (ava runs these before the concurrent tests), so the store's count of purchases is this test's alone.
test.serial('simulation: the agentId rule is listed with the other problems', async (t) => {
  const before = await app.store.db.collection('purchases').countDocuments({});
  const res = await app.request('/v1/simulations/current-policies', { key: shop.keys['org-key'], body: { amountMinor: '0', reason: 'r', merchant: 'Paper Co' } });
  t.deepEqual(issuesOf(res), ['agentId:AGENT_ID_REQUIRED', 'amountMinor:AMOUNT_NOT_POSITIVE']);
  t.is(await app.store.db.collection('purchases').countDocuments({}), before);
});

test('unknown query parameters are refused on every /v1 operation', async (t) => {
  const org = shop.keys['org-key'];
  const agent = shop.keys['lonely-key'];
  const id = '0190a6f2-7c1e-7a41-9c3e-2f6d1b0e5a77';
  const cases: [string, string, string, unknown?][] = [
    ['GET', '/v1/agents?x=1', org],
    ['GET', '/v1/webhooks?x=1', org],
    ['GET', `/v1/webhooks/${id}?x=1`, org],
    ['GET', `/v1/webhooks/${id}/deliveries?limit=5&x=1`, org],
    ['DELETE', `/v1/webhooks/${id}?x=1`, org],
    ['GET', `/v1/purchase-requests/${id}?x=1`, agent],
    ['GET', `/v1/policies/${shop.policies.main.id}?x=1`, org],
    ['POST', '/v1/purchase-requests?x=1', agent, purchase(100)],
    ['POST', '/v1/simulations/current-policies?x=1', agent, purchase(100)],
  ];
  for (const [method, path, key, body] of cases) {
    const res = await app.request(path, { method, key, body });
    t.is(res.status, 400, `${method} ${path}`);
    t.is(res.body.error.code, 'invalid_request', `${method} ${path}`);
    t.deepEqual(issuesOf(res), ['x:UNKNOWN_FIELD'], `${method} ${path}`);
  }
  t.is(await purchases('lonely'), 0, 'a refused submission writes nothing');
});

test('a query parameter given twice is refused: which one was meant?', async (t) => {
  const org = shop.keys['org-key'];
  const id = '0190a6f2-7c1e-7a41-9c3e-2f6d1b0e5a77';
  for (const [path, name] of [
    ['/v1/policies?status=ACTIVE&status=DISABLED', 'status'],
    ['/v1/policies?pageSize=1&pageSize=abc&x=1', 'pageSize'],
    [`/v1/webhooks/${id}/deliveries?limit=1&limit=abc`, 'limit'],
  ]) {
    const res = await app.request(path, { key: org });
    t.is(res.status, 400, path);
    t.true(issuesOf(res).includes(`${name}:DUPLICATE_KEY`), `${path}: ${res.text}`);
  }
  // Every problem in one list: the unknown one too.
  t.deepEqual(issuesOf(await app.request('/v1/policies?pageSize=1&pageSize=abc&x=1', { key: org })).sort(), ['pageSize:DUPLICATE_KEY', 'x:UNKNOWN_FIELD']);
});

test('pageSize above 100 is clamped and a page past the end is empty, whatever the number of digits', async (t) => {
  const key = shop.keys['org-key'];
  const list = (query: string) => app.request(`/v1/policies?${query}`, { key });
  for (const pageSize of ['101', '99999999999', '9'.repeat(40)]) {
    const res = await list(`pageSize=${pageSize}`);
    t.is(res.status, 200, pageSize);
    t.is(res.body.pagination.pageSize, 100);
    t.true(res.body.policies.length > 0);
  }
  for (const page of ['4', '1000000', '2147483647', '9'.repeat(40)]) {
    const res = await list(`page=${page}`);
    t.is(res.status, 200, page);
    t.deepEqual(res.body.policies, []);
    t.true(Number.isSafeInteger(res.body.pagination.page) && res.body.pagination.page >= 4);
    t.true(res.body.pagination.total > 0);
  }
  for (const bad of ['page=0', 'page=-1', 'page=1.5', 'pageSize=0', 'pageSize=abc', 'page=']) {
    const res = await list(bad);
    t.is(res.status, 400, bad);
    t.is(res.body.error.code, 'invalid_request');
  }
});

test('an idempotent replay compares the parsed request: "1999" and 1999, key order and white space are the same body', async (t) => {
  const key = shop.keys['b-key'];
  const post = (raw: string, idem: string) => app.request('/v1/purchase-requests', { key, raw, headers: { 'content-type': 'application/json', 'idempotency-key': idem } });
  const first = await post('{"merchant":"Paper Co","amountMinor":"1999","reason":"Paper","metadata":{"a":1,"b":[1,2]}}', 'idem-1');
  t.is(first.status, 201);
  const before = await purchases('b');
  const same = await post('{ "reason" : "Paper", "metadata": {"b":[1,2],"a":1}, "amountMinor": 1999,\n "merchant":"Paper Co", "category": null }', 'idem-1');
  t.is(same.status, 200, same.text);
  t.true(same.body.replayed);
  t.is(same.body.purchaseRequest.id, first.body.purchaseRequest.id);
  const leadingZero = await post('{"merchant":"Paper Co","amountMinor":"01999","reason":"Paper","metadata":{"a":1,"b":[1,2]}}', 'idem-1');
  t.is(leadingZero.status, 200);
  for (const different of [
    '{"merchant":"Paper Co","amountMinor":2000,"reason":"Paper","metadata":{"a":1,"b":[1,2]}}',
    '{"merchant":"Paper Co","amountMinor":1999,"reason":"Paper","metadata":{"a":1,"b":[2,1]}}',
    '{"merchant":"Paper Co","amountMinor":1999,"reason":"Paper"}',
  ]) {
    const res = await post(different, 'idem-1');
    t.is(res.status, 409, different);
    t.is(res.body.error.code, 'idempotency_key_reuse');
  }
  t.is(await purchases('b'), before);
});

test('JSON nested deeper than the documented limit is invalid_request before anything recursive runs', async (t) => {
  const key = shop.keys['a-key'];
  for (const depth of [MAX_JSON_DEPTH, 40, 4000, 100_000]) {
    const nested = '{"a":'.repeat(depth - 2) + '1' + '}'.repeat(depth - 2);
    const raw = `{"merchant":"Paper Co","amountMinor":1,"reason":"deep","metadata":${nested}}`;
    const res = await app.request('/v1/purchase-requests', { key, raw, headers: { 'content-type': 'application/json' } });
    if (depth <= MAX_JSON_DEPTH) {
      t.is(res.status, 201, `depth ${depth}`);
      continue;
    }
    t.is(res.status, depth * 5 > LIMITS.standard ? 413 : 400, `depth ${depth}`);
    if (res.status === 400) t.deepEqual(issuesOf(res), ['body:TOO_DEEP']);
  }
  const arrays = await app.request('/v1/simulations/current-policies', { key, raw: '['.repeat(3000) + ']'.repeat(3000), headers: { 'content-type': 'application/json' } });
  t.is(arrays.status, 400);
  t.deepEqual(issuesOf(arrays), ['body:TOO_DEEP']);
  const manifest = await app.admin('/admin/manifests', { raw: '{"organization":' + '['.repeat(3000) + ']'.repeat(3000) + '}', headers: { 'content-type': 'application/json' } });
  t.is(manifest.status, 400);
  t.deepEqual(issuesOf(manifest), ['body:TOO_DEEP']);
});

test('__proto__ is an ordinary key, refused by rule (unknown field, reserved in metadata), never a prototype; _bsontype is reserved in metadata too', async (t) => {
  const key = shop.keys['m-key'];
  const post = (raw: string) => app.request('/v1/purchase-requests', { key, raw, headers: { 'content-type': 'application/json' } });
  const top = await post('{"merchant":"Paper Co","amountMinor":1,"reason":"r","__proto__":{"amountMinor":5}}');
  t.is(top.status, 400);
  t.deepEqual(issuesOf(top), ['__proto__:UNKNOWN_FIELD']);
  const inMetadata = await post('{"merchant":"Paper Co","amountMinor":1,"reason":"r","metadata":{"__proto__":{"polluted":true},"ok":1}}');
  t.is(inMetadata.status, 400, inMetadata.text);
  t.deepEqual(issuesOf(inMetadata), ['metadata.__proto__:RESERVED_KEY']);
  const nested = await post('{"merchant":"Paper Co","amountMinor":1,"reason":"r","metadata":{"a":[{"__proto__":1}]}}');
  t.deepEqual(issuesOf(nested), ['metadata.a.0.__proto__:RESERVED_KEY']);
  t.is(({} as any).polluted, undefined);
  // The MongoDB driver's marker of its own BSON classes: refused too, or the write would fail (a 500).
  const bsontype = await post('{"merchant":"Paper Co","amountMinor":1,"reason":"r","metadata":{"ref":{"_bsontype":"ObjectId","id":"x"}}}');
  t.is(bsontype.status, 400, bsontype.text);
  t.deepEqual(issuesOf(bsontype), ['metadata.ref._bsontype:RESERVED_KEY']);
  t.is(await purchases('m'), 0);
  const webhook = await app.request('/v1/webhooks', { key: shop.keys['org-key'], raw: '{"__proto__":{"url":"https://example.com/"}}', headers: { 'content-type': 'application/json' } });
  t.is(webhook.status, 400);
  t.is(webhook.body.error.code, 'invalid_request');
});

test('a metadata key with a NUL character is refused with RESERVED_KEY: no store could write it', async (t) => {
  // JSON allows "\u0000" in a key; BSON field names are C strings, so the MongoDB driver refuses the
  // document (a 500 on that store), and the wire listener could not send it back from the embedded one.
  const key = shop.keys['off-key'];
  const post = (raw: string) => app.request('/v1/purchase-requests', { key, raw, headers: { 'content-type': 'application/json' } });
  const res = await post('{"merchant":"Nul Key Co","amountMinor":1,"reason":"r","metadata":{"a":[{"b\\u0000c":1}],"ok":"a value may hold \\u0000"}}');
  t.is(res.status, 400, res.text);
  t.deepEqual(issuesOf(res), ['metadata.a.0.b\u0000c:RESERVED_KEY']);
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: 'Nul Key Co' }), 0);
});

test('TRACE and other methods implemented nowhere answer the JSON error body, not a plain-text 501', async (t) => {
  for (const [method, path] of [['TRACE', '/v1/agents'], ['TRACE', '/oauth/token'], ['TRACE', '/health'], ['PROPFIND', '/admin/manifests'], ['TRACE', '/nowhere']]) {
    const res = await rawRequest(app.url, method, path, { authorization: `Bearer ${shop.keys['org-key']}` });
    t.true(res.status === 405 || res.status === 401, `${method} ${path}: ${res.status}`);
    t.regex(res.type, /^application\/json/, `${method} ${path}`);
    const body = JSON.parse(res.text);
    t.true(['method_not_allowed', 'unauthorized', 'invalid_api_key'].includes(body.error.code), `${method} ${path}: ${res.text}`);
  }
  const trace = await rawRequest(app.url, 'TRACE', '/oauth/token');
  t.is(trace.status, 405);
  t.is(JSON.parse(trace.text).error.code, 'method_not_allowed');
});
