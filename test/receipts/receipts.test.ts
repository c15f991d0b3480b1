// Decision receipts through the HTTP surface (docs/integrate/receipts.md): the Decision-Receipt header
// verifies with node:crypto against the JWKS fetched over HTTP, a replay sends the same receipt, an
// answered approval adds a second one, the chain links them, and another tenant's purchase is a 404.
import test from 'ava';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { quorumManifest } from '../helpers/quorum.ts';
import { Client, dashboardPurchase, setUpDashboardOrg } from '../helpers/dashboard.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

const part = (jws: string, i: number) => JSON.parse(Buffer.from(jws.split('.')[i], 'base64url').toString('utf8'));

/** Verifies a compact JWS with nothing but node:crypto and the JWKS as served; returns the payload. */
async function verifiedPayload(jws: string) {
  const jwks: any = await fetch(`${app.url}/.well-known/jwks.json`).then((r) => r.json());
  const header = part(jws, 0);
  const jwk = jwks.keys.find((k: { kid: string }) => k.kid === header.kid);
  if (!jwk) throw new Error(`kid ${header.kid} is not in the JWKS`);
  const [h, p, s] = jws.split('.');
  const ok = verify(null, Buffer.from(`${h}.${p}`), createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(s, 'base64url'));
  if (!ok) throw new Error('the signature does not verify');
  return { header, payload: part(jws, 1) };
}

const hashOf = (jws: string) => createHash('sha256').update(jws).digest('base64url');

test('GET /.well-known/jwks.json: Ed25519 public keys only, no credential needed', async (t) => {
  const res = await fetch(`${app.url}/.well-known/jwks.json`);
  t.is(res.status, 200);
  const jwks: any = await res.json();
  t.true(jwks.keys.length >= 1);
  for (const key of jwks.keys) {
    t.deepEqual(Object.keys(key).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x']);
    t.like(key, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    t.is(Buffer.from(key.x, 'base64url').length, 32);
  }
});

test('a submission carries a receipt that verifies against the JWKS and says what was decided; a replay sends the same one', async (t) => {
  const org = await applyManifest(app, acmeManifest('receipt-submit'));
  const body = JSON.stringify({ merchant: 'Paper Co', amountMinor: '1999', reason: 'paper', metadata: { order: 7 } });
  const send = () =>
    app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], raw: body, headers: { 'content-type': 'application/json', 'idempotency-key': 'receipt-1' } });
  const created = await send();
  t.is(created.status, 201);
  const jws = created.headers.get('decision-receipt')!;
  t.truthy(jws);
  const { header, payload } = await verifiedPayload(jws);
  t.deepEqual(header, { alg: 'EdDSA', kid: header.kid, typ: 'decision-receipt+jwt' });
  t.like(payload, {
    iss: app.deps.config.baseUrl,
    seq: 1,
    prev: null,
    organizationId: org.organizationId,
    agentId: org.agents.buyer.id,
    purchaseRequestId: created.body.purchaseRequest.id,
    decisionId: created.body.decision.id,
    kind: 'INITIAL',
    outcome: 'APPROVED',
    amountMinor: '1999',
    currency: 'EUR',
    merchant: 'Paper Co',
    evaluatedAt: created.body.decision.evaluatedAt,
  });
  t.deepEqual(payload.reasonCodes, created.body.decision.reasonCodes);
  t.deepEqual(payload.policyVersionIds, created.body.policyVersions.map((p: { policyVersionId: string }) => p.policyVersionId));
  t.is(payload.requestSha256, createHash('sha256').update(body).digest('hex'), 'the SHA-256 of the body as sent, and stored');

  const replayed = await send();
  t.is(replayed.status, 200);
  t.true(replayed.body.replayed);
  t.is(replayed.headers.get('decision-receipt'), jws);

  const listed = await app.request(`/v1/purchase-requests/${created.body.purchaseRequest.id}/receipts`, { key: org.keys['buyer-key'] });
  t.is(listed.status, 200);
  t.deepEqual(listed.body, { receipts: [{ seq: 1, receipt: jws }] });
});

