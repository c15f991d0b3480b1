// Dynamic Client Registration (RFC 7591) through the HTTP surface: oauth4webapi registers and then
// runs code + PKCE + resource + iss with the issued client_id; every refusal the rules name; the
// per-address rate limit; expiry of registrations nobody used; the operator API and CLI; and the
// CORS headers a browser-based client needs on every discovery document and OAuth endpoint.
import test from 'ava';
import * as oauth from 'oauth4webapi';
import type { TestApp } from '../helpers/app.ts';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { formatOAuthClients, listOAuthClients, revokeOAuthClient } from '../../scripts/admin-connections.ts';
import { buildCall } from '../../scripts/admin.ts';
import { REGISTRATION_LIMIT } from '../../src/identity/oauth/registration.ts';
import { Browser, clock, connect, fetchJson, hiddenField, setUpOrg, signInToConsent, startConnectionsApp, authorizeUrl, pkce, tokenForm, type Org } from './helpers.ts';

const time = clock();
let app: TestApp;
let org: Org;

test.before(async () => {
  app = await startConnectionsApp({ now: time.now });
  org = await setUpOrg(app);
});
test.after.always(async () => {
  await app?.close();
});

const insecure = { [oauth.allowInsecureRequests]: true };

function register(body: unknown, headers: Record<string, string> = {}) {
  return fetchJson(`${app.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const goodMetadata = { client_name: 'Registered Assistant', redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] };

test('oauth4webapi registers, then code + PKCE + resource + iss with the issued client_id', async (t) => {
  const issuer = new URL(app.url);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  t.is(as.registration_endpoint, `${app.url}/oauth/register`);
  const registered = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(as, { ...goodMetadata, redirect_uris: ['http://127.0.0.1/cb', 'https://app.example/cb'], scope: 'purchase:check purchase:read openid' }, insecure),
  );
  const clientId = registered.client_id;
  t.regex(clientId, new RegExp(`^${app.url}/oauth/clients/[0-9a-f-]{36}$`));
  t.is(registered.client_secret, undefined, 'no secret is ever issued');
  t.is(registered.token_endpoint_auth_method, 'none');
  t.deepEqual(registered.grant_types, ['authorization_code', 'refresh_token']);
  t.is(registered.scope, 'purchase:check purchase:read', 'unknown scopes are not registered');
  t.is(typeof registered.client_id_issued_at, 'number');

  // The client_id is a client ID metadata document address, and serves exactly what was registered.
  const doc = await fetchJson(clientId);
  t.is(doc.status, 200);
  t.is(doc.headers.get('access-control-allow-origin'), '*');
  const served = await doc.json();
  t.is(served.client_id, clientId);
  t.deepEqual(served.redirect_uris, ['http://127.0.0.1/cb', 'https://app.example/cb']);
  t.is(served.client_name, 'Registered Assistant');

  // Code flow with PKCE and a resource indicator; the person signs in and consents on the pages.
  const client: oauth.Client = { client_id: clientId };
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  for (const [k, v] of Object.entries({
    response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:40111/cb', state, resource: `${app.url}/mcp`,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  })) url.searchParams.set(k, v);
  const signIn = await (await new Browser().fetch(url.href)).text();
  t.regex(signIn, /<strong>Registered Assistant<\/strong> <span class="muted">\(unverified name: the application registered itself and chose this name\)<\/span>/);
  const { browser, consentHtml } = await signInToConsent(app, org, url.href);
  t.regex(consentHtml, /Registered Assistant <strong>\(unverified\)<\/strong>/);
  t.regex(consentHtml, /it registered itself with this service, and its name was chosen by whoever registered it/);
  t.regex(consentHtml, /<code>purchase:check<\/code>/);
  t.notRegex(consentHtml, /<code>purchase:request<\/code>/, 'the registered scope is the default');
  const approved = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: org.agents.buyer.id, decision: 'approve' });
  const callback = new URL(approved.headers.get('location')!);
  const params = oauth.validateAuthResponse(as, client, callback, state);
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, 'http://127.0.0.1:40111/cb', verifier, { additionalParameters: { resource: `${app.url}/mcp` }, ...insecure }),
  );
  t.regex(tokens.access_token, /^cmp_oat_/);
  t.is(tokens.scope, 'purchase:check purchase:read');
  const sim = await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } });
  t.is(sim.status, 200);

  // Used once, the registration no longer expires.
  const listed = (await app.admin('/admin/oauth-clients')).body.clients.find((c: { clientId: string }) => c.clientId === clientId);
  t.is(listed.expiresAt, null);
  t.truthy(listed.lastConnectedAt);
});

test('registration refusals: each rule gives a clear RFC 7591 error', async (t) => {
  const cases: Array<[string, unknown, number, string, RegExp]> = [
    ['non-loopback http redirect URI', { ...goodMetadata, redirect_uris: ['http://app.example/cb'] }, 400, 'invalid_redirect_uri', /not a loopback address/],
    ['private-use scheme', { ...goodMetadata, redirect_uris: ['com.example.app:/cb'] }, 400, 'invalid_redirect_uri', /scheme com\.example\.app:/],
    ['fragment', { ...goodMetadata, redirect_uris: ['https://app.example/cb#x'] }, 400, 'invalid_redirect_uri', /fragment/],
    ['no redirect URI', { client_name: 'x' }, 400, 'invalid_redirect_uri', /non-empty array/],
    ['confidential client', { ...goodMetadata, token_endpoint_auth_method: 'client_secret_basic' }, 400, 'invalid_client_metadata', /only public clients/],
    ['private_key_jwt', { ...goodMetadata, token_endpoint_auth_method: 'private_key_jwt' }, 400, 'invalid_client_metadata', /only public clients/],
    ['unknown grant', { ...goodMetadata, grant_types: ['authorization_code', 'client_credentials'] }, 400, 'invalid_client_metadata', /"client_credentials" is not supported/],
    ['implicit response type', { ...goodMetadata, response_types: ['token'] }, 400, 'invalid_client_metadata', /response_types/],
    ['not an object', [goodMetadata], 400, 'invalid_client_metadata', /JSON object/],
    ['not JSON', '{"redirect_uris": [', 400, 'invalid_client_metadata', /not valid JSON/],
    ['oversized body', { ...goodMetadata, client_name: 'x'.repeat(9000) }, 413, 'invalid_client_metadata', /larger than 8192 bytes/],
  ];
  for (const [name, body, status, error, description] of cases) {
    const res = await register(body);
    t.is(res.status, status, name);
    const answer = await res.json();
    t.is(answer.error, error, name);
    t.regex(answer.error_description, description, name);
    t.is(res.headers.get('cache-control'), 'no-store', name);
  }
  const form = await fetchJson(`${app.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'redirect_uris=x' });
  t.is(form.status, 415);
  t.is((await form.json()).error, 'invalid_client_metadata');
  // Omitted: a public client is what gets registered, and the answer says so (RFC 7591 3.2.1).
  const plain = await register({ redirect_uris: ['https://app.example/cb'] });
  t.is(plain.status, 201);
  const body = await plain.json();
  t.is(body.token_endpoint_auth_method, 'none');
  t.is(body.client_name, undefined);
});

