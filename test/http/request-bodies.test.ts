// What a JSON body must be, beyond parsing: whole amounts written as integers, each name once, UTF-8,
// a media type in any case, a known Content-Encoding. A refused body records nothing. And every limit of
// docs/reference/contract.md §8 on a /v1 body or query at its exact boundary: the limit itself is accepted, one more
// is refused with the documented status and code (or clamped, where the contract says so). Webhook bodies (16 KB)
// and deliveries' `limit` are in test/webhooks/management.test.ts, MCP list_purchases' in test/mcp/mcp-paging.test.ts.
import test from 'ava';
import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { DuplicateKeyError, parseJson } from '../../src/json.ts';

let app: TestApp;
let acme: AppliedOrg;
test.before(async () => {
  app = await startApp();
  acme = await applyManifest(app, acmeManifest());
});
test.after.always(() => app?.close());

const purchases = () => app.store.db.collection('purchases').countDocuments({});
const submitRaw = (raw: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], raw, headers, method: 'POST' });

test.serial('an amount written with a fraction or an exponent is refused, even when it parses to a whole number', async (t) => {
  const before = await purchases();
  for (const amount of ['0.99999999999999999', '1.00000000000000001', '4503599627370496.5', '1.0', '1e3', '10E1', '1e400', '-1e400', `${'9'.repeat(400)}.5`]) {
    const res = await submitRaw(`{"merchant":"Paper Co","amountMinor":${amount},"reason":"r"}`);
    t.is(res.status, 400, amount);
    t.is(res.body.error.code, 'invalid_request');
    t.deepEqual(res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['amountMinor', 'AMOUNT_NOT_INTEGER']], amount);
  }
  t.is(await purchases(), before);
  // An integer literal is an amount; a fraction elsewhere (metadata) is the caller's own business.
  const res = await submitRaw('{"merchant":"Paper Co","amountMinor":1250,"reason":"r","metadata":{"rate":1.0,"amountMinor":2.50}}');
  t.is(res.status, 201, res.text);
  t.is(res.body.purchaseRequest.amountMinor, '1250');
});

test.serial('an amount written as an integer beyond 2^53-1 is AMOUNT_TOO_LARGE, as the same digits in a string are', async (t) => {
  const before = await purchases();
  const cases: Array<[string, string]> = [
    ['9007199254740992', 'AMOUNT_TOO_LARGE'],
    ['9007199254740993', 'AMOUNT_TOO_LARGE'],
    ['99999999999999999999', 'AMOUNT_TOO_LARGE'],
    ['-9007199254740993', 'AMOUNT_NOT_POSITIVE'],
    // Beyond a double's range (JSON.parse makes Infinity of them): the same by value.
    ['9'.repeat(309), 'AMOUNT_TOO_LARGE'],
    [`1${'0'.repeat(400)}`, 'AMOUNT_TOO_LARGE'],
    [`-${'9'.repeat(309)}`, 'AMOUNT_NOT_POSITIVE'],
  ];
  for (const [amount, code] of cases) {
    const body = `{"merchant":"Paper Co","amountMinor":${amount},"reason":"r"}`;
    const res = await submitRaw(body);
    t.is(res.status, 400, amount);
    t.deepEqual(res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['amountMinor', code]], `${amount}: ${res.text}`);
    // The string form of the same digits answers the same.
    const quoted = await submitRaw(`{"merchant":"Paper Co","amountMinor":"${amount}","reason":"r"}`);
    t.deepEqual(quoted.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['amountMinor', code]], amount);
    const simulated = await app.request('/v1/simulations/current-policies', { key: acme.keys['buyer-key'], raw: body, headers: { 'content-type': 'application/json' }, method: 'POST' });
    t.is(simulated.status, 400, amount);
    t.deepEqual(simulated.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['amountMinor', code]], amount);
  }
  t.is(await purchases(), before);
});

test.serial('a number beyond a double\'s range in metadata is OUT_OF_RANGE at its path', async (t) => {
  const before = await purchases();
  const res = await submitRaw(`{"merchant":"Paper Co","amountMinor":"100","reason":"r","metadata":{"a":[1,${'9'.repeat(309)}],"b":-1e999,"c":1e308}}`);
  t.is(res.status, 400, res.text);
  t.deepEqual(res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]).sort(), [['metadata.a.1', 'OUT_OF_RANGE'], ['metadata.b', 'OUT_OF_RANGE']]);
  t.is(await purchases(), before);
});

