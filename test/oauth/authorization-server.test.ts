// The authorization and token endpoints' refusals (docs/reference/contract.md §5.2; RFC 6749, 7636, 8707, 9207, 7009),
// the sign-in and consent pages' protections, and the operator API for passwords and connections.
import test from 'ava';
import { createHash } from 'node:crypto';
import type { TestApp } from '../helpers/app.ts';
import { AUTHORIZATION_REQUEST_LIMIT } from '../../src/identity/oauth/registration.ts';
import {
  fetchJson, Browser, PASSWORD, REDIRECT_URI, authorizeUrl, clock, connect, eventsOf, hiddenField, pkce, setUpOrg, signInToConsent,
  startConnectionsApp, startMetadataServer, tokenForm, type MetadataServer, type Org,
} from './helpers.ts';

let app: TestApp;
let meta: MetadataServer;
let org: Org;
const time = clock();

test.before(async () => {
  app = await startConnectionsApp({ now: time.now });
  meta = await startMetadataServer();
  org = await setUpOrg(app);
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

const resource = () => `${app.url}/mcp`;

async function codeFor(extra: Record<string, string | null> = {}) {
  const p = pkce();
  const { browser, consentHtml } = await signInToConsent(app, org, authorizeUrl(app, meta.clientId, p, extra));
  const res = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: org.agents.buyer.id, decision: 'approve' });
  const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
  return { code, verifier: p.verifier };
}

const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
  tokenForm(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier, client_id: meta.clientId, resource: resource(), ...extra });

// ---- the authorization endpoint -----------------------------------------------------------------

