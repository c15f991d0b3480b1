// The published JWKS is cached at the configuration stamp (src/receipts/keys.ts publicKeys), so that a
// request does not open (decrypt) every signing key. The cache must not outlive a change to the keys made
// by ANOTHER process on the same DATA_DIR: a rotation by `npm run admin -- rotate-signing-key`, a key
// given by DECISION_SIGNING_KEY, and that key retired for the next one, each published by the running
// service at its very next request.
import test from 'ava';
import { execFile } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { promisify } from 'node:util';
import { startService, tempDataDir, type ServiceProcess } from '../helpers/service-process.ts';

const run = promisify(execFile);
const newPem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const kidOfPem = (pem: string) => {
  const { x } = createPublicKey(pem).export({ format: 'jwk' }) as { x: string };
  return createHash('sha256').update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x })).digest('base64url');
};
const kids = async (svc: ServiceProcess): Promise<string[]> => (await svc.request('/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);

test('the JWKS a running service publishes changes at once when another process on its DATA_DIR rotates, gives or retires a key', async (t) => {
  const dataDir = tempDataDir(t);
  const service = await startService(t, dataDir);
  const [first] = await kids(service);
  t.deepEqual(await kids(service), [first], 'read twice: the second from the cache');

  const rotated = await run(process.execPath, ['scripts/admin.ts', 'rotate-signing-key'], { env: { ...process.env, DATA_DIR: dataDir, MONGODB_URI: '' } });
  const listed = await kids(service);
  t.is(listed.length, 2, rotated.stdout);
  t.is(listed[1], first);
  const second = listed[0];

  const pemA = newPem();
  const givenA = await startService(t, dataDir, { RUN_JOBS: '0', DECISION_SIGNING_KEY: pemA });
  t.deepEqual(await kids(service), [kidOfPem(pemA), second, first], 'the key DECISION_SIGNING_KEY gives, first');
  await givenA.stop();

  // Its successor: A is retired (it signs no more) and stays published, after B.
  const pemB = newPem();
  const givenB = await startService(t, dataDir, { RUN_JOBS: '0', DECISION_SIGNING_KEY: pemB });
  t.deepEqual(await kids(service), [kidOfPem(pemB), kidOfPem(pemA), second, first]);
  await givenB.stop();
  await service.stop();
});