test('an answered approval adds a second receipt, chained to the first; the organisation\'s receipts count on without a gap', async (t) => {
  const org = await applyManifest(app, acmeManifest('receipt-answer'));
  const held = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Desks Ltd', amountMinor: '30000', reason: 'a desk' } });
  t.is(held.body.decision.outcome, 'REQUIRES_APPROVAL');
  const first = held.headers.get('decision-receipt')!;
  t.like((await verifiedPayload(first)).payload, { seq: 1, outcome: 'REQUIRES_APPROVAL', kind: 'INITIAL' });
  const between = await app.request('/v1/purchase-requests', { key: org.keys['travel-key'], body: { merchant: 'Rail', amountMinor: '100', currency: 'USD', reason: 'ticket' } });
  t.is(between.status, 201);

  const id = held.body.purchaseRequest.id;
  const answered = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'ana', comment: null } });
  t.is(answered.status, 200, answered.text);
  const listed = await app.request(`/v1/purchase-requests/${id}/receipts`, { key: org.keys['buyer-key'] });
  t.is(listed.status, 200);
  t.is(listed.body.receipts.length, 2);
  t.is(listed.body.receipts[0].receipt, first);
  const second = listed.body.receipts[1];
  t.is(second.seq, 3, 'the organisation\'s third decision: the travel agent\'s came between');
  const { payload } = await verifiedPayload(second.receipt);
  t.like(payload, { seq: 3, kind: 'APPROVAL_REEVALUATION', outcome: 'APPROVED', purchaseRequestId: id, decisionId: answered.body.purchase.decision.id });
  t.is(payload.prev, hashOf(between.headers.get('decision-receipt')!), 'prev is the hash of the organisation\'s receipt before it');
  t.is((await verifiedPayload(between.headers.get('decision-receipt')!)).payload.prev, hashOf(first));
});

test('receipts are read by whoever may read the purchase: another agent, another organisation and an unknown id are the same 404', async (t) => {
  const org = await applyManifest(app, acmeManifest('receipt-own'));
  const other = await applyManifest(app, acmeManifest('receipt-other'));
  const created = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: 'paper' } });
  const path = `/v1/purchase-requests/${created.body.purchaseRequest.id}/receipts`;
  t.is((await app.request(path, { key: org.keys['buyer-key'] })).status, 200);
  const unknown = await app.request('/v1/purchase-requests/0190aaaa-0000-7000-8000-000000000000/receipts', { key: other.keys['buyer-key'] });
  t.is(unknown.status, 404);
  for (const key of [org.keys['travel-key'], other.keys['buyer-key']]) {
    const refused = await app.request(path, { key });
    t.is(refused.status, 404);
    t.is(refused.text, unknown.text, 'the same answer as for a purchase that does not exist');
  }
  t.is((await app.request('/v1/purchase-requests/not-a-uuid/receipts', { key: org.keys['buyer-key'] })).status, 404);
  const orgScoped = await app.request(path, { key: org.keys['admin-key'] });
  t.is(orgScoped.status, 403, 'an organisation-scoped key reads no purchase');
  t.is(orgScoped.body.error.code, 'api_key_not_bound_to_agent');
  const query = await app.request(`${path}?limit=1`, { key: org.keys['buyer-key'] });
  t.is(query.status, 400, 'the list takes no parameter');
  t.is(query.body.error.code, 'invalid_request');
  t.is((await app.request(path)).status, 401);
});

test('a rejected decision has its receipt too; the chain is per organisation', async (t) => {
  const a = await applyManifest(app, acmeManifest('receipt-per-org-a'));
  const b = await applyManifest(app, acmeManifest('receipt-per-org-b'));
  const refused = await app.request('/v1/purchase-requests', { key: a.keys['buyer-key'], body: { merchant: 'Shady Goods Ltd', amountMinor: '100', reason: 'x' } });
  t.is(refused.body.decision.outcome, 'REJECTED');
  t.like((await verifiedPayload(refused.headers.get('decision-receipt')!)).payload, { seq: 1, outcome: 'REJECTED', organizationId: a.organizationId });
  const other = await app.request('/v1/purchase-requests', { key: b.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: 'x' } });
  t.like((await verifiedPayload(other.headers.get('decision-receipt')!)).payload, { seq: 1, prev: null, organizationId: b.organizationId });
});