test('authorization requests beyond the per-address limit are 429 with Retry-After, before anything is stored or fetched', async (t) => {
  // Each request may fetch a client's metadata document and stores a request for 15 minutes.
  const from = (address: string) => ({ redirect: 'manual' as const, headers: { 'x-forwarded-for': address } });
  const p = pkce();
  const url = authorizeUrl(app, meta.clientId, p);
  // Counted by this test's challenge: other tests store requests at the same time.
  const storedHere = () => app.store.db.collection('oauth_authorization_requests').countDocuments({ codeChallenge: p.challenge });
  const statuses = [];
  for (let i = 0; i < AUTHORIZATION_REQUEST_LIMIT; i++) statuses.push((await fetchJson(url, from('203.0.113.50'))).status);
  t.deepEqual(statuses, Array(AUTHORIZATION_REQUEST_LIMIT).fill(200), 'a sign-in page each');
  const stored = await storedHere();
  const refused = await fetchJson(url, from('203.0.113.50'));
  t.is(refused.status, 429);
  t.regex(await refused.text(), /Too many connection requests/);
  const retryAfter = Number(refused.headers.get('retry-after'));
  t.true(retryAfter > 0 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  t.is(await storedHere(), stored, 'nothing stored for the refused one');
  t.is((await fetchJson(url, from('198.51.100.50'))).status, 200, 'another address is not affected');
});

test('a resource other than the MCP endpoint is invalid_target, sent back with state and iss', async (t) => {
  const res = await fetchJson(authorizeUrl(app, meta.clientId, pkce(), { resource: `${app.url}/v1`, state: 'abc' }), { redirect: 'manual' });
  t.is(res.status, 303);
  const back = new URL(res.headers.get('location')!);
  t.is(back.origin + back.pathname, REDIRECT_URI);
  t.is(back.searchParams.get('error'), 'invalid_target');
  t.is(back.searchParams.get('state'), 'abc');
  t.is(back.searchParams.get('iss'), app.url);
  const missing = new URL((await fetchJson(authorizeUrl(app, meta.clientId, pkce(), { resource: null }), { redirect: 'manual' })).headers.get('location')!);
  t.is(missing.searchParams.get('error'), 'invalid_target');
});

test('PKCE is required, S256 only; unknown scopes and response types are refused', async (t) => {
  const errorOf = async (extra: Record<string, string | null>) =>
    new URL((await fetchJson(authorizeUrl(app, meta.clientId, pkce(), extra), { redirect: 'manual' })).headers.get('location')!).searchParams.get('error');
  t.is(await errorOf({ code_challenge: null }), 'invalid_request');
  t.is(await errorOf({ code_challenge_method: 'plain' }), 'invalid_request');
  t.is(await errorOf({ code_challenge_method: null }), 'invalid_request');
  t.is(await errorOf({ scope: 'purchase:read policies:write' }), 'invalid_scope');
  t.is(await errorOf({ response_type: 'token' }), 'unsupported_response_type');
  // A missing parameter is invalid_request (RFC 6749 4.1.2.1), not a response type the server lacks.
  t.is(await errorOf({ response_type: null }), 'invalid_request');
});

test('error_description holds only the characters RFC 6749 allows, whatever the request sent', async (t) => {
  // RFC 6749 4.1.2.1 and 5.2: %x20-21 / %x23-5B / %x5D-7E, so no quote, backslash, control or non-ASCII.
  const res = await fetchJson(authorizeUrl(app, meta.clientId, pkce(), { scope: 'purchase:read "évil\\\u0007\u202e' }), { redirect: 'manual' });
  const back = new URL(res.headers.get('location')!);
  t.is(back.searchParams.get('error'), 'invalid_scope');
  t.regex(back.searchParams.get('error_description')!, /^unknown scope [\x20\x21\x23-\x5b\x5d-\x7e]+$/);
});

test('an unregistered redirect_uri or a bad client_id is shown as a page, never redirected to', async (t) => {
  const evil = await fetchJson(authorizeUrl(app, meta.clientId, pkce(), { redirect_uri: 'https://evil.example/cb' }), { redirect: 'manual' });
  t.is(evil.status, 400);
  t.is(evil.headers.get('location'), null);
  t.regex(await evil.text(), /not one that Test Assistant registered/);

  // Loopback redirect URIs match on any port (RFC 8252 7.3), but only the path registered.
  const otherPath = await fetchJson(authorizeUrl(app, meta.clientId, pkce(), { redirect_uri: 'http://127.0.0.1:9999/other' }), { redirect: 'manual' });
  t.is(otherPath.status, 400);
  const otherPort = await fetchJson(authorizeUrl(app, meta.clientId, pkce(), { redirect_uri: 'http://127.0.0.1:9999/callback' }), { redirect: 'manual' });
  t.is(otherPort.status, 200);

  const mismatched = meta.serve('/wrong-id.json', { client_id: 'https://someone-else.example/client.json', redirect_uris: [REDIRECT_URI] });
  meta.serve('/redirect-target.json', { client_id: `${meta.origin}/moved.json`, redirect_uris: [REDIRECT_URI] });
  const redirecting = meta.serve('/moved.json', '', 302, { location: `${meta.origin}/redirect-target.json` });
  const hugeDoc = meta.serve('/huge.json', { client_id: `${meta.origin}/huge.json`, redirect_uris: [REDIRECT_URI], client_name: 'x'.repeat(20_000) });
  for (const [clientId, why] of [
    [mismatched, /does not equal the URL/],
    [redirecting, /redirects are not followed/],
    [hugeDoc, /larger than/],
    [`${meta.origin}/missing.json`, /HTTP 404/],
    ['http://example.com/client.json', /not a permitted URL|loopback/],
    ['https://10.0.0.1/client.json', /not a permitted URL/],
    ['not a url', /not a permitted URL/],
  ] as const) {
    const res = await fetchJson(authorizeUrl(app, clientId, pkce()), { redirect: 'manual' });
    t.is(res.status, 400, clientId);
    t.is(res.headers.get('location'), null);
    t.regex(await res.text(), why, clientId);
  }
  // A document registering a redirect URI the URL parser would not read as written (a tab it drops, a
  // backslash it reads as a slash) is refused like any unacceptable redirect URI.
  for (const [path, uri] of [['/tab.json', `${REDIRECT_URI}\t`], ['/backslash.json', 'https://app.example\\@evil.example/cb'], ['/nul.json', `${REDIRECT_URI}\u0000`]] as const) {
    const clientId = meta.serve(path, { client_id: `${meta.origin}${path}`, redirect_uris: [uri] });
    const res = await fetchJson(authorizeUrl(app, clientId, pkce(), { redirect_uri: uri }), { redirect: 'manual' });
    t.is(res.status, 400, path);
    t.is(res.headers.get('location'), null);
    t.regex(await res.text(), /is not acceptable/, path);
  }
  t.true(meta.hits.includes('/moved.json'));
  t.false(meta.hits.includes('/redirect-target.json'), 'the redirect was not followed');
});

test('a loopback redirect URI matches on any port but is otherwise compared as written: no other spelling is redirected to', async (t) => {
  // Registered: http://127.0.0.1/callback (RFC 8252 7.3: the port may change at run time, nothing else).
  for (const uri of [
    'http://127.0.0.1:5000/callback/', 'http://127.0.0.1:5000/Callback', 'http://127.0.0.1:5000/callback?x=1', 'http://127.0.0.1/callback?',
    'http://127.0.0.1:5000/%63allback', 'http://127.0.0.1:5000/./callback', 'http://127.0.0.1:5000//callback', 'http://127.0.0.1:5000/callback#x',
    'http://localhost:5000/callback', 'https://127.0.0.1:5000/callback', 'HTTP://127.0.0.1/callback', 'http://127.0.0.1./callback',
    'http://127.0.0.1:80/callback', 'http://[::ffff:127.0.0.1]/callback', 'http://0x7f.0.0.1/callback', 'http://127.0.0.1:5000@evil.example/callback',
  ]) {
    const res = await fetchJson(authorizeUrl(app, meta.clientId, pkce(), { redirect_uri: uri, response_type: 'token' }), { redirect: 'manual' });
    t.is(res.status, 400, uri);
    t.is(res.headers.get('location'), null, uri);
  }
});

test('the code_verifier is 43 to 128 unreserved characters (RFC 7636 4.1), even when it hashes to the challenge', async (t) => {
  const attempt = async (verifier: string) => {
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const { code } = await codeFor({ code_challenge: challenge });
    return exchange(code, verifier);
  };
  for (const verifier of ['a'.repeat(42), 'a'.repeat(129), `${'a'.repeat(42)}+`, `${'a'.repeat(42)}/`, `${'a'.repeat(42)} `]) {
    const res = await attempt(verifier);
    t.is(res.status, 400, JSON.stringify(verifier));
    t.is((await res.json()).error, 'invalid_grant');
  }
  for (const verifier of ['a'.repeat(43), `${'A-._~z9'.repeat(18)}AB`]) t.is((await attempt(verifier)).status, 200, `${verifier.length} characters`);
  const { code, verifier } = await codeFor();
  const missing = await exchange(code, '');
  t.deepEqual(await missing.json(), { error: 'invalid_request', error_description: 'code_verifier is required (PKCE)' });
  t.is((await exchange(code, verifier)).status, 200, 'refusals do not use the code up');
});

// ---- sign-in and consent pages ---------------------------------------------------------------

test('the pages refuse posts without the browser cookie or the CSRF token', async (t) => {
  const browser = new Browser();
  const html = await (await browser.fetch(authorizeUrl(app, meta.clientId, pkce()))).text();
  const request = hiddenField(html, 'request');
  const csrf = hiddenField(html, 'csrf');
  // Another browser (no cookie) posting a valid form: refused.
  const stranger = await new Browser().post(`${app.url}/oauth/sign-in`, { request, csrf, email: org.email, password: PASSWORD });
  t.is(stranger.status, 400);
  t.regex(await stranger.text(), /expired/);
  // The right browser without the CSRF token: refused.
  const forged = await browser.post(`${app.url}/oauth/sign-in`, { request, csrf: 'x'.repeat(43), email: org.email, password: PASSWORD });
  t.is(forged.status, 400);
  // A wrong password: the form again, with an announced error, and no way forward.
  const wrong = await browser.post(`${app.url}/oauth/sign-in`, { request, csrf, email: org.email, password: 'not the password at all' });
  t.is(wrong.status, 401);
  const wrongHtml = await wrong.text();
  t.regex(wrongHtml, /role="alert"/);
  t.regex(wrongHtml, /aria-invalid="true"/);
  t.is(wrong.headers.get('x-frame-options'), 'DENY');
  // The consent page for a request nobody signed in on.
  const consent = await browser.fetch(`${app.url}/oauth/consent?request=${request}`);
  t.is(consent.status, 400);
});

test('a consent form cannot be answered from another browser, nor twice', async (t) => {
  const { browser, consentHtml } = await signInToConsent(app, org, authorizeUrl(app, meta.clientId, pkce()));
  const fields = { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: org.agents.buyer.id, decision: 'approve' };
  t.is((await new Browser().post(`${app.url}/oauth/consent`, fields)).status, 400);
  t.is((await browser.post(`${app.url}/oauth/consent`, { ...fields, agent: '00000000-0000-4000-8000-000000000000' })).status, 400, 'an agent not offered');
  t.is((await browser.post(`${app.url}/oauth/consent`, fields)).status, 303);
  t.is((await browser.post(`${app.url}/oauth/consent`, fields)).status, 400, 'single use');
});

test.serial('the consent page offers only ENABLED agents of the person\'s organisation', async (t) => {
  await app.admin(`/admin/agents/${org.agents.travel.id}`, { method: 'PATCH', body: { status: 'DISABLED' } });
  try {
    const { consentHtml } = await signInToConsent(app, org, authorizeUrl(app, meta.clientId, pkce(), { scope: 'purchase:read' }));
    t.true(consentHtml.includes(org.agents.buyer.id));
    t.false(consentHtml.includes(org.agents.travel.id));
    t.regex(consentHtml, /See what happened to the purchases it requested/);
    t.notRegex(consentHtml, /Request purchases as the agent/);
  } finally {
    await app.admin(`/admin/agents/${org.agents.travel.id}`, { method: 'PATCH', body: { status: 'ENABLED' } });
  }
});

test('the consent page warns when every redirect URI of a metadata-document client is on this computer (MCP authorization)', async (t) => {
  const document = (path: string, name: string, redirectUris: string[]) =>
    meta.serve(path, { client_id: `${meta.origin}${path}`, client_name: name, redirect_uris: redirectUris, token_endpoint_auth_method: 'none' });
  const consentFor = async (clientId: string) => (await signInToConsent(app, org, authorizeUrl(app, clientId, pkce()))).consentHtml;
  const warning = /<p class="warning" id="local-client-warning"><strong>Warning:<\/strong> ([^<]+) can only send you back to this computer \(<code>localhost<\/code>\), so any program running on it could claim to be \1\./;

  t.regex(await consentFor(meta.clientId), warning, 'its one redirect URI is 127.0.0.1');
  const local = await consentFor(document('/all-local.json', 'Local Tool', [REDIRECT_URI, 'http://localhost/cb', 'http://[::1]/cb', 'https://127.0.0.5/cb', 'https://dev.localhost/cb']));
  t.is(warning.exec(local)?.[1], 'Local Tool');
  t.notRegex(await consentFor(document('/mixed.json', 'Web And Local', [REDIRECT_URI, 'https://app.example/cb'])), /local-client-warning/, 'one redirect URI on the web');
  t.notRegex(await consentFor(document('/native.json', 'Native App', [REDIRECT_URI, 'com.example.app:/cb'])), /local-client-warning/, 'a private-use scheme is not localhost');

  // A client registered here is already shown as unverified, whatever its redirect URIs.
  const registered = await fetchJson(`${app.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Registered Local', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' }),
  });
  const registeredHtml = await consentFor((await registered.json()).client_id);
  t.regex(registeredHtml, /Registered Local <strong>\(unverified\)<\/strong>/);
  t.notRegex(registeredHtml, /local-client-warning/);
});

test.serial('a code whose agent was disabled after consent is refused without being used up: the client trying again is no token reuse', async (t) => {
  const p = pkce();
  const { browser, consentHtml } = await signInToConsent(app, org, authorizeUrl(app, meta.clientId, p));
  const approved = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: org.agents.travel.id, decision: 'approve' });
  const code = new URL(approved.headers.get('location')!).searchParams.get('code')!;
  const reuses = (await eventsOf(app, 'security.connection_token_reuse_detected')).length;
  const revocations = (await eventsOf(app, 'connection.revoked')).length;
  await app.admin(`/admin/agents/${org.agents.travel.id}`, { method: 'PATCH', body: { status: 'DISABLED' } });
  try {
    for (const attempt of ['first', 'again']) {
      const res = await exchange(code, p.verifier);
      t.is(res.status, 400, attempt);
      const body = await res.json();
      t.is(body.error, 'invalid_grant', attempt);
      t.is(body.error_description, 'the agent of this connection is not enabled', attempt);
    }
    t.is((await eventsOf(app, 'security.connection_token_reuse_detected')).length, reuses, 'no reuse alarm');
    t.is((await eventsOf(app, 'connection.revoked')).length, revocations, 'the connection is not revoked');
  } finally {
    await app.admin(`/admin/agents/${org.agents.travel.id}`, { method: 'PATCH', body: { status: 'ENABLED' } });
  }
  const tokens = await (await exchange(code, p.verifier)).json();
  t.truthy(tokens.access_token, 'enabled again within the code\'s minute, the code still works once');
});

test('cancelling on the sign-in page returns access_denied without signing in', async (t) => {
  const browser = new Browser();
  const html = await (await browser.fetch(authorizeUrl(app, meta.clientId, pkce(), { state: 'cancel-me' }))).text();
  t.regex(html, /Cancel and return to Test Assistant/);
  const res = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(html, 'request'), csrf: hiddenField(html, 'csrf'), decision: 'deny' });
  t.is(res.status, 303);
  const back = new URL(res.headers.get('location')!);
  t.is(back.searchParams.get('error'), 'access_denied');
  t.is(back.searchParams.get('state'), 'cancel-me');
  t.is(back.searchParams.get('iss'), app.url);
  // Approving needs a signed-in person.
  const html2 = await (await browser.fetch(authorizeUrl(app, meta.clientId, pkce()))).text();
  const approve = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(html2, 'request'), csrf: hiddenField(html2, 'csrf'), agent: org.agents.buyer.id, decision: 'approve' });
  t.is(approve.status, 400);
});

// ---- the token endpoint ----------------------------------------------------------------------

test('the code exchange: invalid_target, wrong verifier, wrong redirect_uri, wrong client are refused; no-store always', async (t) => {
  const { code, verifier } = await codeFor();
  const target = await exchange(code, verifier, { resource: `${app.url}/v1` });
  t.is(target.status, 400);
  t.is((await target.json()).error, 'invalid_target');
  t.is(target.headers.get('cache-control'), 'no-store');
  const bad = await exchange(code, pkce().verifier);
  t.is((await bad.json()).error, 'invalid_grant');
  const redirect = await exchange(code, verifier, { redirect_uri: 'http://127.0.0.1:1/callback' });
  t.is((await redirect.json()).error, 'invalid_grant');
  const client = await exchange(code, verifier, { client_id: `${meta.origin}/other.json` });
  t.is((await client.json()).error, 'invalid_grant');
  const unsupported = await tokenForm(app, { grant_type: 'password', client_id: meta.clientId });
  t.is((await unsupported.json()).error, 'unsupported_grant_type');
  const wrongType = await fetchJson(`${app.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.is((await wrongType.json()).error, 'invalid_request');
  // A client secret (public clients have none) is invalid_client, with RFC 6749 5.2's default 400: a
  // 401 must name an HTTP authentication scheme to use (RFC 9110 15.5.2), and this server has none.
  const secret = await exchange(code, verifier, { client_secret: 'guessed' });
  t.is(secret.status, 400);
  t.is((await secret.json()).error, 'invalid_client');
  // Nothing above consumed the code.
  const ok = await exchange(code, verifier);
  t.is(ok.status, 200);
  t.is(ok.headers.get('cache-control'), 'no-store');
});

test('a code is single-use: a second exchange by its own client is invalid_grant and revokes the connection', async (t) => {
  const { code, verifier } = await codeFor();
  const first = await (await exchange(code, verifier)).json();
  const second = await exchange(code, verifier);
  t.is((await second.json()).error, 'invalid_grant');
  const res = await app.request('/v1/simulations/current-policies', { key: first.access_token, body: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } });
  t.is(res.status, 403);
  t.is(res.body.error.code, 'connection_unauthorized');
});

test('a used code replayed by someone who only saw it (no verifier, wrong verifier, redirect_uri or client) changes nothing', async (t) => {
  const { code, verifier } = await codeFor();
  const first = await (await exchange(code, verifier)).json();
  const connectionId = (await app.store.db.collection<{ _id: string; connectionId: string }>('oauth_access_tokens').findOne({ _id: createHash('sha256').update(first.access_token).digest('hex') }))!.connectionId;
  const revocations = async () => (await eventsOf(app, 'connection.revoked')).filter((e) => e.data.connectionId === connectionId).length;
  const replays = {
    'no verifier': [{ code_verifier: '' }, 'invalid_request'],
    'a wrong verifier': [{ code_verifier: pkce().verifier }, 'invalid_grant'],
    'a wrong redirect_uri': [{ redirect_uri: 'http://127.0.0.1:1/callback' }, 'invalid_grant'],
    'another client': [{ client_id: `${meta.origin}/other.json` }, 'invalid_grant'],
  } as const;
  for (const [what, [fields, error]] of Object.entries(replays)) {
    const res = await exchange(code, verifier, fields);
    t.is(res.status, 400, what);
    t.is((await res.json()).error, error, what);
  }
  t.is(await revocations(), 0, 'the connection is not revoked');
  const toolsList = () => app.request('/mcp', { key: first.access_token, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
  t.is((await toolsList()).status, 200, 'its access token still works');

  const own = await exchange(code, verifier);
  t.is((await own.json()).error_description, 'the authorization code was already used; the connection has been revoked');
  t.is(await revocations(), 1);
  t.is((await toolsList()).status, 401, 'the connection is revoked');
});

// Serial (AVA runs serial tests before the others): moving the clock must not expire another test's code.
test.serial('a code expires after 60 seconds', async (t) => {
  const { code, verifier } = await codeFor();
  time.advance(61_000);
  const res = await exchange(code, verifier);
  t.is((await res.json()).error, 'invalid_grant');
});

test('refresh: rotation, scope narrowing only, another client refused', async (t) => {
  const tokens = await connect(app, org, meta.clientId, { scope: 'purchase:read purchase:check' });
  const other = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: `${meta.origin}/other.json` });
  t.is((await other.json()).error, 'invalid_grant');
  const widen = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId, scope: 'purchase:request' });
  t.is((await widen.json()).error, 'invalid_scope');
  const target = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId, resource: 'https://elsewhere.example/mcp' });
  t.is((await target.json()).error, 'invalid_target');
  const narrowed = await (await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId, scope: 'purchase:read' })).json();
  t.is(narrowed.scope, 'purchase:read');
  const sim = await app.request('/v1/simulations/current-policies', { key: narrowed.access_token, body: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } });
  t.is(sim.body.error.code, 'insufficient_scope');
});

