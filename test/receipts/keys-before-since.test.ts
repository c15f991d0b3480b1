// Signing keys an earlier version stored have no `since` (added when a configured key could become first
// again): the newest of them by createdAt, the one a rotation made, must still be the one that signs and
// is listed first (docs/reference/decisions.md, "Which key signs").
import test from 'ava';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { startApp } from '../helpers/app.ts';
import { testStore } from '../helpers/store.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { sealingKey } from '../../src/receipts/keys.ts';
import { encryptSecret } from '../../src/webhooks/secrets.ts';

const WEBHOOK_ENCRYPTION_KEY = 'ab'.repeat(32);
const thumbprint = (x: string) => createHash('sha256').update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x })).digest('base64url');
const header = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString()) as { kid: string };

/** A key document as the version before `since` wrote it: sealed with the deployment's key. */
function earlierKeyDoc(createdAt: Date) {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  const kid = thumbprint(x);
  const der = (privateKey.export({ format: 'der', type: 'pkcs8' }) as Buffer).toString('base64url');
  return { _id: kid, publicJwk: { kty: 'OKP', crv: 'Ed25519', x }, privateKey: encryptSecret(sealingKey(WEBHOOK_ENCRYPTION_KEY)!, der, kid), createdAt };
}

test('of keys stored before `since` existed, the one a rotation added last signs and is listed first', async (t) => {
  const store = await testStore();
  const first = earlierKeyDoc(new Date('2026-01-01T00:00:00.000Z'));
  // The rotated-to key's id sorts before the first's, so an order by id alone would pick the retired one.
  let rotated = earlierKeyDoc(new Date('2026-06-01T00:00:00.000Z'));
  while (rotated._id > first._id) rotated = earlierKeyDoc(rotated.createdAt);
  // And one with no date at all (no version wrote one): refused as any malformed key, no failure.
  const { createdAt: _, ...undated } = earlierKeyDoc(new Date());
  await store.db.collection('signing_keys').insertMany([first, rotated, { ...undated, privateKey: 'plain.AAAA' }] as never[]);

  const app = await startApp({ store, env: { WEBHOOK_ENCRYPTION_KEY } });
  const org = await applyManifest(app, acmeManifest('keys-before-since'));
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: 'after the upgrade' } });
  t.is(res.status, 201, res.text);
  t.is(header(res.headers.get('decision-receipt')!).kid, rotated._id, 'the key rotated to signs');
  const jwks = (await app.request('/.well-known/jwks.json')).body as { keys: Array<{ kid: string }> };
  t.deepEqual(jwks.keys.map((k) => k.kid), [rotated._id, first._id]);
  await app.close();
  await store.close();
});