test.serial('a string amount is judged by its value, however many digits it is written with', async (t) => {
  const before = await purchases();
  // More than 40 characters was TOO_LONG: a value of 1 written with leading zeros ("01999" is 1999), and
  // a value above 2^53-1 that the amount range calls AMOUNT_TOO_LARGE.
  const zeros = await submitRaw(`{"merchant":"Paper Co","amountMinor":"${'0'.repeat(60)}7","reason":"r"}`);
  t.is(zeros.status, 201, zeros.text);
  t.is(zeros.body.purchaseRequest.amountMinor, '7');
  const long = await submitRaw(`{"merchant":"Paper Co","amountMinor":"${'9'.repeat(41)}","reason":"r"}`);
  t.deepEqual(long.body.error?.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['amountMinor', 'AMOUNT_TOO_LARGE']], long.text);
  t.is(await purchases(), before + 1);

  // The simulation reads the body as a submission does, and writes nothing.
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  const written = fc.tuple(fc.boolean(), fc.nat({ max: 50 }), fc.oneof(fc.bigInt({ min: 0n, max: max + 10n }), fc.bigInt({ min: 0n, max: 10n ** 80n })));
  await fc.assert(
    fc.asyncProperty(written, async ([negative, zeros, value]) => {
      const text = `${negative ? '-' : ''}${'0'.repeat(zeros)}${value}`;
      const res = await app.request('/v1/simulations/current-policies', { key: acme.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: text, reason: 'r' } });
      const amount = negative ? -value : value;
      if (amount >= 1n && amount <= max) return res.status === 200 && res.body.purchase.amountMinor === value.toString();
      const code = amount < 1n ? 'AMOUNT_NOT_POSITIVE' : 'AMOUNT_TOO_LARGE';
      return res.status === 400 && JSON.stringify(res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code])) === JSON.stringify([['amountMinor', code]]);
    }),
    { numRuns: 60 },
  );
  t.is(await purchases(), before + 1);
});