test('refresh: narrowing applies to the access token only; the new refresh token keeps the presented scopes (RFC 6749 6)', async (t) => {
  const all = 'purchase:check purchase:read purchase:request';
  const tokens = await connect(app, org, meta.clientId, { scope: all });
  const refresh = (refreshToken: string, scope?: string) =>
    tokenForm(app, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: meta.clientId, ...(scope ? { scope } : {}) });
  const toolsOf = async (accessToken: string) => {
    const res = await app.request('/mcp', { key: accessToken, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
    return (res.body.result.tools as { name: string }[]).map((x) => x.name).sort();
  };

  const narrowedRes = await refresh(tokens.refresh_token, 'purchase:check');
  t.is(narrowedRes.status, 200);
  const narrowed = await narrowedRes.json();
  t.is(narrowed.scope, 'purchase:check', 'scope describes the access token (RFC 6749 5.1)');
  t.deepEqual(await toolsOf(narrowed.access_token), ['check_purchase']);

  const restoredRes = await refresh(narrowed.refresh_token);
  t.is(restoredRes.status, 200);
  const restored = await restoredRes.json();
  t.is(restored.scope, all, 'a refresh without scope gets every scope of the refresh token again');
  t.deepEqual(await toolsOf(restored.access_token), ['check_purchase', 'get_purchase', 'list_purchases', 'request_purchase']);

  const otherRes = await refresh(restored.refresh_token, 'purchase:request');
  t.is(otherRes.status, 200, 'narrowing once does not forbid another scope of the grant later');
  const other = await otherRes.json();
  t.is(other.scope, 'purchase:request');
  t.is((await refresh(other.refresh_token, 'purchase:request policies:write')).status, 400, 'never wider than the grant');

  // The connection is the grant: narrowed refreshes leave it as approved.
  const list = await app.admin(`/admin/connections?organizationId=${org.organizationId}`);
  t.deepEqual(list.body.connections.find((c: any) => c.id === tokens.connectionId).scopes, all.split(' '));
});

test('RFC 7009 revocation of a refresh token ends the connection', async (t) => {
  const tokens = await connect(app, org, meta.clientId);
  const res = await fetchJson(`${app.url}/oauth/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: tokens.refresh_token, token_type_hint: 'refresh_token', client_id: meta.clientId }),
  });
  t.is(res.status, 200);
  t.is((await eventsOf(app, 'connection.revoked')).filter((e) => e.data.connectionId === tokens.connectionId).length, 1);
  const sim = await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } });
  t.is(sim.body.error.code, 'connection_unauthorized');
  const unknown = await fetchJson(`${app.url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `token=nonsense&client_id=${encodeURIComponent(meta.clientId)}` });
  t.is(unknown.status, 200, 'unknown tokens are not an error (RFC 7009 2.2)');
});

test('RFC 7009 2.1: a token issued to another client is refused with invalid_request and stays valid; an unknown one is still 200', async (t) => {
  const tokens = await connect(app, org, meta.clientId);
  const revoke = (token: string, clientId: string) =>
    fetchJson(`${app.url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token, client_id: clientId }) });
  const other = `${meta.origin}/another-client.json`;
  const simulate = () => app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } });
  for (const token of [tokens.access_token, tokens.refresh_token]) {
    const res = await revoke(token, other);
    t.is(res.status, 400);
    t.is(res.headers.get('cache-control'), 'no-store');
    t.deepEqual(await res.json(), { error: 'invalid_request', error_description: 'the token was issued to another client' });
  }
  t.is((await simulate()).status, 200, 'the access token still works');
  t.is((await eventsOf(app, 'connection.revoked')).filter((e) => e.data.connectionId === tokens.connectionId).length, 0, 'the connection is not revoked');
  t.is((await revoke(`cmp_oat_${'x'.repeat(43)}`, other)).status, 200, 'an unknown token is not an error (RFC 7009 2.2)');

  t.is((await revoke(tokens.access_token, meta.clientId)).status, 200);
  t.is((await simulate()).status, 401, 'its own client revokes it');
});

// ---- the operator API ----------------------------------------------------------------------

test('operator API: passwords are at least 12 characters; connections are listed and revoked once', async (t) => {
  const short = await app.admin(`/admin/people/${org.personId}/password`, { method: 'PUT', body: { password: 'short' } });
  t.is(short.status, 400);
  t.is(short.body.error.code, 'invalid_request');
  const unknown = await app.admin('/admin/people/00000000-0000-4000-8000-000000000000/password', { method: 'PUT', body: { password: PASSWORD } });
  t.is(unknown.status, 404);
  const noAdmin = await app.request(`/admin/people/${org.personId}/password`, { method: 'PUT', body: { password: PASSWORD } });
  t.is(noAdmin.status, 401);
  const stored = await app.deps.collections.people.findOne({ _id: org.personId });
  t.regex(stored!.passwordHash!, /^scrypt\$/);
  t.false(stored!.passwordHash!.includes(PASSWORD));

  const tokens = await connect(app, org, meta.clientId, { agentId: org.agents.travel.id });
  const list = await app.admin(`/admin/connections?organizationId=${org.organizationId}`);
  t.is(list.status, 200);
  const mine = list.body.connections.find((c: any) => c.id === tokens.connectionId);
  t.like(mine, { application: 'Test Assistant', clientId: meta.clientId, agent: { id: org.agents.travel.id, name: 'Travel booker' }, grantedBy: { name: 'Ana Admin' }, revokedAt: null });
  t.is((await app.admin('/admin/connections')).status, 400);

  const revoked = await app.admin(`/admin/connections/${tokens.connectionId}`, { method: 'DELETE' });
  t.is(revoked.status, 200);
  t.is(revoked.body.connection.revokedReason, 'OPERATOR');
  t.truthy(revoked.body.connection.revokedAt);
  t.is((await app.admin(`/admin/connections/${tokens.connectionId}`, { method: 'DELETE' })).status, 200);
  t.is((await eventsOf(app, 'connection.revoked')).filter((e) => e.data.connectionId === tokens.connectionId).length, 1, 'one event for one revocation');
  t.is((await app.admin('/admin/connections/00000000-0000-4000-8000-000000000000', { method: 'DELETE' })).status, 404);
  const refresh = await tokenForm(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: meta.clientId });
  t.is((await refresh.json()).error, 'invalid_grant');
});

test('authorization server metadata (RFC 8414)', async (t) => {
  const res = await fetchJson(`${app.url}/.well-known/oauth-authorization-server`);
  const m = await res.json();
  t.like(m, {
    issuer: app.url,
    authorization_endpoint: `${app.url}/oauth/authorize`,
    token_endpoint: `${app.url}/oauth/token`,
    revocation_endpoint: `${app.url}/oauth/revoke`,
    registration_endpoint: `${app.url}/oauth/register`,
    code_challenge_methods_supported: ['S256'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  });
  t.deepEqual(m.token_endpoint_auth_methods_supported, ['none']);
  t.deepEqual(m.response_types_supported, ['code']);
  t.deepEqual(m.scopes_supported, ['purchase:check', 'purchase:read', 'purchase:request']);
});