test('a redirect URI the URL parser would not read as written is invalid_redirect_uri, and nothing is stored', async (t) => {
  // RFC 7591 3.2.2. The parser (a browser's, and the one that builds the authorization response)
  // drops tabs, newlines and leading or trailing controls and spaces, reads `\` as `/` and
  // percent-decodes the host: each of these would send the browser elsewhere than the string registered.
  // Each request names this URI beside the refused one; the other tests register at the same time.
  const fine = 'https://app.example/not-read-as-written';
  const refused = [
    'https://app.example/cb\u0000', 'http://127.0.0.1/callback\u0000', 'https://app.example/cb\u0001', 'https://app.example/c\tb', 'https://app.example/cb\n',
    'https://app.example/cb\r\nSet-Cookie: a=b', 'https://app.exa\tmple/cb', 'https://app.example/cb\u007f', 'https://app.example/cb\u0085', 'https://app.example/cb\u009b',
    ' https://app.example/cb', 'https://app.example/cb ', 'https://app.example/c b', 'https://app.example/cb\u00a0', 'https://app.example/cb\u2028', 'https://app.example/cb\u3000',
    'https://app.example/cb\u200b', 'https://app.example/cb\u202e', 'https://app.example/cb\ufeff', 'https://app.example/cb\ud800',
    'https://app.example\\@evil.example/cb', 'https://app.example/cb\\x', 'https://app.example%2eevil.example/cb', 'https:app.example%2eevil.example/cb',
  ];
  for (const [i, uri] of refused.entries()) {
    // Its own address each: refusals count towards the per-address limit too.
    const res = await register({ ...goodMetadata, redirect_uris: [fine, uri] }, { 'x-forwarded-for': `198.51.100.${100 + i}` });
    t.is(res.status, 400, JSON.stringify(uri));
    const answer = await res.json();
    t.is(answer.error, 'invalid_redirect_uri', JSON.stringify(uri));
    t.regex(answer.error_description, /control|white space|invisible|backslash|surrogate|percent-encoded host/, JSON.stringify(uri));
  }
  t.is(await app.store.db.collection('oauth_clients').countDocuments({ redirectUris: fine }), 0, 'nothing was registered');
  // One stored before they were refused binds no authorization request.
  const stored = await (await register({ ...goodMetadata, client_name: 'Stored Earlier' }, { 'x-forwarded-for': '198.51.100.99' })).json();
  const earlier = 'http://127.0.0.1/callback\t';
  await app.store.db.collection('oauth_clients').updateOne({ _id: stored.client_id.split('/').pop() }, { $push: { redirectUris: earlier } } as never);
  const res = await fetchJson(authorizeUrl(app, stored.client_id, pkce(), { redirect_uri: earlier }), { redirect: 'manual' });
  t.is(res.status, 400);
  t.is(res.headers.get('location'), null);
  t.regex(await res.text(), /not one that Stored Earlier registered/);
  // Percent-encoding in the path and query, and a host in capitals, are read as written: still accepted.
  for (const [i, uri] of ['https://app.example/c%5Cb?x=%00%20', 'https://APP.example/cb'].entries()) {
    t.is((await register({ ...goodMetadata, redirect_uris: [uri] }, { 'x-forwarded-for': `198.51.100.${200 + i}` })).status, 201, uri);
  }
});

