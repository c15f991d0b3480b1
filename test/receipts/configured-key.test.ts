// A signing key the operator gives (DECISION_SIGNING_KEY, docs/operate/auditors.md#rotating-the-signing-key):
// it signs, only its public half is stored, it stays in the JWKS once replaced, and a bad value stops the start.
import test from 'ava';
import { execFile } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startApp, type TestApp } from '../helpers/app.ts';
import { testStore } from '../helpers/store.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { loadConfig, ConfigError } from '../../src/config.ts';

const newPem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const kidOfPem = (pem: string) => {
  const { x } = createPublicKey(pem).export({ format: 'jwk' }) as { x: string };
  return createHash('sha256').update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x })).digest('base64url');
};
const header = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString());

async function verifiesAgainstJwks(app: TestApp, jws: string): Promise<boolean> {
  const { keys } = (await app.request('/.well-known/jwks.json')).body as { keys: Array<{ kid: string; x: string; d?: string }> };
  const jwk = keys.find((k) => k.kid === header(jws).kid);
  if (!jwk || 'd' in jwk) return false;
  const [h, p, s] = jws.split('.');
  return verify(null, Buffer.from(`${h}.${p}`), createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }), Buffer.from(s, 'base64url'));
}

test('the configured key signs; only its public half is stored; a replaced key and the stored one that follows all stay in the JWKS', async (t) => {
  const store = await testStore();
  const pemA = newPem();
  const pemB = newPem();
  const first = await startApp({ store, env: { DECISION_SIGNING_KEY: pemA } });
  const org = await applyManifest(first, acmeManifest('configured-key'));
  const buy = (app: TestApp, reason: string) => app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason } });
  const a = (await buy(first, 'under A')).headers.get('decision-receipt')!;
  t.is(header(a).kid, kidOfPem(pemA));
  t.true(await verifiesAgainstJwks(first, a));
  const stored = await store.db.collection<{ _id: string; privateKey: string }>('signing_keys').findOne({ _id: kidOfPem(pemA) });
  t.is(stored?.privateKey, 'configured', 'the private half given by configuration is never stored');
  const pemBody = pemA.replace(/-----[^-]+-----|\s/g, '');
  t.false(JSON.stringify(await store.db.collection('signing_keys').find({}).toArray()).includes(pemBody.slice(-24)));
  await first.close();

  // The next key, written on one line with \n as a secret manager might hold it.
  const second = await startApp({ store, env: { DECISION_SIGNING_KEY: pemB.trim().replace(/\n/g, '\\n') } });
  const b = (await buy(second, 'under B')).headers.get('decision-receipt')!;
  t.is(header(b).kid, kidOfPem(pemB));
  t.true(await verifiesAgainstJwks(second, b));
  t.true(await verifiesAgainstJwks(second, a), 'a receipt of the replaced key still verifies');
  await second.close();

  // No key configured any more: one is generated and sealed in the store, and signs.
  const third = await startApp({ store });
  const c = (await buy(third, 'stored key')).headers.get('decision-receipt')!;
  t.false([kidOfPem(pemA), kidOfPem(pemB)].includes(header(c).kid));
  for (const jws of [a, b, c]) t.true(await verifiesAgainstJwks(third, jws));
  const kids = ((await third.request('/.well-known/jwks.json')).body.keys as Array<{ kid: string }>).map((k) => k.kid);
  t.is(kids.length, 3);
  await third.close();
  await store.close();
});

test('a value that is not an Ed25519 private key stops the start, naming DECISION_SIGNING_KEY', (t) => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const publicOnly = generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString();
  for (const bad of ['not a key', rsa, publicOnly]) {
    const err = t.throws(() => loadConfig({ DECISION_SIGNING_KEY: bad }), { instanceOf: ConfigError });
    t.regex(err!.message, /DECISION_SIGNING_KEY/);
  }
});

test('rotate-signing-key refuses while DECISION_SIGNING_KEY gives the key, and says how to rotate it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'configured-key-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const refused = await promisify(execFile)(process.execPath, ['scripts/admin.ts', 'rotate-signing-key'], {
    env: { ...process.env, DATA_DIR: join(dir, 'data'), MONGODB_URI: '', DECISION_SIGNING_KEY: newPem() },
  }).then(
    () => null,
    (err: { code: number; stderr: string }) => err,
  );
  t.is(refused?.code, 1);
  t.regex(refused!.stderr, /DECISION_SIGNING_KEY/);
});