test('concurrent decisions of two agents form one chain on this store: seq 1..40, each prev the hash of the receipt before', async (t) => {
  const org = await applyManifest(app, acmeManifest('receipt-concurrent'));
  const results = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      app.request('/v1/purchase-requests', {
        key: org.keys[i % 2 === 0 ? 'buyer-key' : 'travel-key'],
        body: i % 2 === 0 ? { merchant: 'Paper Co', amountMinor: '100', reason: `p${i}` } : { merchant: 'Rail', amountMinor: '100', currency: 'USD', reason: `t${i}` },
      }),
    ),
  );
  t.true(results.every((r) => r.status === 201));
  const bySeq = new Map<number, string>();
  for (const r of results) {
    const jws = r.headers.get('decision-receipt')!;
    bySeq.set((await verifiedPayload(jws)).payload.seq, jws);
  }
  t.deepEqual([...bySeq.keys()].sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i + 1));
  for (let seq = 2; seq <= 40; seq++) t.is(part(bySeq.get(seq)!, 1).prev, hashOf(bySeq.get(seq - 1)!), `seq ${seq}`);
});

test('two instances on one store take turns deciding for one organisation: each signs on from the other\'s head, without a gap', async (t) => {
  // Each instance's organisation actor remembers the head its own last decision left; the other's
  // decisions make that memory stale, so every turn starts with a conflict the command retries.
  const second = await startApp({ store: app.store });
  t.teardown(() => second.close());
  const org = await applyManifest(app, acmeManifest('receipt-two-instances'));
  const receipts: string[] = [];
  for (let i = 0; i < 12; i++) {
    const instance = i % 3 === 0 ? second : app;
    const r = await instance.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: `turn ${i}` } });
    t.is(r.status, 201, r.text);
    receipts.push(r.headers.get('decision-receipt')!);
  }
  const seqs = await Promise.all(receipts.map(async (jws) => (await verifiedPayload(jws)).payload.seq));
  t.deepEqual(seqs, Array.from({ length: 12 }, (_, i) => i + 1));
  for (let i = 1; i < receipts.length; i++) t.is(part(receipts[i], 1).prev, hashOf(receipts[i - 1]), `seq ${i + 1}`);
});

test('an instance whose remembered chain head is stale at the same seq (the chain was set back and rebuilt meanwhile) still signs on from the stored head', async (t) => {
  // Say the store was restored to before this organisation's receipts while both instances ran: this
  // instance's actor remembers seq 1 of the old chain, and the other instance has made a new seq 1.
  const second = await startApp({ store: app.store });
  t.teardown(() => second.close());
  const org = await applyManifest(app, acmeManifest('receipt-stale-head'));
  const buy = (instance: TestApp, reason: string) =>
    instance.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason } });
  t.is((await buy(app, 'before the restore')).status, 201);
  await app.store.db.collection<{ _id: string; organizationId: string }>('receipts').deleteMany({ organizationId: org.organizationId });
  await app.store.db.collection<{ _id: string }>('receipt_chains').deleteOne({ _id: org.organizationId });
  const rebuilt = await buy(second, 'after the restore');
  const first = rebuilt.headers.get('decision-receipt')!;
  t.like((await verifiedPayload(first)).payload, { seq: 1, prev: null });
  const next = await buy(app, 'next');
  t.is(next.status, 201, next.text);
  t.like((await verifiedPayload(next.headers.get('decision-receipt')!)).payload, { seq: 2, prev: hashOf(first) }, 'prev is the hash of the stored seq 1, not of the one remembered');
});

// The operator API's answer (POST /admin/purchase-requests/{id}/answer): the answer that decides sends
// the receipt of the APPROVAL_REEVALUATION decision it made; one recorded below the quorum sends none.
const answerAs = (id: string, person: string, answer: 'APPROVE' | 'REJECT') =>
  app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer, person, comment: null } });

