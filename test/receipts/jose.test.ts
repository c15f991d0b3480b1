// Receipts checked by an independent JOSE implementation (jose), as an integrator would, against the
// JWKS fetched over HTTP (docs/integrate/receipts.md): a submission's and, after a key rotation, an
// answer's receipt verify with the documented header (alg EdDSA, typ, kid the key's RFC 7638
// thumbprint) and iss, and say what the responses said; a verifier behind an HTTP cache gets the rotated key
// when it fetches the JWKS again for its kid. Serial: each rotates the deployment's key.
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

test.serial('jose verifies a submission\'s receipt and, after a rotation, an answer\'s, with the JWKS served over HTTP', async (t) => {
  const org = await applyManifest(app, acmeManifest('receipt-jose'));
  const held = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Desks Ltd', amountMinor: '30000', reason: 'a desk' } });
  t.is(held.status, 201, held.text);
  const rotated = await createSigningKey(app.deps.store, sealingKey(app.deps.config.webhookEncryptionKey));
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

/**
 * A verifier's HTTP cache, as RFC 9111 lets one keep a response: reused while fresh (max-age), unless
 * `no-cache` or `no-store` say to ask the origin each time.
 */
function httpCache() {
  const kept = new Map<string, { body: string; freshUntil: number }>();
  return async (url: string, now: number): Promise<string> => {
    const hit = kept.get(url);
    if (hit && now < hit.freshUntil) return hit.body;
    const res = await fetch(url);
    const body = await res.text();
    const control = res.headers.get('cache-control') ?? '';
    const maxAge = /\bmax-age=(\d+)/.exec(control);
    if (!/\bno-(cache|store)\b/.test(control) && maxAge) kept.set(url, { body, freshUntil: now + Number(maxAge[1]) * 1000 });
    return body;
  };
}

test.serial('a receipt signed just after a rotation verifies with the JWKS fetched again through an HTTP cache, as receipts.md says to', async (t) => {
  const org = await applyManifest(app, acmeManifest('receipt-jwks-cache'));
  const get = httpCache();
  const jwksUrl = `${app.url}/.well-known/jwks.json`;
  const start = Date.now();
  await get(jwksUrl, start); // the verifier has the JWKS already
  const rotated = await createSigningKey(app.deps.store, sealingKey(app.deps.config.webhookEncryptionKey));
  const made = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: 'paper' } });
  const receipt = made.headers.get('decision-receipt')!;
  t.is(jose.decodeProtectedHeader(receipt).kid, rotated);
  // A kid it does not know: it fetches the JWKS again, a second later.
  const jwks = JSON.parse(await get(jwksUrl, start + 1000)) as jose.JSONWebKeySet;
  const { payload } = await jose.jwtVerify(receipt, jose.createLocalJWKSet(jwks), { algorithms: ['EdDSA'], typ: 'decision-receipt+jwt' });
  t.is(payload.purchaseRequestId, made.body.purchaseRequest.id);
});
