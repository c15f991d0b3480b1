// Client ID metadata documents fetched over real HTTPS with the production code path: the client's
// certificate is trusted only through NODE_EXTRA_CA_CERTS in a child process (as for webhooks), a
// redirect is never followed, and an untrusted certificate is a failure.
import test from 'ava';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestPki, startReceiver, type ProgrammedResponse, type TestPki, type Receiver } from '../helpers/https-receiver.ts';

const run = promisify(execFile);
const FIXTURE = fileURLToPath(new URL('./fixtures/fetch-metadata-once.ts', import.meta.url));

let pki: TestPki;
let trusted: Receiver;
let rogue: Receiver;
const doc: ProgrammedResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: '' };
const rogueDoc: ProgrammedResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: '' };

test.before(async () => {
  pki = await createTestPki();
  trusted = await startReceiver({ ...pki.trusted, responses: [doc] });
  rogue = await startReceiver({ ...pki.untrusted, responses: [rogueDoc] });
  // The receivers answer with these objects, filled in once their ports are known.
  doc.body = JSON.stringify({ client_id: `${trusted.origin}/client.json`, client_name: 'Local HTTPS client', redirect_uris: ['http://127.0.0.1/cb'] });
  rogueDoc.body = JSON.stringify({ client_id: `${rogue.origin}/client.json`, redirect_uris: ['http://127.0.0.1/cb'] });
});
test.after.always(async () => {
  await trusted?.close();
  await rogue?.close();
  await pki?.cleanup();
});

async function fetchInChild(clientId: string) {
  const env = { ...process.env, NODE_EXTRA_CA_CERTS: pki.caPath };
  const { stdout } = await run(process.execPath, [FIXTURE, JSON.stringify({ clientId, allowLocal: true })], { env, timeout: 30_000 });
  return JSON.parse(stdout);
}

test('a document on a trusted local HTTPS server is fetched and validated', async (t) => {
  const [ok, untrusted] = await Promise.all([fetchInChild(`${trusted.origin}/client.json`), fetchInChild(`${rogue.origin}/client.json`)]);
  t.true(ok.ok, JSON.stringify(ok));
  t.is(ok.metadata.clientName, 'Local HTTPS client');
  t.deepEqual(ok.metadata.redirectUris, ['http://127.0.0.1/cb']);
  t.is(trusted.requests[0].method, 'GET');
  t.is(trusted.requests[0].headers.accept, 'application/json');
  t.false(untrusted.ok);
  t.regex(untrusted.reason, /could not be fetched/);
});
