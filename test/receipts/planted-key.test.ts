// Whoever can write to the store cannot choose the key receipts are signed with, nor have one published:
// with an encryption key, a signing key it did not seal is refused, logged, neither signs nor is in the
// JWKS (docs/reference/decisions.md, "Where the signing key lives"). And the key the operator returns to
// (DECISION_SIGNING_KEY) is listed first again, the others still verifying (docs/integrate/receipts.md).
import test from 'ava';
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { asNewProcess, testStore } from '../helpers/store.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { bumpConfigStamp } from '../../src/cache/config-cache.ts';

const WEBHOOK_ENCRYPTION_KEY = 'cd'.repeat(32);
const thumbprint = (x: string) => createHash('sha256').update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x })).digest('base64url');
const header = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString()) as { kid: string };
const newPem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const kidOfPem = (pem: string) => thumbprint((createPublicKey(pem).export({ format: 'jwk' }) as { x: string }).x);

function plantedKey() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  return { kid: thumbprint(x), x, der: (privateKey.export({ format: 'der', type: 'pkcs8' }) as Buffer).toString('base64url') };
}

type Jwks = { keys: Array<{ kid: string; x: string }> };
const jwksOf = async (app: TestApp) => (await app.request('/.well-known/jwks.json')).body as Jwks;

async function verifiesAgainstJwks(app: TestApp, jws: string): Promise<boolean> {
  const jwk = (await jwksOf(app)).keys.find((k) => k.kid === header(jws).kid);
  if (!jwk) return false;
  const [h, p, s] = jws.split('.');
  return verify(null, Buffer.from(`${h}.${p}`), createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }), Buffer.from(s, 'base64url'));
}

const buy = async (app: TestApp, org: AppliedOrg, reason: string) => {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason } });
  if (res.status !== 201) throw new Error(res.text);
  return res.headers.get('decision-receipt')!;
};

test('a signing key written into the store unsealed, or as a bare public half, neither signs nor is published, and is logged', async (t) => {
  const store = await testStore();
  const app = await startApp({ store, env: { WEBHOOK_ENCRYPTION_KEY } });
  const warnings: Array<{ msg: string; kid?: unknown }> = [];
  app.deps.log.warn = (msg, fields) => warnings.push({ msg, kid: fields?.kid });
  const org = await applyManifest(app, acmeManifest('planted-key'));
  const ownKid = header(await buy(app, org, 'before')).kid;

  const keys = store.db.collection<{ _id: string; publicJwk: object; privateKey: string; createdAt: Date; since: Date }>('signing_keys');
  const later = new Date(Date.now() + 86_400_000);
  const unsealed = plantedKey();
  const publicOnly = plantedKey();
  const swapped = plantedKey();
  await keys.insertOne({ _id: unsealed.kid, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: unsealed.x }, privateKey: `plain.${unsealed.der}`, createdAt: later, since: later });
  await keys.insertOne({ _id: publicOnly.kid, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: publicOnly.x }, privateKey: 'configured', createdAt: later, since: later });
  // The service's own sealed key under another public half: the JWKS would vouch for the planter's key.
  const own = (await keys.findOne({ _id: ownKid }))!;
  await keys.insertOne({ _id: swapped.kid, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: swapped.x }, privateKey: own.privateKey, createdAt: later, since: later });
  // Any configuration change (a manifest applied) makes the process read the keys again.
  await bumpConfigStamp(store.db);

  const planted = [unsealed.kid, publicOnly.kid, swapped.kid];
  const published = (await jwksOf(app)).keys.map((k) => k.kid);
  t.deepEqual(published, [ownKid]);
  for (const kid of planted) t.true(warnings.some((w) => w.kid === kid && /refused/.test(w.msg)), `${kid} is logged`);

  const after = await buy(app, org, 'after');
  t.is(header(after).kid, ownKid, 'the deployment\'s own key still signs');
  t.true(await verifiesAgainstJwks(app, after));
  await app.close();
  await store.close();
});

test('returning to an earlier DECISION_SIGNING_KEY lists it first again; receipts of every key still verify', async (t) => {
  const store = await testStore();
  const pemA = newPem();
  const pemB = newPem();
  const receipts: string[] = [];
  let org: AppliedOrg | undefined;
  for (const [i, pem] of [pemA, pemB, pemA].entries()) {
    const app = await startApp({ store: asNewProcess(store), env: { DECISION_SIGNING_KEY: pem, WEBHOOK_ENCRYPTION_KEY } });
    org ??= await applyManifest(app, acmeManifest('returned-key'));
    const jws = await buy(app, org, `turn ${i}`);
    t.is(header(jws).kid, kidOfPem(pem));
    receipts.push(jws);
    const kids = (await jwksOf(app)).keys.map((k) => k.kid);
    t.is(kids[0], kidOfPem(pem), `turn ${i}: the key signing now is listed first`);
    for (const earlier of receipts) t.true(await verifiesAgainstJwks(app, earlier));
    await app.close();
  }
  await store.close();
});