async function heldPurchase(org: AppliedOrg, key: string) {
  const held = await app.request('/v1/purchase-requests', { key: org.keys[key], body: { merchant: 'Paper Co', amountMinor: '30000', reason: 'a big order' } });
  if (held.status !== 201 || held.body.decision.outcome !== 'REQUIRES_APPROVAL') throw new Error(held.text);
  return { id: held.body.purchaseRequest.id as string, receipt: held.headers.get('decision-receipt')! };
}

/** The receipt an answer sent, checked against the decision the purchase now has and the receipts listed for it. */
async function answerReceipt(t: import('ava').ExecutionContext, org: AppliedOrg, key: string, id: string, answered: { headers: Headers }, before: string) {
  const jws = answered.headers.get('decision-receipt');
  if (!jws) throw new Error('the answer that decided sent no Decision-Receipt');
  const { header, payload } = await verifiedPayload(jws);
  t.is(header.typ, 'decision-receipt+jwt');
  const read = await app.request(`/v1/purchase-requests/${id}`, { key: org.keys[key] });
  const previous = part(before, 1);
  t.like(payload, {
    kind: 'APPROVAL_REEVALUATION',
    purchaseRequestId: id,
    organizationId: org.organizationId,
    decisionId: read.body.purchase.decision.id,
    seq: previous.seq + 1,
    prev: hashOf(before),
  });
  t.not(payload.decisionId, previous.decisionId, 'a new decision, not the one that asked');
  const listed = await app.request(`/v1/purchase-requests/${id}/receipts`, { key: org.keys[key] });
  t.is(listed.body.receipts.at(-1).receipt, jws, 'the same receipt as the last one listed for the purchase');
  return payload;
}

test('an answer that decides sends its decision\'s receipt in Decision-Receipt: it verifies, names the new decision and is the last one listed', async (t) => {
  const org = await applyManifest(app, quorumManifest('receipt-answer-header'));
  const held = await heldPurchase(org, 'solo-key');
  const answered = await answerAs(held.id, 'ana', 'APPROVE');
  t.is(answered.status, 200, answered.text);
  t.is(answered.body.purchase.status, 'APPROVED');
  t.deepEqual(Object.keys(answered.body), ['purchase'], 'the receipt is a header, the body as before');
  const payload = await answerReceipt(t, org, 'solo-key', held.id, answered, held.receipt);
  t.like(payload, { outcome: 'APPROVED', decisionId: answered.body.purchase.decision.id });

  const again = await answerAs(held.id, 'bob', 'APPROVE');
  t.is(again.status, 409);
  t.is(again.headers.get('decision-receipt'), null, 'a refused answer decided nothing');
});

test('with approvalsRequired 2 the first approval is only recorded and sends no Decision-Receipt; the second decides and sends it', async (t) => {
  const org = await applyManifest(app, quorumManifest('receipt-answer-quorum'));
  const held = await heldPurchase(org, 'buyer-key');
  const first = await answerAs(held.id, 'ana', 'APPROVE');
  t.is(first.status, 200, first.text);
  t.is(first.body.purchase.status, 'PENDING_APPROVAL');
  t.is(first.headers.get('decision-receipt'), null);
  const listed = await app.request(`/v1/purchase-requests/${held.id}/receipts`, { key: org.keys['buyer-key'] });
  t.deepEqual(listed.body.receipts, [{ seq: 1, receipt: held.receipt }], 'no decision, no receipt');

  const second = await answerAs(held.id, 'bob', 'APPROVE');
  t.is(second.status, 200, second.text);
  t.is(second.body.purchase.status, 'APPROVED');
  t.like(await answerReceipt(t, org, 'buyer-key', held.id, second, held.receipt), { seq: 2, outcome: 'APPROVED' });
});

test('a rejection that decides sends its receipt too, even as the first answer of a two-person rule', async (t) => {
  const org = await applyManifest(app, quorumManifest('receipt-answer-reject'));
  const held = await heldPurchase(org, 'buyer-key');
  const rejected = await answerAs(held.id, 'ana', 'REJECT');
  t.is(rejected.status, 200, rejected.text);
  t.is(rejected.body.purchase.status, 'REJECTED');
  t.like(await answerReceipt(t, org, 'buyer-key', held.id, rejected, held.receipt), { seq: 2, outcome: 'REJECTED' });

  const solo = await heldPurchase(org, 'solo-key');
  const soloRejected = await answerAs(solo.id, 'cyd', 'REJECT');
  t.is(soloRejected.status, 200, soloRejected.text);
  t.like(await answerReceipt(t, org, 'solo-key', solo.id, soloRejected, solo.receipt), { seq: 4, outcome: 'REJECTED' });
});

