// Who writes signing keys, and how (docs/integrate/receipts.md, docs/operate/auditors.md#rotating-the-signing-key):
// only a process that signs makes one, so a worker started without the web process's DECISION_SIGNING_KEY adds
// none to the JWKS; and a new key and the configuration stamp's bump commit together, so that no process
// signs with a key that the others' JWKS leaves out.
import test from 'ava';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp, type TestApp } from '../helpers/app.ts';
import { asNewProcess, testStore } from '../helpers/store.ts';
import { spawnWatched, startService, tempDataDir } from '../helpers/service-process.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { createSigningKey, sealingKey } from '../../src/receipts/keys.ts';
import type { StoreDb } from '../../src/store/store.ts';

const WEBHOOK_ENCRYPTION_KEY = 'ab'.repeat(32);
const kidOf = (jws: string) => (JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString()) as { kid: string }).kid;
const jwksKids = async (app: { request(path: string): Promise<{ body: any }> }) => ((await app.request('/.well-known/jwks.json')).body.keys as Array<{ kid: string }>).map((k) => k.kid);

test('a worker started without DECISION_SIGNING_KEY makes no signing key: the JWKS lists the configured key alone', async (t) => {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const { x } = createPublicKey(pem).export({ format: 'jwk' }) as { x: string };
  const configuredKid = createHash('sha256').update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x })).digest('base64url');
  const dataDir = tempDataDir(t);
  const web = await startService(t, dataDir, { DECISION_SIGNING_KEY: pem, RUN_JOBS: '0' });
  for (let i = 0; i < 2; i++) {
    const worker = spawnWatched(t, process.execPath, ['src/worker/main.ts'], { DATA_DIR: dataDir, LOG_LEVEL: 'info', DECISION_SIGNING_KEY: '' });
    while (!worker.output().includes('jobs started')) {
      if (worker.child.exitCode !== null) t.fail(worker.output());
      await sleep(50);
    }
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
  t.deepEqual(await jwksKids(web), [configuredKid]);
});

/** The store as a process sees it whose writes to the configuration stamp fail (it dies before that write). */
function failingStampBump(store: ReturnType<typeof asNewProcess>) {
  const collection = ((name: string) => {
    const real = store.db.collection(name);
    if (name !== 'config_stamps') return real;
    return new Proxy(real, { get: (c, prop) => (prop === 'updateOne' ? () => Promise.reject(new Error('process died')) : Reflect.get(c, prop, c)) });
  }) as StoreDb['collection'];
  return asNewProcess(store, collection);
}

test('a signing key made by a process that dies before the stamp is bumped is not stored: a receipt of any process verifies against the JWKS of every other', async (t) => {
  const store = await testStore();
  const app = await startApp({ store, env: { WEBHOOK_ENCRYPTION_KEY } });
  const org: AppliedOrg = await applyManifest(app, acmeManifest('key-writes'));
  const buy = async (on: TestApp, reason: string) => (await on.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason } })).headers.get('decision-receipt')!;
  const first = kidOf(await buy(app, 'before'));
  t.deepEqual(await jwksKids(app), [first]);

  await t.throwsAsync(createSigningKey(failingStampBump(store), sealingKey(WEBHOOK_ENCRYPTION_KEY)), { message: 'process died' });

  const restarted = await startApp({ store: asNewProcess(store), env: { WEBHOOK_ENCRYPTION_KEY } });
  const signedBy = kidOf(await buy(restarted, 'after'));
  t.true((await jwksKids(app)).includes(signedBy), 'the key a process signs with is in the JWKS of the others');
  t.is(await store.db.collection('signing_keys').countDocuments({}), 1);
  await restarted.close();
  await app.close();
  await store.close();
});
