import test from 'ava';
import fc from 'fast-check';
import { createHmac } from 'node:crypto';
import {
  WEBHOOK_ATTEMPT_HEADER,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  computeSignature,
  deliveryHeaders,
  signatureHeader,
  verifySignature,
} from '../../src/webhooks/signing.ts';

const SECRET = 'cmp_whs_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const OTHER_SECRET = 'cmp_whs_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const TIMESTAMP = 1_790_000_000;
const NOW = new Date(TIMESTAMP * 1000);
// Non-ASCII and a byte sequence a JSON re-serialisation would change (spacing, key order, escapes).
const BODY = Buffer.from('{"id":"0190a0b0-0000-7000-8000-000000000001", "type":"webhook.test","data":{"note":"d\u00e9j\u00e0 \\u00e9"}}', 'utf8');

// Independent computation of docs/reference/contract.md §6.4: HMAC-SHA256 keyed with the UTF-8 bytes of the whole
// secret, over `v1:` + timestamp + `:` + raw body, base64url.
const reference = (secret: string, ts: number, body: Buffer): string =>
  createHmac('sha256', secret).update(Buffer.concat([Buffer.from(`v1:${ts}:`), body])).digest('base64url');

test('fixed vector: matches an independent HMAC computation', (t) => {
  const expected = reference(SECRET, TIMESTAMP, BODY);
  t.regex(expected, /^[A-Za-z0-9_-]{43}$/);
  t.is(computeSignature(SECRET, TIMESTAMP, BODY), expected);
  t.is(signatureHeader([SECRET], TIMESTAMP, BODY), `v1=${expected}`);
});

test('fixed vector: literal value computed with the openssl CLI', (t) => {
  // printf 'v1:1790000000:{"a":1}' | openssl dgst -sha256 -hmac "$SECRET" -binary | base64 | tr '+/' '-_' | tr -d '='
  t.is(computeSignature(SECRET, 1_790_000_000, Buffer.from('{"a":1}')), '6eSLOHNM96Tcpvf5EWkCdEFdTCOz3VcO5-YuTH4Rvf4');
  t.not(computeSignature(SECRET, 1_790_000_001, Buffer.from('{"a":1}')), '6eSLOHNM96Tcpvf5EWkCdEFdTCOz3VcO5-YuTH4Rvf4');
});

test('the key includes the cmp_whs_ prefix', (t) => {
  const withoutPrefix = createHmac('sha256', SECRET.slice('cmp_whs_'.length))
    .update(Buffer.concat([Buffer.from(`v1:${TIMESTAMP}:`), BODY]))
    .digest('base64url');
  t.not(computeSignature(SECRET, TIMESTAMP, BODY), withoutPrefix);
});

test('two secrets give two entries joined by a comma, in order', (t) => {
  t.is(
    signatureHeader([SECRET, OTHER_SECRET], TIMESTAMP, BODY),
    `v1=${reference(SECRET, TIMESTAMP, BODY)},v1=${reference(OTHER_SECRET, TIMESTAMP, BODY)}`,
  );
  t.throws(() => signatureHeader([], TIMESTAMP, BODY));
});

test('deliveryHeaders carries the four headers and the content type', (t) => {
  const headers = deliveryHeaders({ eventId: 'evt-1', timestamp: TIMESTAMP, attempt: 3, secrets: [SECRET], body: BODY });
  t.deepEqual(headers, {
    'Content-Type': 'application/json',
    'Service-Webhook-Id': 'evt-1',
    'Service-Webhook-Timestamp': String(TIMESTAMP),
    'Service-Webhook-Signature': `v1=${reference(SECRET, TIMESTAMP, BODY)}`,
    'Service-Webhook-Attempt': '3',
  });
  t.deepEqual(
    [WEBHOOK_ID_HEADER, WEBHOOK_TIMESTAMP_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_ATTEMPT_HEADER],
    ['Service-Webhook-Id', 'Service-Webhook-Timestamp', 'Service-Webhook-Signature', 'Service-Webhook-Attempt'],
  );
  t.throws(() => deliveryHeaders({ eventId: 'e', timestamp: TIMESTAMP, attempt: 0, secrets: [SECRET], body: BODY }));
  t.throws(() => deliveryHeaders({ eventId: 'e', timestamp: 1.5, attempt: 1, secrets: [SECRET], body: BODY }));
});

const valid = () => ({
  header: signatureHeader([SECRET], TIMESTAMP, BODY),
  timestamp: String(TIMESTAMP),
  body: BODY,
  secret: SECRET,
  now: NOW,
});