test('a receipt too long for a response header (an agent under hundreds of policies) is not sent as one: the 201 stays readable, and the receipt is listed', async (t) => {
  // Each policy version the decision considered adds its id to the receipt; HTTP clients and proxies
  // refuse a response whose headers pass 8 to 16 KiB (Node's fetch at 16 KiB), which would lose the
  // answer to a purchase already recorded. (A purchase held for approval, then rejected: neither
  // decision approves, so neither fences the 321 policies.)
  const manifest = acmeManifest('receipt-many-policies');
  for (let i = 0; i < 320; i++) {
    manifest.policies.push({
      handle: `cap-${i}`,
      name: `Cap ${i}`,
      description: null,
      status: 'ACTIVE',
      scope: 'ORGANIZATION',
      currencies: ['EUR'],
      activate: true,
      rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '90000' }],
      merchants: [],
    });
  }
  const org = await applyManifest(app, manifest);
  const send = () =>
    app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Desks Ltd', amountMinor: '30000', reason: 'a desk' }, headers: { 'idempotency-key': 'many-policies' } });
  const created = await send();
  t.is(created.status, 201);
  t.is(created.body.decision.outcome, 'REQUIRES_APPROVAL');
  t.is(created.body.policyVersions.length, 321);
  t.is(created.headers.get('decision-receipt'), null);
  const id = created.body.purchaseRequest.id;
  const listed = await app.request(`/v1/purchase-requests/${id}/receipts`, { key: org.keys['buyer-key'] });
  t.is(listed.body.receipts.length, 1);
  const { receipt } = listed.body.receipts[0];
  t.true(receipt.length > 8192);
  const { payload } = await verifiedPayload(receipt);
  t.like(payload, { seq: 1, decisionId: created.body.decision.id });
  t.is(payload.policyVersionIds.length, 321);
  const replayed = await send();
  t.is(replayed.status, 200);
  t.is(replayed.headers.get('decision-receipt'), null);

  const answered = await answerAs(id, 'ana', 'REJECT');
  t.is(answered.status, 200, 'the operator API\'s answer stays readable too');
  t.is(answered.headers.get('decision-receipt'), null);
  const again = await app.request(`/v1/purchase-requests/${id}/receipts`, { key: org.keys['buyer-key'] });
  t.like((await verifiedPayload(again.body.receipts[1].receipt)).payload, { seq: 2, kind: 'APPROVAL_REEVALUATION', outcome: 'REJECTED', decisionId: answered.body.purchase.decision.id });
});

test('a purchase made on the dashboard has its receipt, listed for the agent\'s key; requestSha256 is the hash of the JSON receipts.md says the form makes', async (t) => {
  const org = await setUpDashboardOrg(app, 'receipt-dashboard', [{ handle: 'ana', name: 'Ana', email: 'ana@receipt-dashboard.example', roles: ['approver'] }]);
  const client = new Client(app.url);
  await client.signIn('ana@receipt-dashboard.example');
  const id = await dashboardPurchase(client, org.agents.buyer.id, { merchant: ' Paper  Co ', amount: '12.5', currency: 'eur', reason: 'paper' });
  const listed = await app.request(`/v1/purchase-requests/${id}/receipts`, { key: org.keys['buyer-key'] });
  t.is(listed.status, 200);
  const { payload } = await verifiedPayload(listed.body.receipts[0].receipt);
  t.like(payload, { purchaseRequestId: id, kind: 'INITIAL', amountMinor: '1250', currency: 'EUR', merchant: ' Paper  Co ' });
  const form = JSON.stringify({ merchant: ' Paper  Co ', amountMinor: '1250', reason: 'paper', currency: 'EUR', category: null });
  t.is(payload.requestSha256, createHash('sha256').update(form).digest('hex'));
});
