// A new password ends the connections its person approved (docs/reference/decisions.md): a reset is how
// an operator locks out whoever learnt the old password, who could have connected an assistant of
// their own. Driven through HTTP: sign in and consent on the real pages, reset through the operator
// API, then the tokens fail on /mcp, /v1 and /oauth/token, and a consent page still open is refused.
import test from 'ava';
import type { TestApp } from '../helpers/app.ts';
import {
  fetchJson, PASSWORD, authorizeUrl, connect, eventsOf, hiddenField, oauthSignIn, pkce, setUpOrg, signInToConsent, startConnectionsApp, startMetadataServer, tokenForm,
  type MetadataServer, type Org,
} from './helpers.ts';
import { Client } from '../helpers/dashboard.ts';

let app: TestApp;
let meta: MetadataServer;
let org: Org;
let otherOrg: Org;

test.before(async () => {
  app = await startConnectionsApp();
  meta = await startMetadataServer();
  org = await setUpOrg(app, 'reset');
  otherOrg = await setUpOrg(app, 'bystander');
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

const toolsList = (token: string) =>
  fetchJson(`${app.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });

test('an operator setting a new password revokes the person\'s connections at once, with connection.revoked', async (t) => {
  const tokens = await connect(app, org, meta.clientId);
  const bystander = await connect(app, otherOrg, meta.clientId);
  // Signed in with the old password, on the consent page, not yet answered.
  const pending = await signInToConsent(app, org, authorizeUrl(app, meta.clientId, pkce()));
  t.is((await toolsList(tokens.access_token)).status, 200);

  const reset = await app.admin(`/admin/people/${org.personId}/password`, { method: 'PUT', body: { password: 'a brand new passphrase' } });
  t.is(reset.status, 200);

  const refused = await toolsList(tokens.access_token);
  t.is(refused.status, 401);
  t.is((await refused.json()).error.code, 'invalid_token');
  t.regex(refused.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token", scope="[^"]+", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"$/);
  const v1 = await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } });
  t.is(v1.body.error.code, 'connection_unauthorized');
  const refresh = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId });
  t.is((await refresh.json()).error, 'invalid_grant');

  const events = (await eventsOf(app, 'connection.revoked')).filter((e) => e.data.connectionId === tokens.connectionId);
  t.is(events.length, 1);
  t.is(events[0].data.reason, 'PASSWORD_RESET');
  const list = await app.admin(`/admin/connections?organizationId=${org.organizationId}`);
  t.is(list.body.connections.find((c: any) => c.id === tokens.connectionId).revokedReason, 'PASSWORD_RESET');

  // The consent page opened with the old password can no longer create a connection.
  const approve = await pending.browser.post(`${app.url}/oauth/consent`, {
    request: hiddenField(pending.consentHtml, 'request'),
    csrf: hiddenField(pending.consentHtml, 'csrf'),
    agent: org.agents.buyer.id,
    decision: 'approve',
  });
  t.is(approve.status, 400);
  t.regex(await approve.text(), /This connection request has expired/);

  // Another person's connection is untouched, and the person can connect again with the new password.
  t.is((await toolsList(bystander.access_token)).status, 200);
  t.is((await app.admin(`/admin/people/${org.personId}/password`, { method: 'PUT', body: { password: PASSWORD } })).status, 200);
  const again = await connect(app, org, meta.clientId);
  t.is((await toolsList(again.access_token)).status, 200);
});

test('taking a person\'s password away (one who left) ends their sessions and connections, and signing in, until one is set again', async (t) => {
  const gone = await setUpOrg(app, 'leaver');
  const tokens = await connect(app, gone, meta.clientId);
  const dashboard = new Client(app.url);
  t.is((await dashboard.signIn(gone.email)).status, 303);
  t.is((await dashboard.get('/dashboard')).status, 200);

  const removed = await app.admin(`/admin/people/${gone.personId}/password`, { method: 'DELETE' });
  t.is(removed.status, 200, removed.text);
  t.like(removed.body.person, { id: gone.personId, passwordSet: false });

  t.is((await dashboard.get('/dashboard')).status, 303, 'the open session ended');
  t.is((await new Client(app.url).signIn(gone.email)).status, 401, 'the old password signs nobody in');
  t.is((await oauthSignIn(app, meta.clientId, gone.email, PASSWORD)).status, 401);
  const v1 = await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } });
  t.is(v1.body.error.code, 'connection_unauthorized');
  t.true((await eventsOf(app, 'connection.revoked')).some((e) => e.data.connectionId === tokens.connectionId));

  const unknown = await app.admin('/admin/people/00000000-0000-4000-8000-000000000000/password', { method: 'DELETE' });
  t.is(unknown.status, 404);
  t.is((await app.admin(`/admin/people/${gone.personId}/password`, { method: 'PUT', body: { password: PASSWORD } })).status, 200);
  t.is((await new Client(app.url).signIn(gone.email)).status, 303);
});

test('a password is 12 to 1,024 characters (docs/operate/cli.md); outside that it is refused at its path and nothing changes', async (t) => {
  const person = await setUpOrg(app, 'lengths');
  const path = `/admin/people/${person.personId}/password`;
  for (const [password, code] of [['x'.repeat(11), 'TOO_SHORT'], ['x'.repeat(1025), 'TOO_LONG']] as const) {
    const res = await app.admin(path, { method: 'PUT', body: { password } });
    t.is(res.status, 400, code);
    t.deepEqual(res.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['password', code]]);
  }
  t.is((await new Client(app.url).signIn(person.email)).status, 303, 'the password set before still signs in');
  t.is((await app.admin(path, { method: 'PUT', body: { password: 'x'.repeat(1024) } })).status, 200);
  t.is((await new Client(app.url).signIn(person.email, 'x'.repeat(1024))).status, 303);
});
