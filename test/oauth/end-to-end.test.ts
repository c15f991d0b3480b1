// The whole connection flow with clients nobody here wrote (issue 6, "What must be true"):
// oauth4webapi does discovery, PKCE, the authorization request, the iss and state checks, the code
// exchange, a refresh and the reuse of the old refresh token; a person signs in and consents by
// posting the server's own HTML forms; the MCP SDK's Client with its Streamable HTTP transport
// lists the tools and calls each one with the resulting tokens.
import test from 'ava';
import * as oauth from 'oauth4webapi';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { TestApp } from '../helpers/app.ts';
import { fetchJson, Browser, REDIRECT_URI, PASSWORD, agentChoices, eventsOf, hiddenField, setUpOrg, startConnectionsApp, startMetadataServer, type MetadataServer, type Org } from './helpers.ts';

let app: TestApp;
let meta: MetadataServer;
let org: Org;

test.before(async () => {
  app = await startConnectionsApp();
  meta = await startMetadataServer('Claude (test)');
  org = await setUpOrg(app);
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

async function mcpClient(token: string) {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'e2e-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const parseText = (result: { content?: unknown }) => JSON.parse((result.content as { type: string; text: string }[])[0].text);

test('discovery, PKCE, sign-in, consent, iss, code exchange, MCP tools, refresh, and refresh token reuse revoking the connection', async (t) => {
  const insecure = { [oauth.allowInsecureRequests]: true };
  const issuer = new URL(app.url);
  const resource = `${app.url}/mcp`;

  // The protected resource tells the client where its authorization server is (RFC 9728).
  const unauth = await fetchJson(resource, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  t.is(unauth.status, 401);
  const wwwAuth = unauth.headers.get('www-authenticate') ?? '';
  const prmUrl = /resource_metadata="([^"]+)"/.exec(wwwAuth)?.[1];
  t.is(prmUrl, `${app.url}/.well-known/oauth-protected-resource/mcp`);
  const prm = await (await fetchJson(prmUrl!)).json();
  t.is(prm.resource, resource);
  t.deepEqual(prm.authorization_servers, [app.url]);

  // 1. Discovery (RFC 8414), validated by oauth4webapi.
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  t.deepEqual(as.code_challenge_methods_supported, ['S256']);
  t.true(as.token_endpoint_auth_methods_supported?.includes('none'));
  t.is(as.client_id_metadata_document_supported, true);
  t.is(as.authorization_response_iss_parameter_supported, true);

  // 2. The authorization request, with PKCE and a resource indicator.
  const client: oauth.Client = { client_id: meta.clientId };
  const verifier = oauth.generateRandomCodeVerifier();
  const challenge = await oauth.calculatePKCECodeChallenge(verifier);
  const state = oauth.generateRandomState();
  const authUrl = new URL(as.authorization_endpoint!);
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: 'http://127.0.0.1:53682/callback', // loopback: any port matches (RFC 8252 7.3)
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    scope: 'purchase:check purchase:read purchase:request',
    resource,
  })) authUrl.searchParams.set(k, v);

  // 3. A person signs in and consents through the HTML forms.
  const browser = new Browser();
  const signInPage = await browser.fetch(authUrl.href);
  t.is(signInPage.status, 200);
  t.is(signInPage.headers.get('x-frame-options'), 'DENY');
  t.regex(signInPage.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  const signInHtml = await signInPage.text();
  t.regex(signInHtml, /<html lang="en">/);
  t.regex(signInHtml, /<label for="email">Email<\/label>/);
  t.regex(signInHtml, /<label for="password">Password<\/label>/);
  t.regex(signInHtml, /Claude \(test\)/);
  const signedIn = await browser.post(`${app.url}/oauth/sign-in`, { request: hiddenField(signInHtml, 'request'), csrf: hiddenField(signInHtml, 'csrf'), email: org.email, password: PASSWORD });
  t.is(signedIn.status, 303);
  const consentHtml = await (await browser.fetch(new URL(signedIn.headers.get('location')!, app.url).href)).text();
  t.regex(consentHtml, /<h1>Allow Claude \(test\) to act as an agent\?<\/h1>/);
  t.true(consentHtml.includes(new URL(meta.clientId).host), 'shows the client_id host');
  t.true(consentHtml.includes('127.0.0.1:53682'), 'shows the redirect host');
  t.regex(consentHtml, /Check whether a purchase would be allowed/);
  t.regex(consentHtml, /Request purchases as the agent you choose/);
  t.deepEqual(new Set(agentChoices(consentHtml)), new Set([org.agents.buyer.id, org.agents.travel.id]));
  const approved = await browser.post(`${app.url}/oauth/consent`, {
    request: hiddenField(consentHtml, 'request'),
    csrf: hiddenField(consentHtml, 'csrf'),
    agent: org.agents.buyer.id,
    decision: 'approve',
  });
  t.is(approved.status, 303);
  const callback = new URL(approved.headers.get('location')!);
  t.is(callback.origin + callback.pathname, 'http://127.0.0.1:53682/callback');
  t.is(callback.searchParams.get('iss'), app.url);
  t.regex(callback.searchParams.get('code') ?? '', /^cmp_oac_/);

  // 4. The iss and state checks (RFC 9207), then the code exchange.
  const params = oauth.validateAuthResponse(as, client, callback, state);
  const forged = new URL(callback);
  forged.searchParams.set('iss', 'https://evil.example');
  t.throws(() => oauth.validateAuthResponse(as, client, forged, state));
  const tokenResponse = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, 'http://127.0.0.1:53682/callback', verifier, {
    additionalParameters: { resource },
    ...insecure,
  });
  t.is(tokenResponse.headers.get('cache-control'), 'no-store');
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenResponse);
  t.regex(tokens.access_token, /^cmp_oat_/);
  t.regex(tokens.refresh_token!, /^cmp_ort_/);
  t.is(tokens.expires_in, 3600);
  t.is(tokens.token_type, 'bearer');

  const created = await eventsOf(app, 'connection.created');
  t.is(created.length, 1);
  t.is(created[0].data.agentId, org.agents.buyer.id);

  // 5. The MCP SDK's own client: list the tools and call each one.
  const mcp = await mcpClient(tokens.access_token);
  const { tools } = await mcp.listTools();
  t.deepEqual(tools.map((x) => x.name).sort(), ['check_purchase', 'get_purchase', 'list_purchases', 'request_purchase']);
  for (const tool of tools) {
    t.is(tool.inputSchema.type, 'object', `${tool.name} has an input schema`);
    t.is(tool.outputSchema?.type, 'object', `${tool.name} has an output schema`);
    t.true((tool.description ?? '').length > 40, `${tool.name} is described`);
  }
  const check = await mcp.callTool({ name: 'check_purchase', arguments: { merchant: 'Staples', amountMinor: '1999', reason: 'Printer paper' } });
  t.falsy(check.isError);
  t.is((check.structuredContent as any).simulatedDecision.outcome, 'APPROVED');
  const requested = await mcp.callTool({ name: 'request_purchase', arguments: { merchant: 'Staples', amountMinor: '1999', reason: 'Printer paper', idempotencyKey: 'order-1' } });
  t.falsy(requested.isError);
  const submission = requested.structuredContent as any;
  t.is(submission.decision.outcome, 'APPROVED');
  const got = await mcp.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: submission.purchaseRequest.id } });
  const readback = (got.structuredContent as any).purchase;
  t.is(readback.origin, 'MCP');
  t.deepEqual(readback.submittedVia, { type: 'CONNECTION', connectionId: created[0].data.connectionId, application: 'Claude (test)', grantedBy: { name: 'Ana Admin' } });
  const listed = await mcp.callTool({ name: 'list_purchases', arguments: { limit: 10 } });
  t.deepEqual((listed.structuredContent as any).purchases.map((p: any) => p.id), [submission.purchaseRequest.id]);
  t.is((listed.structuredContent as any).hasMore, false);
  await mcp.close();

  // 6. A refresh rotates the refresh token; the new access token works.
  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { additionalParameters: { resource }, ...insecure }),
  );
  t.not(refreshed.refresh_token, tokens.refresh_token);
  t.not(refreshed.access_token, tokens.access_token);
  const afterRefresh = await mcpClient(refreshed.access_token);
  const again = await afterRefresh.callTool({ name: 'list_purchases', arguments: {} });
  t.is((again.structuredContent as any).purchases.length, 1);
  await afterRefresh.close();

  // 7. The old refresh token presented again: invalid_grant, and the whole connection is revoked.
  const reuse = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { additionalParameters: { resource }, ...insecure });
  const err = await t.throwsAsync(oauth.processRefreshTokenResponse(as, client, reuse), { instanceOf: oauth.ResponseBodyError });
  t.is((err as oauth.ResponseBodyError).error, 'invalid_grant');
  const reuseEvents = await eventsOf(app, 'security.connection_token_reuse_detected');
  t.is(reuseEvents.length, 1);
  t.is(reuseEvents[0].data.connectionId, created[0].data.connectionId);
  // Revocation takes effect on the next call, even with the newest tokens: on /mcp a 401
  // invalid_token challenge (MCP authorization, RFC 6750), on /v1 docs/reference/contract.md §5.3's 403.
  const revokedMcp = await fetchJson(resource, {
    method: 'POST',
    headers: { authorization: `Bearer ${refreshed.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  t.is(revokedMcp.status, 401);
  t.is((await revokedMcp.json()).error.code, 'invalid_token');
  t.regex(revokedMcp.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token", scope="[^"]+", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"$/);
  const v1 = await app.request(`/v1/purchase-requests/${submission.purchaseRequest.id}`, { key: refreshed.access_token });
  t.is(v1.status, 403);
  t.is(v1.body.error.code, 'connection_unauthorized');
  const newest = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshed.refresh_token!, { additionalParameters: { resource }, ...insecure });
  const err2 = await t.throwsAsync(oauth.processRefreshTokenResponse(as, client, newest), { instanceOf: oauth.ResponseBodyError });
  t.is((err2 as oauth.ResponseBodyError).error, 'invalid_grant');
});

test('denying consent returns access_denied with state and iss, which oauth4webapi reports', async (t) => {
  const as = await oauth.processDiscoveryResponse(new URL(app.url), await oauth.discoveryRequest(new URL(app.url), { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }));
  const client: oauth.Client = { client_id: meta.clientId };
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  for (const [k, v] of Object.entries({
    response_type: 'code', client_id: meta.clientId, redirect_uri: REDIRECT_URI, state, resource: `${app.url}/mcp`,
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()), code_challenge_method: 'S256', scope: 'purchase:read',
  })) url.searchParams.set(k, v);
  const browser = new Browser();
  const signInHtml = await (await browser.fetch(url.href)).text();
  const signedIn = await browser.post(`${app.url}/oauth/sign-in`, { request: hiddenField(signInHtml, 'request'), csrf: hiddenField(signInHtml, 'csrf'), email: org.email, password: PASSWORD });
  const consentHtml = await (await browser.fetch(new URL(signedIn.headers.get('location')!, app.url).href)).text();
  const denied = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), decision: 'deny' });
  t.is(denied.status, 303);
  const callback = new URL(denied.headers.get('location')!);
  t.is(callback.searchParams.get('error'), 'access_denied');
  t.is(callback.searchParams.get('state'), state);
  t.is(callback.searchParams.get('iss'), app.url);
  const err = t.throws(() => oauth.validateAuthResponse(as, client, callback, state), { instanceOf: oauth.AuthorizationResponseError });
  t.is((err as oauth.AuthorizationResponseError).error, 'access_denied');
});
