// The operator CLI's connection commands against the real operator API.
import test from 'ava';
import { Readable } from 'node:stream';
import { ADMIN_TOKEN, type TestApp } from '../helpers/app.ts';
import { AdminCallError, formatConnections, listConnections, readPasswordFromStdin, revokeConnection, setPersonPassword } from '../../scripts/admin-connections.ts';
import { buildCall } from '../../scripts/admin.ts';
import { connect, setUpOrg, startConnectionsApp, startMetadataServer, type MetadataServer, type Org } from './helpers.ts';

let app: TestApp;
let meta: MetadataServer;
let org: Org;

test.before(async () => {
  app = await startConnectionsApp();
  meta = await startMetadataServer('CLI Client');
  org = await setUpOrg(app);
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

test('set a password, list and revoke connections', async (t) => {
  const api = { baseUrl: app.url, adminToken: ADMIN_TOKEN };
  const set = await setPersonPassword(api, org.personId, 'another long password');
  t.true(set.person.passwordSet);
  await setPersonPassword(api, org.personId, 'correct horse battery staple');
  const err = await t.throwsAsync(setPersonPassword(api, org.personId, 'short'), { instanceOf: AdminCallError });
  t.is((err as AdminCallError).status, 400);

  const conn = await connect(app, org, meta.clientId);
  const listed = await listConnections(api, org.organizationId);
  t.regex(formatConnections(listed), new RegExp(`${conn.connectionId}  ACTIVE  CLI Client`));
  await revokeConnection(api, conn.connectionId);
  t.regex(formatConnections(await listConnections(api, org.organizationId)), /REVOKED .* \(OPERATOR\)/);
  t.is(await readPasswordFromStdin(Readable.from(['secret pass', 'word\nignored'])), 'secret password');
});

test('scripts/admin.ts builds calls these routes answer', async (t) => {
  for (const argv of [['connections', org.organizationId], ['revoke-connection', '00000000-0000-4000-8000-000000000000']]) {
    const c = await buildCall(argv);
    const res = await app.admin(c.path, { method: c.method, ...(c.body ? { raw: c.body, headers: { 'content-type': 'application/json' } } : {}) });
    t.true(res.status === 200 || res.status === 404, `${argv[0]}: ${res.status}`);
    t.truthy(res.body.connections ?? res.body.error, argv[0]);
  }
});

test('remove-password builds the call that takes a person\'s password away', async (t) => {
  const gone = await setUpOrg(app, 'cli-leaver');
  const c = await buildCall(['remove-password', gone.personId]);
  const res = await app.admin(c.path, { method: c.method });
  t.is(res.status, 200, res.text);
  t.false(res.body.person.passwordSet);
});
