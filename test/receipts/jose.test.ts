// Receipts checked by an independent JOSE implementation (jose), as an integrator would, against the
// JWKS fetched over HTTP (docs/integrate/receipts.md): a submission's and, after a key rotation, an
// answer's receipt verify with the documented header (alg EdDSA, typ, kid the key's RFC 7638
// thumbprint) and iss, and say what the responses said.
import test from 'ava';
import * as jose from 'jose';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { createSigningKey, sealingKey } from '../../src/receipts/keys.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

test('jose verifies a submission\'s receipt and, after a rotation, an answer\'s, with the JWKS served over HTTP', async (t) => {
  const org = await applyManifest(app, acmeManifest('receipt-jose'));
  const held = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Desks Ltd', amountMinor: '30000', reason: 'a desk' } });
  t.is(held.status, 201, held.text);
  const rotated = await createSigningKey(app.deps.store.db, sealingKey(app.deps.config.webhookEncryptionKey));
  const answered = await app.admin(`/admin/purchase-requests/${held.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana', comment: null } });
  t.is(answered.status, 200, answered.text);

  const jwksUrl = new URL(`${app.url}/.well-known/jwks.json`);
  const keys = jose.createRemoteJWKSet(jwksUrl);
  const check = (jws: string) => jose.jwtVerify(jws, keys, { algorithms: ['EdDSA'], typ: 'decision-receipt+jwt', issuer: app.deps.config.baseUrl });
  const first = await check(held.headers.get('decision-receipt')!);
  const second = await check(answered.headers.get('decision-receipt')!);
  t.is(second.protectedHeader.kid, rotated, 'the rotated key signs the answer');
  t.not(first.protectedHeader.kid, rotated, 'the earlier key still verifies the submission');
  const published = ((await (await fetch(jwksUrl)).json()) as { keys: jose.JWK[] }).keys;
  for (const jwk of published) t.is(jwk.kid, await jose.calculateJwkThumbprint(jwk));

  const decision = held.body.decision;
  t.like(first.payload, { seq: 1, prev: null, kind: 'INITIAL', purchaseRequestId: held.body.purchaseRequest.id, decisionId: decision.id, outcome: decision.outcome, evaluatedAt: decision.evaluatedAt, amountMinor: '30000', currency: 'EUR' });
  const after = answered.body.purchase.decision;
  t.like(second.payload, { seq: 2, kind: 'APPROVAL_REEVALUATION', decisionId: after.id, outcome: after.outcome, evaluatedAt: after.evaluatedAt, amountMinor: '30000' });
  t.deepEqual(second.payload.reasonCodes, after.reasonCodes);
});