// RFC 9700 4.11.2: anyone may register an https redirect URI, so an authorization request made
// wrong on purpose must not send a browser there from this service's address without a word.
test('an invalid or cancelled authorization request is not redirected at once to a registered https URI: the person sees why and where the link goes', async (t) => {
  const phishing = 'https://phish.example/login';
  const { client_id: clientId } = await (await register({ client_name: 'Spend control', redirect_uris: [phishing, 'http://127.0.0.1/callback'] }, { 'x-forwarded-for': '192.0.2.70' })).json();
  const url = authorizeUrl(app, clientId, pkce(), { redirect_uri: phishing, response_type: 'token', state: 'kept' });
  const res = await fetchJson(url, { redirect: 'manual' });
  t.is(res.status, 400);
  t.is(res.headers.get('location'), null, 'no redirect');
  t.is(res.headers.get('x-frame-options'), 'DENY');
  const html = await res.text();
  t.regex(html, /only response_type=code is supported/);
  const link = /<a href="([^"]+)">Return to phish\.example<\/a>/.exec(html);
  t.truthy(link, html);
  // The link carries the error response the client would have had (RFC 6749 4.1.2.1, RFC 9207).
  const back = new URL(link![1].replaceAll('&amp;', '&'));
  t.is(back.origin + back.pathname, phishing);
  t.is(back.searchParams.get('error'), 'unsupported_response_type');
  t.is(back.searchParams.get('state'), 'kept');
  t.is(back.searchParams.get('iss'), app.url);

  // A loopback redirect URI reaches only the person's own machine: errors go back at once (RFC 8252).
  const loopback = await fetchJson(authorizeUrl(app, clientId, pkce(), { response_type: 'token' }), { redirect: 'manual' });
  t.is(loopback.status, 303);
  t.is(new URL(loopback.headers.get('location')!).searchParams.get('error'), 'unsupported_response_type');

  // Cancelling on the sign-in page, which does not show where it leads, is no shortcut there either.
  const browser = new Browser();
  const signIn = await (await browser.fetch(authorizeUrl(app, clientId, pkce(), { redirect_uri: phishing, state: 'kept' }))).text();
  const cancelled = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(signIn, 'request'), csrf: hiddenField(signIn, 'csrf'), decision: 'deny' });
  t.is(cancelled.status, 200);
  t.is(cancelled.headers.get('location'), null, 'no redirect');
  const cancelledLink = /<a href="([^"]+)">Return to phish\.example<\/a>/.exec(await cancelled.text());
  t.truthy(cancelledLink);
  const denied = new URL(cancelledLink![1].replaceAll('&amp;', '&'));
  t.is(denied.searchParams.get('error'), 'access_denied');
  t.is(denied.searchParams.get('state'), 'kept');
  t.is(denied.searchParams.get('iss'), app.url);
});

