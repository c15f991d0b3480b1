// Who may grant what (docs/operate/dashboard.md#roles, docs/reference/decisions.md): requesting purchases
// through an assistant is making them, which needs the approver role, as on the dashboard. A viewer's
// connection checks and reads; a person no longer an approver no longer requests through theirs.
import test from 'ava';
import type { TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import {
  Browser, PASSWORD, authorizeUrl, connect, hiddenField, pkce, signInToConsent, startConnectionsApp, startMetadataServer, tokenForm, type MetadataServer, type Org,
} from './helpers.ts';
import { connectionsCollection } from '../../src/identity/connections/documents.ts';
import { Client } from '../helpers/dashboard.ts';

let app: TestApp;
let meta: MetadataServer;
let handles = 0;

test.before(async () => {
  app = await startConnectionsApp();
  meta = await startMetadataServer();
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

function manifest(handle: string, roles: string[]) {
  const m = acmeManifest(handle);
  return { ...m, people: [{ ...m.people[0], roles }] };
}

async function orgWith(roles: string[]): Promise<Org> {
  const handle = `roles${++handles}`;
  const org = await applyManifest(app, manifest(handle, roles));
  const personId = (org.result.people as Record<string, { id: string }>).ana.id;
  const res = await app.admin(`/admin/people/${personId}/password`, { method: 'PUT', body: { password: PASSWORD } });
  if (res.status !== 200) throw new Error(`password refused: ${res.status} ${res.text}`);
  return { ...org, personId, email: `ana@${handle}.example` };
}

const purchase = { merchant: 'Paper Co', amountMinor: '1999', reason: 'Printer paper' };

test('a viewer grants checking and reading, never requesting purchases', async (t) => {
  const org = await orgWith(['viewer']);
  const { consentHtml } = await signInToConsent(app, org, authorizeUrl(app, meta.clientId, pkce()));
  t.regex(consentHtml, /id="withheld-scopes"[^]*purchase:request/);
  t.regex(consentHtml, /value="approve"/, 'what a viewer may grant can still be allowed');

  const tokens = await connect(app, org, meta.clientId);
  t.is(tokens.scope, 'purchase:check purchase:read');
  const connection = await connectionsCollection(app.store.db).findOne({ _id: tokens.connectionId });
  t.deepEqual(connection?.scopes, ['purchase:check', 'purchase:read']);

  const submitted = await app.request('/v1/purchase-requests', { key: tokens.access_token, body: purchase });
  t.is(submitted.status, 403);
  t.is(submitted.body.error.code, 'insufficient_scope');
  const checked = await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: purchase });
  t.is(checked.status, 200);
});

test('a viewer asked only to request purchases can only deny', async (t) => {
  const org = await orgWith(['viewer', 'admin']);
  const { browser, consentHtml } = await signInToConsent(app, org, authorizeUrl(app, meta.clientId, pkce(), { scope: 'purchase:request' }));
  t.notRegex(consentHtml, /value="approve"/);
  // The Allow button the page did not offer, posted anyway.
  const res = await (browser as Browser).post(`${app.url}/oauth/consent`, {
    request: hiddenField(consentHtml, 'request'),
    csrf: hiddenField(consentHtml, 'csrf'),
    agent: org.agents.buyer.id,
    decision: 'approve',
  });
  t.is(res.status, 403);
  t.is(res.headers.get('location'), null);
  t.is(await connectionsCollection(app.store.db).countDocuments({ organizationId: org.organizationId }), 0);
});

test('an approver made a viewer no longer requests purchases through their connection, and does again once made approver', async (t) => {
  const org = await orgWith(['approver']);
  const tokens = await connect(app, org, meta.clientId);
  t.is(tokens.scope, 'purchase:check purchase:read purchase:request');
  t.is((await app.request('/v1/purchase-requests', { key: tokens.access_token, body: purchase })).status, 201);

  const handle = org.email.split('@')[1].split('.')[0];
  await applyManifest(app, manifest(handle, ['viewer']));
  const refused = await app.request('/v1/purchase-requests', { key: tokens.access_token, body: purchase });
  t.is(refused.status, 403);
  t.is(refused.body.error.code, 'insufficient_scope');
  t.is((await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: purchase })).status, 200);
  // A refresh meanwhile says what the new access token can do: no longer request purchases.
  const refreshed = await (await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId })).json();
  t.is(refreshed.scope, 'purchase:check purchase:read');

  await applyManifest(app, manifest(handle, ['approver']));
  t.is((await app.request('/v1/purchase-requests', { key: tokens.access_token, body: purchase })).status, 201);
  // And the refresh token kept what was granted, so the next refresh gives it back.
  const again = await (await tokenForm(app, { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token, client_id: meta.clientId })).json();
  t.is(again.scope, 'purchase:check purchase:read purchase:request');
  t.is((await app.request('/v1/purchase-requests', { key: again.access_token, body: purchase })).status, 201);
});

test('a refresh that would leave the access token no scope is refused, and the refresh token still works once its grantor is an approver again', async (t) => {
  const org = await orgWith(['approver']);
  const tokens = await connect(app, org, meta.clientId, { scope: 'purchase:request' });
  const handle = org.email.split('@')[1].split('.')[0];
  await applyManifest(app, manifest(handle, ['viewer']));
  // An empty `scope` is no scope value at all (RFC 6749 3.3), and a token that can do nothing is no grant.
  const refused = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId });
  t.is(refused.status, 400);
  t.is((await refused.json()).error, 'invalid_grant');
  const narrowed = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId, scope: 'purchase:request' });
  t.is((await narrowed.json()).error, 'invalid_scope', 'a scope asked for that cannot be granted now (RFC 6749 5.2)');

  await applyManifest(app, manifest(handle, ['approver']));
  const again = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId });
  t.is(again.status, 200, 'the refused refresh did not use the token up');
  t.is((await again.json()).scope, 'purchase:request');
});

test('the dashboard lists the scopes a connection can use now: requesting purchases is gone while its grantor is no approver', async (t) => {
  const org = await orgWith(['approver', 'admin']);
  await connect(app, org, meta.clientId);
  const handle = org.email.split('@')[1].split('.')[0];
  const client = new Client(app.url);
  t.is((await client.signIn(org.email)).status, 303);
  const scopesShown = async () => /<td class="codes">([^<]*)<\/td>/.exec((await client.get('/dashboard/connections')).text)?.[1];
  t.is(await scopesShown(), 'purchase:check purchase:read purchase:request');
  await applyManifest(app, manifest(handle, ['admin']));
  t.is(await scopesShown(), 'purchase:check purchase:read');
});
