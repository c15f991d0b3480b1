// Keys stored before the encryption key (docs/operate/auditors.md#keys-stored-before-the-encryption-key): on
// MongoDB without WEBHOOK_ENCRYPTION_KEY the signing keys are stored unsealed; once one is set they are
// refused and leave the JWKS, as a planted key would. adopt-signing-keys, run deliberately, publishes the
// named ones again, verify-only, so that their receipts verify; nothing adopts a key by itself.
import test from 'ava';
import { execFile } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { promisify } from 'node:util';
import { startApp, type TestApp } from '../helpers/app.ts';
import { asNewProcess, testStore } from '../helpers/store.ts';
import { startService, tempDataDir, type ServiceProcess } from '../helpers/service-process.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { adoptSigningKeys, sealingKey } from '../../src/receipts/keys.ts';
import { verifyLog } from '../../src/receipts/audit.ts';

const WEBHOOK_ENCRYPTION_KEY = 'ef'.repeat(32);
type Jwks = { keys: Array<{ kid: string; x: string }> };
const kidOf = (jws: string) => (JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString()) as { kid: string }).kid;
const jwksOf = async (app: Pick<TestApp, 'request'> | ServiceProcess) => (await app.request('/.well-known/jwks.json')).body as Jwks;

function verifies(jwks: Jwks, jws: string): boolean {
  const jwk = jwks.keys.find((k) => k.kid === kidOf(jws));
  if (!jwk) return false;
  const [h, p, s] = jws.split('.');
  return verify(null, Buffer.from(`${h}.${p}`), createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }), Buffer.from(s, 'base64url'));
}

test('keys stored unsealed leave the JWKS once an encryption key is set; adopted, they are published again verify-only and their receipts verify', async (t) => {
  const store = await testStore();
  const unsealed = await startApp({ store });
  const org = await applyManifest(unsealed, acmeManifest('adopt-keys'));
  const buy = async (app: TestApp, reason: string) => (await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason } })).headers.get('decision-receipt')!;
  const early = await buy(unsealed, 'unsealed');
  const savedJwks = await jwksOf(unsealed);
  await unsealed.close();

  const warnings: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
  const sealed = await startApp({ store: asNewProcess(store), env: { WEBHOOK_ENCRYPTION_KEY } });
  sealed.deps.log.warn = (msg, fields) => warnings.push({ msg, fields });
  const late = await buy(sealed, 'sealed');
  t.not(kidOf(late), kidOf(early), 'a new, sealed key signs');
  t.false(verifies(await jwksOf(sealed), early), 'the unsealed key left the JWKS');
  t.true(verifies(savedJwks, early), 'a JWKS saved before still verifies it');
  const refusal = warnings.find((w) => w.fields?.kid === kidOf(early));
  t.regex(String(refusal?.fields?.ifOwn), /adopt-signing-keys/, 'the refusal says how to adopt it');

  const seal = sealingKey(WEBHOOK_ENCRYPTION_KEY)!;
  t.deepEqual(await adoptSigningKeys(store, seal, [kidOf(early), 'not-a-key']), ['not-a-key'], 'a kid that is not such a key adopts nothing');
  t.false(verifies(await jwksOf(sealed), early));
  t.deepEqual(await adoptSigningKeys(store, seal, [kidOf(early)]), []);

  t.deepEqual((await jwksOf(sealed)).keys.map((k) => k.kid), [kidOf(late), kidOf(early)], 'published again at once, after the key that signs');
  for (const jws of [early, late]) t.true(verifies(await jwksOf(sealed), jws));
  const doc = await store.db.collection<{ _id: string; privateKey: string }>('signing_keys').findOne({ _id: kidOf(early) });
  t.regex(doc!.privateKey, /^configured\./, 'verify-only: the private half that lay unsealed is erased');
  t.is(kidOf(await buy(sealed, 'after')), kidOf(late), 'the sealed key still signs');
  t.true((await verifyLog(store.db, org.organizationId, { webhookEncryptionKey: WEBHOOK_ENCRYPTION_KEY })).ok, 'verify-log takes the adopted key');
  await sealed.close();
  await store.close();
});

const admin = (env: Record<string, string>, ...args: string[]) =>
  promisify(execFile)(process.execPath, ['scripts/admin.ts', ...args], { env: { ...process.env, MONGODB_URI: '', ...env } }).then(
    ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );

test('adopt-signing-keys lists the keys the encryption key refuses, adopts only those named, and the running service publishes them', async (t) => {
  const dataDir = tempDataDir(t);
  const first = await startService(t, dataDir);
  const applied = await first.admin('/admin/manifests', acmeManifest('adopt-cli'));
  const buyer = applied.body.apiKeys['buyer-key'].key as string;
  const early = (await fetch(`${first.url}/v1/purchase-requests`, { method: 'POST', headers: { authorization: `Bearer ${buyer}`, 'content-type': 'application/json' }, body: JSON.stringify({ merchant: 'Paper Co', amountMinor: '100', reason: 'x' }) })).headers.get('decision-receipt')!;
  await first.stop();

  // Another encryption key than the one the embedded store generated: the earlier key is refused.
  const env = { DATA_DIR: dataDir, WEBHOOK_ENCRYPTION_KEY };
  const tooEarly = await admin(env, 'adopt-signing-keys', kidOf(early));
  t.is(tooEarly.code, 2);
  t.regex(tooEarly.stderr, /start every process/, 'refused before the service made a key sealed with it');
  const second = await startService(t, dataDir, { WEBHOOK_ENCRYPTION_KEY });
  t.false(verifies(await jwksOf(second), early));

  const listed = await admin(env, 'adopt-signing-keys');
  t.is(listed.code, 0);
  t.regex(listed.stdout, new RegExp(`^${kidOf(early)} `, 'm'));
  const unknown = await admin(env, 'adopt-signing-keys', 'no-such-kid');
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /no-such-kid/);
  const adopted = await admin(env, 'adopt-signing-keys', kidOf(early));
  t.is(adopted.code, 0, adopted.stderr);
  t.true(verifies(await jwksOf(second), early), 'the running service publishes it at once');
  t.regex((await admin(env, 'adopt-signing-keys')).stdout, /every stored key is sealed/);
  const log = await admin(env, 'verify-log', applied.body.organization.id);
  t.is(log.code, 0, log.stderr);
});