test('a burst beyond the per-address limit is 429 with Retry-After; the caller cannot pick its address', async (t) => {
  // Behind one proxy hop the rightmost X-Forwarded-For entry is the caller; what it prepends is ignored.
  const from = (i: number) => ({ 'x-forwarded-for': `10.0.${i}.1, 203.0.113.7` });
  const statuses = [];
  for (let i = 0; i < REGISTRATION_LIMIT; i++) statuses.push((await register(goodMetadata, from(i))).status);
  t.deepEqual(statuses, Array(REGISTRATION_LIMIT).fill(201));
  const refused = await register(goodMetadata, from(99));
  t.is(refused.status, 429);
  t.is((await refused.json()).error, 'too_many_requests');
  const retryAfter = Number(refused.headers.get('retry-after'));
  t.true(retryAfter > 0 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  t.is(refused.headers.get('access-control-allow-origin'), '*');
  t.is((await register(goodMetadata, { 'x-forwarded-for': '198.51.100.9' })).status, 201, 'another address is not affected');
});

test('over IPv6 the per-address limit counts a /64: the addresses of one network share it', async (t) => {
  // One subscriber or host holds at least a /64 (RFC 6177) and may send from any of its 2^64 addresses.
  const from = (i: number) => ({ 'x-forwarded-for': `2001:db8:7:7::${(i + 1).toString(16)}` });
  const statuses = [];
  for (let i = 0; i < REGISTRATION_LIMIT; i++) statuses.push((await register(goodMetadata, from(i))).status);
  t.deepEqual(statuses, Array(REGISTRATION_LIMIT).fill(201));
  t.is((await register(goodMetadata, { 'x-forwarded-for': '2001:db8:7:7:ffff:ffff:ffff:ffff' })).status, 429, 'another address of that /64');
  t.is((await register(goodMetadata, { 'x-forwarded-for': '2001:db8:7:8::1' })).status, 201, 'the next /64 is another network');
});

test.serial('a registration nobody connected with expires after a day; the operator lists and revokes registrations', async (t) => {
  const unused = await (await register({ ...goodMetadata, client_name: 'Never Used' })).json();
  const used = await (await register({ ...goodMetadata, client_name: 'Used Once' })).json();
  const p = pkce();
  const { browser, consentHtml } = await signInToConsent(app, org, authorizeUrl(app, used.client_id, p));
  t.is((await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: org.agents.buyer.id, decision: 'approve' })).status, 303);

  time.advance(25 * 60 * 60_000);
  try {
    t.is((await fetchJson(unused.client_id)).status, 404);
    const page = await new Browser().fetch(authorizeUrl(app, unused.client_id, pkce()));
    t.is(page.status, 400);
    t.regex(await page.text(), /no client is registered under this client_id/);
    t.is((await fetchJson(used.client_id)).status, 200, 'a used registration does not expire');
    t.is((await new Browser().fetch(authorizeUrl(app, used.client_id, pkce()))).status, 200);
  } finally {
    time.advance(-25 * 60 * 60_000);
  }

  const api = { baseUrl: app.url, adminToken: ADMIN_TOKEN };
  const listed = await listOAuthClients(api);
  const usedRow = listed.clients.find((c: { clientId: string }) => c.clientId === used.client_id);
  t.is(usedRow.clientName, 'Used Once');
  t.deepEqual(usedRow.redirectUris, ['http://127.0.0.1/callback']);
  t.regex(formatOAuthClients(listed), /CONNECTED .*Used Once \(unverified\)/);
  t.regex(formatOAuthClients(listed), /UNUSED until .*Never Used \(unverified\)/);
  const revoked = await revokeOAuthClient(api, usedRow.id);
  t.is(revoked.connectionsRevoked, 1);
  t.truthy(revoked.client.revokedAt);
  t.is((await fetchJson(used.client_id)).status, 404);
  const events = await app.store.db.collection<{ type: string; data: Record<string, unknown> }>('events').find({ type: 'connection.revoked' }).toArray();
  t.true(events.some((e) => e.data.clientId === used.client_id && e.data.reason === 'OPERATOR'));
  t.is((await revokeOAuthClient(api, usedRow.id)).connectionsRevoked, 0, 'idempotent');
  t.is((await app.admin('/admin/oauth-clients/00000000-0000-4000-8000-000000000000', { method: 'DELETE' })).status, 404);
  for (const argv of [['oauth-clients'], ['revoke-oauth-client', usedRow.id], ['revoke-oauth-client', used.client_id]]) {
    const c = await buildCall(argv);
    t.is((await app.admin(c.path, { method: c.method })).status, 200, argv[0]);
  }
});

