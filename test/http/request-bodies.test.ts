// What a JSON body must be, beyond parsing: whole amounts written as integers, each name once, UTF-8,
// a media type in any case, a known Content-Encoding. A refused body records nothing.
import test from 'ava';
import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
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
  for (const amount of ['0.99999999999999999', '1.00000000000000001', '4503599627370496.5', '1.0', '1e3', '10E1']) {
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
