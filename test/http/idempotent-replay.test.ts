// The decision's response is serialised once: the bytes sent with the 201 are the bytes an
// Idempotency-Key record keeps, and a replay answers from them.
import { createHash } from 'node:crypto';
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { purchaseCollections } from '../../src/purchases/documents.ts';
import { canonicalJson } from '../../src/purchases/submit.ts';
import { idempotentRequest } from '../../src/purchases/input.ts';
import { merchantKey } from '../../src/engine/merchant-key.ts';

let app: TestApp;
let acme: AppliedOrg;
test.before(async () => {
  app = await startApp();
  acme = await applyManifest(app);
});
test.after.always(() => app?.close());

const body = { merchant: 'Paper Co', amountMinor: '1200', reason: 'printer paper' };

test('the 201 body is stored as sent, and a replay answers it with replayed: true', async (t) => {
  const headers = { 'idempotency-key': 'replay-once-1' };
  const first = await app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], body, headers });
  t.is(first.status, 201);
  t.is(first.headers.get('content-type'), 'application/json; charset=utf-8');
  t.false(first.body.replayed);

  const records = await purchaseCollections(app.store.db).idempotency.find({ purchaseId: first.body.purchaseRequest.id }).toArray();
  t.is(records.length, 1);
  t.is(records[0].responseJson, first.text);

  const again = await app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], body, headers });
  t.is(again.status, 200);
  t.deepEqual(again.body, { ...first.body, replayed: true });
});

test('a record written before responseJson (the response as an object) still replays', async (t) => {
  const first = await app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], body: { ...body, amountMinor: '1300' } });
  t.is(first.status, 201);
  const apiKeyId = acme.keyIds['buyer-key'];
  // The hash of the normalised request, as submitPurchase computes it (only the response's shape is legacy).
  const purchase = { merchant: body.merchant, merchantKey: merchantKey(body.merchant), merchantDomain: null, amountMinor: 1200n, currency: 'EUR', category: null, reason: body.reason };
  await purchaseCollections(app.store.db).idempotency.insertOne({
    _id: `${apiKeyId}:legacy-1`,
    requestHash: createHash('sha256').update(canonicalJson(idempotentRequest(purchase, undefined))).digest('hex'),
    purchaseId: first.body.purchaseRequest.id,
    response: first.body,
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + 3_600_000),
  });
  const replay = await app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], body, headers: { 'idempotency-key': 'legacy-1' } });
  t.is(replay.status, 200);
  t.deepEqual(replay.body, { ...first.body, replayed: true });
});

test('an Idempotency-Key outside 1..255 printable ASCII characters, or sent twice, is refused and records nothing', async (t) => {
  // Its own merchant: the other tests of this file submit at the same time.
  const mine = { ...body, merchant: 'Key Checks Ltd' };
  const purchases = () => app.store.db.collection('purchases').countDocuments({ merchant: mine.merchant });
  const refusal = [{ path: 'Idempotency-Key', code: 'INVALID_IDEMPOTENCY_KEY' }];
  const issuesOf = (text: string) => JSON.parse(text).error.issues.map(({ path, code }: { path: string; code: string }) => ({ path, code }));
  const send = (key: string | string[]) =>
    rawRequest(app.url, 'POST', '/v1/purchase-requests', { authorization: `Bearer ${acme.keys['buyer-key']}`, 'content-type': 'application/json', 'idempotency-key': key as string }, JSON.stringify(mine));
  for (const key of ['', ' ', 'k'.repeat(256), 'a\tb']) {
    const res = await send(key);
    t.is(res.status, 400, JSON.stringify(key));
    t.deepEqual(issuesOf(res.text), refusal, JSON.stringify(key));
  }
  // Two header lines: Node joins them into "twice-a, twice-b", a key neither line named, so a retry
  // sending one of them would not be recognised as the same purchase.
  const twice = await send(['twice-a', 'twice-b']);
  t.is(twice.status, 400, twice.text);
  t.deepEqual(issuesOf(twice.text), refusal);
  t.regex(JSON.parse(twice.text).error.issues[0].message, /once/);
  t.is(await purchases(), 0);
  // 255 printable characters, spaces and quotes included, are a key.
  t.is((await send(`"${'k'.repeat(250)} x"`)).status, 201);
});