test('a client_id spelled in upper case is stored in its registered form, so revoking the registration revokes the connection', async (t) => {
  const address = { 'x-forwarded-for': '192.0.2.60' };
  const registered = await (await register({ ...goodMetadata, client_name: 'Shouting Assistant' }, address)).json();
  const prefix = `${app.url}/oauth/clients/`;
  const id = registered.client_id.slice(prefix.length);
  const shouted = prefix + id.toUpperCase();
  t.not(shouted, registered.client_id);

  // The whole flow with the other spelling works, and the connection records the registered one.
  const tokens = await connect(app, org, shouted);
  const listed = (await app.admin(`/admin/connections?organizationId=${org.organizationId}`)).body.connections.find((c: { id: string }) => c.id === tokens.connectionId);
  t.is(listed.clientId, registered.client_id);
  const refreshed = await (await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: shouted })).json();
  t.truthy(refreshed.access_token, JSON.stringify(refreshed));
  const other = await (await tokenForm(app, { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token, client_id: registered.client_id })).json();
  t.truthy(other.access_token, 'either spelling names the same client');

  const revoked = await app.admin(`/admin/oauth-clients/${id}`, { method: 'DELETE' });
  t.is(revoked.status, 200);
  t.is(revoked.body.connectionsRevoked, 1);
  const sim = await app.request('/v1/simulations/current-policies', { key: other.access_token, body: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } });
  t.is(sim.status, 403);
  t.is(sim.body.error.code, 'connection_unauthorized');
  t.is((await (await tokenForm(app, { grant_type: 'refresh_token', refresh_token: other.refresh_token, client_id: shouted })).json()).error, 'invalid_grant');
});

