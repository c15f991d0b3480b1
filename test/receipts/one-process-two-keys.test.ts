// What a process remembers of the signing keys (src/receipts/keys.ts: the JWKS and the key that signs, cached at the
// configuration stamp; whether a usable key was ensured) depends on the encryption key they are opened with. Two
// services in one process on one store (tests build several) with different WEBHOOK_ENCRYPTION_KEYs must each
// answer as it would alone: its own key signs, and its JWKS lists what it vouches for, never the other's answer.
import test from 'ava';
import { createPublicKey, verify } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { testStore } from '../helpers/store.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';

const header = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString()) as { kid: string };
const kids = async (app: TestApp): Promise<string[]> => (await app.request('/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);

async function verifiesAgainstJwks(app: TestApp, jws: string): Promise<boolean> {
  const jwk = (await app.request('/.well-known/jwks.json')).body.keys.find((k: { kid: string }) => k.kid === header(jws).kid);
  if (!jwk) return false;
  const [h, p, s] = jws.split('.');
  return verify(null, Buffer.from(`${h}.${p}`), createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }), Buffer.from(s, 'base64url'));
}

const buy = async (app: TestApp, org: AppliedOrg, reason: string) => {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason } });
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return res.headers.get('decision-receipt')!;
};

test('two services in one process with different encryption keys: each signs with a key it vouches for and publishes its own JWKS', async (t) => {
  const store = await testStore();
  t.teardown(() => store.close());
  const a = await startApp({ store, env: { WEBHOOK_ENCRYPTION_KEY: 'a1'.repeat(32) } });
  t.teardown(() => a.close());
  const b = await startApp({ store, env: { WEBHOOK_ENCRYPTION_KEY: 'b2'.repeat(32) } });
  t.teardown(() => b.close());
  const org = await applyManifest(a, acmeManifest('two-seals'));

  const byA = await buy(a, org, 'first, by A');
  t.true(await verifiesAgainstJwks(a, byA));
  const byB = await buy(b, org, 'then by B');
  t.not(header(byB).kid, header(byA).kid, 'B cannot open the key A sealed, so it signs with its own');
  t.true(await verifiesAgainstJwks(b, byB));
  t.false((await kids(b)).includes(header(byA).kid), 'B does not vouch for a key it cannot open');

  // Each answer again, after the other's, at the same configuration stamp.
  const againByA = await buy(a, org, 'A again');
  t.is(header(againByA).kid, header(byA).kid);
  t.true(await verifiesAgainstJwks(a, againByA));
  t.false((await kids(a)).includes(header(byB).kid));
  t.deepEqual(await kids(a), [header(byA).kid]);
  t.deepEqual(await kids(b), [header(byB).kid]);
});