test.serial('a manifest limit written as a fraction is refused', async (t) => {
  const manifest = acmeManifest('fractional');
  const text = JSON.stringify(manifest).replace(/"amountMinor":"?(\d+)"?/, '"amountMinor":$1.0');
  t.not(text, JSON.stringify(manifest));
  const res = await app.request('/admin/manifests', { key: undefined, raw: text, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${'test-admin-token-0123456789abcdef'}` } });
  t.is(res.status, 400, res.text);
  t.true(res.body.error.issues.some((i: { path: string; code: string }) => i.path.endsWith('.amountMinor') && i.code === 'AMOUNT_NOT_INTEGER'), res.text);
});

test.serial('an amount written as a JSON integer of any length is judged by its value, as its string is', async (t) => {
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  // Around 2^53, and up to far beyond a double's range (10^308).
  const value = fc.oneof(fc.bigInt({ min: -10n, max: max + 10n }), fc.bigInt({ min: -(10n ** 400n), max: 10n ** 400n }));
  await fc.assert(
    fc.asyncProperty(value, async (amount) => {
      const body = `{"merchant":"Paper Co","amountMinor":${amount},"reason":"r"}`;
      const res = await app.request('/v1/simulations/current-policies', { key: acme.keys['buyer-key'], raw: body, headers: { 'content-type': 'application/json' }, method: 'POST' });
      const expected = amount >= 1n && amount <= max ? null : amount < 1n ? 'AMOUNT_NOT_POSITIVE' : 'AMOUNT_TOO_LARGE';
      const got = res.status === 200 ? null : res.body.error?.issues?.map((i: { path: string; code: string }) => `${i.path}:${i.code}`).join(',');
      if (got !== (expected && `amountMinor:${expected}`)) throw new Error(`${amount}: ${res.status} ${res.text.slice(0, 300)}`);
      if (expected === null && res.body.purchase.amountMinor !== amount.toString()) throw new Error(`${amount} read as ${res.body.purchase.amountMinor}`);
    }),
    { numRuns: 60, includeErrorInReport: true },
  );
  t.pass();
});

test.serial('a name given twice in one object is refused with its path, however it is escaped', async (t) => {
  const before = await purchases();
  const cases: Array<[string, string]> = [
    ['{"merchant":"Paper Co","amountMinor":"1999","amountMinor":"2","reason":"r"}', 'amountMinor'],
    ['{"merchant":"Paper Co","amountMinor":"1999","reason":"r","metadata":{"a":1,"\\u0061":2}}', 'metadata.a'],
    ['{"merchant":"Paper Co","amountMinor":"1999","reason":"r","metadata":{"list":[{"x":1},{"y":1,"y":2}]}}', 'metadata.list.1.y'],
  ];
  for (const [body, path] of cases) {
    const res = await submitRaw(body);
    t.is(res.status, 400, body);
    t.deepEqual(res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [[path, 'DUPLICATE_KEY']]);
  }
  t.is(await purchases(), before);
});

test.serial('a body that is not UTF-8 is malformed_json, not stored with its bytes replaced', async (t) => {
  const before = await purchases();
  const bytes = Buffer.concat([Buffer.from('{"merchant":"Pa'), Buffer.from([0xff, 0xfe]), Buffer.from('per","amountMinor":"1999","reason":"r"}')]);
  const res = await submitRaw(bytes);
  t.is(res.status, 400);
  t.is(res.body.error.code, 'malformed_json');
  t.is(await purchases(), before);
  // Valid UTF-8 beyond ASCII is kept as sent.
  const ok = await submitRaw(Buffer.from('{"merchant":"Papierwaren Müller ✓","amountMinor":"1999","reason":"r"}', 'utf8'));
  t.is(ok.status, 201, ok.text);
  const readback = await app.request(`/v1/purchase-requests/${ok.body.purchaseRequest.id}`, { key: acme.keys['buyer-key'] });
  t.is(readback.body.purchase.merchant, 'Papierwaren Müller ✓', readback.text);
});

test.serial('media types are compared without regard to case', async (t) => {
  for (const type of ['Application/JSON', 'APPLICATION/JSON; charset=utf-8', 'application/json ; charset=UTF-8']) {
    const res = await submitRaw('{"merchant":"Paper Co","amountMinor":"100","reason":"r"}', { 'content-type': type });
    t.is(res.status, 201, `${type}: ${res.text}`);
  }
  t.is((await submitRaw('{"merchant":"Paper Co","amountMinor":"100","reason":"r"}', { 'content-type': 'text/plain' })).status, 415);
});

test.serial('a media type the body reader cannot parse is 415, not a body said to be empty', async (t) => {
  // `*` and an empty name before `+json` are no media type: the reader skipped the body, and the
  // answer was 400 "The request body is empty" for a body that was sent.
  for (const type of ['application/*+json', 'application/+json', 'application/json/x']) {
    const res = await submitRaw('{"merchant":"Paper Co","amountMinor":"100","reason":"r"}', { 'content-type': type });
    t.is(res.status, 415, `${type}: ${res.text}`);
    t.is(res.body.error.code, 'unsupported_media_type');
  }
  t.is((await submitRaw('{"merchant":"Paper Co","amountMinor":"100","reason":"r"}', { 'content-type': 'application/vnd.shop.order+json; v=2' })).status, 201);
  t.is((await submitRaw('', { 'content-type': 'application/json' })).body.error.code, 'malformed_json', 'an empty body is still malformed_json');
});

test.serial('an unknown Content-Encoding is 415 unsupported_media_type; gzip is read', async (t) => {
  const body = '{"merchant":"Paper Co","amountMinor":"100","reason":"r"}';
  const res = await submitRaw(body, { 'content-type': 'application/json', 'content-encoding': 'xyz' });
  t.is(res.status, 415);
  t.is(res.body.error.code, 'unsupported_media_type');
  for (const encoding of ['gzip', 'GZIP', ' Gzip ']) {
    const gzipped = await submitRaw(gzipSync(body), { 'content-type': 'application/json', 'content-encoding': encoding });
    t.is(gzipped.status, 201, `${encoding}: ${gzipped.text}`);
  }
});

test.serial('a body nested thousands deep is TOO_DEEP, with or without a number written as a fraction', async (t) => {
  for (const leaf of ['1', '1.5']) {
    const metadata = '{"a":'.repeat(5000) + leaf + '}'.repeat(5000);
    const res = await submitRaw(`{"merchant":"Paper Co","amountMinor":"100","reason":"r","metadata":${metadata}}`);
    t.is(res.status, 400, leaf);
    t.deepEqual(res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['body', 'TOO_DEEP']], leaf);
  }
});

test.serial('parseJson reads every JSON value as JSON.parse does, and finds a repeated name wherever it is', (t) => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const text = JSON.stringify(value);
      t.deepEqual(parseJson(text), JSON.parse(text));
    }),
  );
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { minKeys: 1 }), fc.nat(), (object, pick) => {
      const names = Object.keys(object);
      const name = names[pick % names.length];
      // The same name once more, at the end of the object.
      const text = JSON.stringify(object).slice(0, -1) + `,${JSON.stringify(name)}:null}`;
      const error = t.throws(() => parseJson(text), { instanceOf: DuplicateKeyError });
      t.is(error?.path, name);
    }),
  );
});

test.serial('a lone UTF-16 surrogate is LONE_SURROGATE at its field, in every body and manifest; a pair is kept as sent', async (t) => {
  const before = await purchases();
  const json = { 'content-type': 'application/json' };
  const orgKey = acme.keys['admin-key'];
  const cases: Array<[string, () => Promise<{ status: number; body: any; text: string }>, string[]]> = [
    ['merchant', () => submitRaw('{"merchant":"Paper \\ud800 Co","amountMinor":"100","reason":"r"}'), ['merchant']],
    ['reason and a metadata name', () => submitRaw('{"merchant":"Paper Co","amountMinor":"100","reason":"r\\udfff","metadata":{"n\\udc00":1,"list":["ok","\\ud83d"]}}'), ['reason', 'metadata.n\udc00', 'metadata.list.1']],
    ['simulation', () => app.request('/v1/simulations/current-policies', { key: acme.keys['buyer-key'], method: 'POST', headers: json, raw: '{"merchant":"Paper Co","amountMinor":"100","reason":"\\ude00\\ud83d"}' }), ['reason']],
    ['webhook url', () => app.request('/v1/webhooks', { key: orgKey, method: 'POST', headers: json, raw: '{"url":"https://hooks.example.com/\\ud800","subscribedTypes":["purchase.approved"]}' }), ['url']],
    ['webhook description', () => app.request('/v1/webhooks', { key: orgKey, method: 'POST', headers: json, raw: '{"url":"https://hooks.example.com/x","subscribedTypes":["purchase.approved"],"description":"d\\udbff"}' }), ['description']],
    ['operator API', () => app.admin(`/admin/agents/${acme.agents.buyer!.id}`, { method: 'PATCH', headers: json, raw: '{"status":"ENABLED\\ud800"}' }), ['status']],
    ['JSON manifest', () => app.admin('/admin/manifests', { headers: json, raw: JSON.stringify(acmeManifest('lone-json')).replace('"Office buyer"', '"Office \\ud800buyer"') }), ['agents.0.name']],
    ['YAML manifest', () => app.admin('/admin/manifests', { headers: { 'content-type': 'application/yaml' }, raw: stringify(acmeManifest('lone-yaml')).replace('name: Office buyer', 'name: "Office \\ud800buyer"') }), ['agents.0.name']],
  ];
  // One at a time: sent together, they left idle pooled connections, and the next test's first request
  // sometimes failed with "fetch failed" (presumably one closed by the server's keep-alive timeout as it was reused).
  for (const [what, send, paths] of cases) {
    const res = await send();
    t.is(res.status, 400, `${what}: ${res.text}`);
    t.is(res.body.error.code, 'invalid_request', what);
    t.deepEqual(res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), paths.map((p) => [p, 'LONE_SURROGATE']), what);
  }
  t.is(await purchases(), before);
  t.is((await app.admin('/admin/manifests', { headers: json, raw: JSON.stringify(acmeManifest('lone-json')) })).status, 200, 'nothing of the refused manifest was applied');

  // An escaped pair is one character, kept as sent.
  const ok = await submitRaw('{"merchant":"Paper \\ud83d\\ude00 Co","amountMinor":"100","reason":"r"}');
  t.is(ok.status, 201, ok.text);
  const readback = await app.request(`/v1/purchase-requests/${ok.body.purchaseRequest.id}`, { key: acme.keys['buyer-key'] });
  t.is(readback.body.purchase.merchant, 'Paper 😀 Co', readback.text);
});

test.serial('any reason with a surrogate alone is refused for it, and any other is not', async (t) => {
  // Surrogates one by one (a high one followed by a low one is a pair), among any other characters.
  const surrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));
  const text = fc.array(fc.oneof(surrogate, fc.string({ unit: 'binary', maxLength: 2 })), { maxLength: 6 }).map((parts) => parts.join(''));
  await fc.assert(
    fc.asyncProperty(text, async (reason) => {
      const res = await app.request('/v1/simulations/current-policies', { key: acme.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: `r${reason}` } })
        // fetch's own message says nothing of why the connection failed (seen once in a while under load).
        .catch((e) => { throw new Error(`${e}: ${e.cause}`); });
      const refused = res.status === 400 && res.body.error.issues.some((i: { path: string; code: string }) => i.path === 'reason' && i.code === 'LONE_SURROGATE');
      if (refused !== /\p{Cs}/u.test(reason)) throw new Error(`${JSON.stringify(reason)}: ${res.status} ${res.text}`);
    }),
    { numRuns: 60, includeErrorInReport: true },
  );
  t.pass();
});

test.serial('an unknown field is named as sent, a dot or an empty name included, and listed once', async (t) => {
  const dotted = await submitRaw('{"merchant":"Paper Co","amountMinor":"100","reason":"r","a.b":1}');
  t.deepEqual(dotted.body.error.issues, [{ path: 'a.b', code: 'UNKNOWN_FIELD', message: 'Unknown field "a.b".' }]);
  const manifest = JSON.stringify(acmeManifest('empty-name')).replace('"organization":{', '"organization":{"":1,');
  const res = await app.admin('/admin/manifests', { headers: { 'content-type': 'application/json' }, raw: manifest });
  t.deepEqual(res.body.error.issues, [{ path: 'organization.', code: 'UNKNOWN_FIELD', message: 'Unknown field "".' }]);
});

// ---- docs/reference/contract.md §8 limits at their boundary ----

const KB64 = 64 * 1024;

/** `value` as JSON followed by white space up to exactly `size` bytes: valid JSON of that length. */
const paddedTo = (value: object, size: number) => {
  const text = JSON.stringify(value);
  return text + ' '.repeat(size - Buffer.byteLength(text));
};

const post = (path: string, key: string, raw: string) => app.request(path, { key, raw, headers: { 'content-type': 'application/json' } });

test('64 KB bodies: exactly 65,536 bytes is read, 65,537 is 413 payload_too_large', async (t) => {
  const office = acme.policies.office;
  const purchase = { merchant: 'Staples', amountMinor: '100', reason: 'Pens' };
  const cases: [string, string, object, number][] = [
    ['/v1/purchase-requests', acme.keys['buyer-key'], purchase, 201],
    ['/v1/simulations/current-policies', acme.keys['buyer-key'], purchase, 200],
    ['/v1/simulations/policy-version', acme.keys['admin-key'], { ...purchase, policyVersionId: office.activeVersionId }, 200],
    [`/v1/policies/${office.id}/versions/${office.activeVersionId}/validate`, acme.keys['admin-key'], {}, 200],
    ['/v1/simulations/replay', acme.keys['admin-key'], { policyVersionId: office.activeVersionId, from: '2026-01-01T00:00:00.000Z', to: '2026-02-01T00:00:00.000Z' }, 200],
  ];
  for (const [path, key, body, status] of cases) {
    const at = await post(path, key, paddedTo(body, KB64));
    t.is(at.status, status, `${path} at the limit: ${at.text.slice(0, 200)}`);
    const over = await post(path, key, paddedTo(body, KB64 + 1));
    t.is(over.status, 413, path);
    t.is(over.body.error.code, 'payload_too_large', path);
  }
});

test('64 KB counts the bytes as decoded: a gzipped body inflating to 65,536 is read, to 65,537 is 413', async (t) => {
  const purchase = { merchant: 'Staples', amountMinor: '100', reason: 'Pens' };
  const gzipped = (size: number) =>
    app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], raw: gzipSync(paddedTo(purchase, size)), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
  t.is((await gzipped(KB64)).status, 201);
  const over = await gzipped(KB64 + 1);
  t.is(over.status, 413);
  t.is(over.body.error.code, 'payload_too_large');
});

test('pageSize: 100 is 100, 101 is clamped to 100', async (t) => {
  const key = acme.keys['admin-key'];
  for (const [given, used] of [['100', 100], ['101', 100], ['99', 99]] as const) {
    const res = await app.request(`/v1/policies?pageSize=${given}`, { key });
    t.is(res.status, 200);
    t.is(res.body.pagination.pageSize, used, given);
  }
});

test('changes `limit`: 200 is accepted, 201 and 0 are 400 invalid_request OUT_OF_RANGE; leading zeros are the same number', async (t) => {
  const key = acme.keys['admin-key'];
  const body = { policyVersionId: acme.policies.office.activeVersionId, from: '2026-01-01T00:00:00.000Z', to: '2026-02-01T00:00:00.000Z' };
  const replay = (query: string) => app.request(`/v1/simulations/replay?${query}`, { key, body });
  for (const ok of ['limit=200', 'limit=1', 'limit=0200', 'limit=00001']) t.is((await replay(ok)).status, 200, ok);
  for (const bad of ['limit=201', 'limit=0', 'limit=-1', 'limit=1.0', 'limit=1e2', 'limit=', 'limit=99999999999999999999']) {
    const res = await replay(bad);
    t.is(res.status, 400, bad);
    t.deepEqual(res.body.error.issues.map((i: any) => [i.path, i.code]), [['limit', 'OUT_OF_RANGE']], bad);
  }
});