test('a connection stored with another spelling of a revoked registration cannot be refreshed', async (t) => {
  // Connections made before client_ids were stored in their registered form can hold any spelling,
  // which the operator's revocation does not find: the refresh refuses them by the registration.
  const registered = await (await register({ ...goodMetadata, client_name: 'Old Spelling' }, { 'x-forwarded-for': '192.0.2.61' })).json();
  const prefix = `${app.url}/oauth/clients/`;
  const id = registered.client_id.slice(prefix.length);
  const shouted = prefix + id.toUpperCase();
  const tokens = await connect(app, org, shouted);
  const db = app.store.db;
  await db.collection<{ _id: string; clientId: string }>('connections').updateOne({ _id: tokens.connectionId }, { $set: { clientId: shouted } });
  await db.collection<{ _id: string; connectionId: string; clientId: string }>('oauth_refresh_tokens').updateMany({ connectionId: tokens.connectionId }, { $set: { clientId: shouted } });

  const revoked = await app.admin(`/admin/oauth-clients/${id}`, { method: 'DELETE' });
  t.is(revoked.status, 200);
  t.is(revoked.body.connectionsRevoked, 0, 'the query finds the registered spelling only');
  const refused = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: shouted });
  t.is(refused.status, 400);
  t.deepEqual(await refused.json(), { error: 'invalid_grant', error_description: 'the registration of this application has been revoked' });
});

test('CORS: every discovery document and OAuth endpoint answers an Origin and a preflight; /mcp does not', async (t) => {
  const { client_id: clientDoc } = await (await register(goodMetadata, { 'x-forwarded-for': '192.0.2.50' })).json();
  const origin = 'https://inspector.example';
  const documents = [
    `${app.url}/.well-known/oauth-authorization-server`,
    `${app.url}/.well-known/oauth-protected-resource/mcp`,
    `${app.url}/.well-known/oauth-protected-resource`,
    clientDoc,
  ];
  for (const url of documents) {
    const res = await fetch(url, { headers: { origin } });
    t.is(res.status, 200, url);
    t.is(res.headers.get('access-control-allow-origin'), '*', url);
  }
  for (const url of [...documents, `${app.url}/oauth/token`, `${app.url}/oauth/revoke`, `${app.url}/oauth/register`]) {
    const pre = await fetch(url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': url.endsWith('/token') || url.endsWith('/register') || url.endsWith('/revoke') ? 'POST' : 'GET', 'access-control-request-headers': 'content-type, mcp-protocol-version' } });
    t.is(pre.status, 204, url);
    t.is(pre.headers.get('access-control-allow-origin'), '*', url);
    t.regex(pre.headers.get('access-control-allow-methods') ?? '', /POST/, url);
    t.regex(pre.headers.get('access-control-allow-headers') ?? '', /Content-Type/i, url);
    t.regex(pre.headers.get('access-control-allow-headers') ?? '', /MCP-Protocol-Version/i, url);
  }
  const token = await fetch(`${app.url}/oauth/token`, { method: 'POST', headers: { origin, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token' });
  t.is(token.status, 400);
  t.is(token.headers.get('access-control-allow-origin'), '*', 'errors are readable cross-origin too');
  const mcp = await fetch(`${app.url}/mcp`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
  t.is(mcp.headers.get('access-control-allow-origin'), null, '/mcp keeps its Origin check and gets no CORS');
  const pages = await fetch(authorizeUrl(app, clientDoc, pkce()), { headers: { origin } });
  t.is(pages.headers.get('access-control-allow-origin'), null, 'the sign-in pages get no CORS');
});