test('verify accepts an authentic delivery (string or number timestamp)', (t) => {
  t.true(verifySignature(valid()));
  t.true(verifySignature({ ...valid(), timestamp: TIMESTAMP }));
});

test('verify rejects the wrong secret', (t) => {
  t.false(verifySignature({ ...valid(), secret: OTHER_SECRET }));
});

test('verify rejects a tampered body, even by one byte or re-serialised', (t) => {
  const tampered = Buffer.from(BODY);
  tampered[tampered.length - 2] ^= 1;
  t.false(verifySignature({ ...valid(), body: tampered }));
  const reserialised = Buffer.from(JSON.stringify(JSON.parse(BODY.toString('utf8'))));
  t.false(verifySignature({ ...valid(), body: reserialised }));
});

test('verify rejects a tampered timestamp', (t) => {
  t.false(verifySignature({ ...valid(), timestamp: String(TIMESTAMP + 1) }));
});

test('verify enforces the 300 s tolerance both ways', (t) => {
  const at = (offsetSeconds: number) => new Date((TIMESTAMP + offsetSeconds) * 1000);
  t.true(verifySignature({ ...valid(), now: at(300) }));
  t.true(verifySignature({ ...valid(), now: at(-300) }));
  t.false(verifySignature({ ...valid(), now: at(301) }));
  t.false(verifySignature({ ...valid(), now: at(-301) }));
  t.false(verifySignature({ ...valid(), now: at(3600) }));
  t.true(verifySignature({ ...valid(), now: at(3600), toleranceSeconds: 3600 }));
});

test('verify accepts when only the second of two entries matches', (t) => {
  const header = signatureHeader([OTHER_SECRET, SECRET], TIMESTAMP, BODY);
  t.is(header.split(',').length, 2);
  t.true(verifySignature({ ...valid(), header }));
  t.true(verifySignature({ ...valid(), header: `v1=${'A'.repeat(43)}, ${signatureHeader([SECRET], TIMESTAMP, BODY)}` }));
});

test('verify rejects malformed headers and timestamps', (t) => {
  const sig = reference(SECRET, TIMESTAMP, BODY);
  for (const header of ['', sig, `v2=${sig}`, `v1=${sig.slice(0, -1)}`, `v1=${sig}x`, `v1= ${sig.toLowerCase()}`, 'v1=', ',,,']) {
    t.false(verifySignature({ ...valid(), header }), header);
  }
  t.false(verifySignature({ ...valid(), header: undefined }));
  t.false(verifySignature({ ...valid(), header: [`v1=${sig}`] }));
  t.false(verifySignature({ ...valid(), header: Array.from({ length: 20 }, () => `v1=${sig}`).join(',') }));
  for (const timestamp of ['', '1e9', '-1', ` ${TIMESTAMP}`, `${TIMESTAMP}.0`, undefined]) {
    t.false(verifySignature({ ...valid(), timestamp }), String(timestamp));
  }
  t.false(verifySignature({ ...valid(), secret: '' }));
});

test('property: sign then verify round-trips; any other body fails', (t) => {
  // The other body is the same one, one bit off, a byte short or long, or unrelated: a random second
  // body differs from the first at its first bytes, so alone it would not catch a signature that skips the end.
  const variant = fc.oneof(
    fc.constant((a: Uint8Array) => a),
    fc.nat().chain((i) => fc.integer({ min: 0, max: 7 }).map((bit) => (a: Uint8Array) => (a.length === 0 ? a : a.map((x, j) => (j === i % a.length ? x ^ (1 << bit) : x))))),
    fc.constant((a: Uint8Array) => a.subarray(0, -1)),
    fc.integer({ min: 0, max: 255 }).map((x) => (a: Uint8Array) => Uint8Array.from([...a, x])),
    fc.uint8Array({ maxLength: 256 }).map((b) => () => b),
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 256 }), variant, fc.string({ minLength: 1 }), (a, change, secret) => {
      const body = Buffer.from(a);
      const header = signatureHeader([secret], TIMESTAMP, body);
      const ok = verifySignature({ header, timestamp: TIMESTAMP, body, secret, now: NOW });
      const other = Buffer.from(change(a));
      const otherOk = verifySignature({ header, timestamp: TIMESTAMP, body: other, secret, now: NOW });
      return ok && otherOk === other.equals(body);
    }),
    { numRuns: 300 },
  );
  t.pass();
});
