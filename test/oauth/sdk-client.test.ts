// The official MCP SDK client connecting through its own auth() flow (issue 12), as an assistant
// does: a 401 from /mcp starts discovery, then either a client ID metadata document (served over
// real HTTPS, fetched by the production code path) or Dynamic Client Registration, then the
// authorization request a person answers in the sign-in and consent pages (posted as HTML forms),
// the code exchange, every tool, a refresh when the access token has expired, and, after an operator
// revokes the connection, the 401 that makes the client start authorising again by itself.
import test, { type ExecutionContext } from 'ava';
import tls from 'node:tls';
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { TestApp } from '../helpers/app.ts';
import { createTestPki, startReceiver, type ProgrammedResponse, type Receiver, type TestPki } from '../helpers/https-receiver.ts';
import { clock, hiddenField, setUpOrg, signInToConsent, startConnectionsApp, type Org } from './helpers.ts';

const REDIRECT = 'http://127.0.0.1:53682/callback';
const time = clock();
let app: TestApp;
let org: Org;
let pki: TestPki;
let metadataHost: Receiver;
const metadataDoc: ProgrammedResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: '' };

test.before(async () => {
  app = await startConnectionsApp({ now: time.now });
  org = await setUpOrg(app);
  pki = await createTestPki();
  // The service trusts the test CA, as a deployment trusts the public ones (Node 24's runtime API;
  // the child-process route of client-metadata-https.test.ts is not needed here).
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), await readFile(pki.caPath, 'utf8')]);
  metadataHost = await startReceiver({ ...pki.trusted, responses: [metadataDoc] });
  metadataDoc.body = JSON.stringify({
    client_id: `${metadataHost.origin}/client.json`,
    client_name: 'SDK client (metadata document)',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_method: 'none',
  });
});
test.after.always(async () => {
  await metadataHost?.close();
  await pki?.cleanup();
  await app?.close();
});

/** What an assistant keeps between runs, in memory; the SDK drives it. */
class MemoryProvider implements OAuthClientProvider {
  readonly clientMetadataUrl?: string;
  readonly authorizationUrls: URL[] = [];
  lastState = '';
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';

  constructor(clientMetadataUrl?: string) {
    this.clientMetadataUrl = clientMetadataUrl;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'SDK client (registered)', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() {
    this.lastState = randomBytes(16).toString('base64url');
    return this.lastState;
  }
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.#client = info;
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url);
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'client') this.#client = undefined;
    if (scope === 'all' || scope === 'tokens') this.#tokens = undefined;
  }
}

/**
 * The person: opens the authorization URL the client produced, signs in, allows the buyer agent.
 * Then the client's redirect handler: checks state and iss (RFC 9207) and returns the code.
 */
async function personAllows(t: ExecutionContext, provider: MemoryProvider) {
  const url = provider.authorizationUrls.at(-1)!;
  t.is(url.searchParams.get('resource'), `${app.url}/mcp`, 'the SDK sends the resource indicator');
  t.is(url.searchParams.get('code_challenge_method'), 'S256');
  t.is(url.searchParams.get('scope'), 'purchase:check purchase:read purchase:request', 'the scope of the 401 challenge');
  const { browser, consentHtml } = await signInToConsent(app, org, url.href);
  const approved = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: org.agents.buyer.id, decision: 'approve' });
  t.is(approved.status, 303);
  const callback = new URL(approved.headers.get('location')!);
  t.is(callback.origin + callback.pathname, REDIRECT);
  t.is(callback.searchParams.get('state'), provider.lastState);
  t.is(callback.searchParams.get('iss'), app.url);
  return { code: callback.searchParams.get('code')!, consentHtml };
}

const structured = (r: unknown) => (r as { structuredContent: any }).structuredContent;

async function everyTool(t: ExecutionContext, client: Client, idempotencyKey: string) {
  const { tools } = await client.listTools();
  t.deepEqual(tools.map((x) => x.name).sort(), ['check_purchase', 'get_purchase', 'list_purchases', 'request_purchase']);
  const check = await client.callTool({ name: 'check_purchase', arguments: { merchant: 'Staples', amountMinor: '1999', reason: 'Printer paper' } });
  t.is(structured(check).simulatedDecision.outcome, 'APPROVED');
  const requested = await client.callTool({ name: 'request_purchase', arguments: { merchant: 'Staples', amountMinor: '1999', reason: 'Printer paper', idempotencyKey } });
  const id = structured(requested).purchaseRequest.id;
  t.is(structured(requested).decision.outcome, 'APPROVED');
  const got = await client.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: id } });
  t.is(structured(got).purchase.id, id);
  const listed = await client.callTool({ name: 'list_purchases', arguments: { limit: 50 } });
  t.true(structured(listed).purchases.some((p: { id: string }) => p.id === id));
  return { purchaseId: id, submittedVia: structured(got).purchase.submittedVia };
}

/** The SDK's auth flow end to end for one provider; returns the connected client. */
async function connectThroughSdk(t: ExecutionContext, provider: MemoryProvider) {
  const endpoint = new URL(`${app.url}/mcp`);
  const first = new Client({ name: 'sdk-auth-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  // The first request is a 401; the SDK discovers everything, registers or not, and hands the person a URL.
  await t.throwsAsync(first.connect(transport), { instanceOf: UnauthorizedError });
  t.is(provider.authorizationUrls.length, 1);
  const { code, consentHtml } = await personAllows(t, provider);
  await transport.finishAuth(code);
  const client = new Client({ name: 'sdk-auth-test', version: '1.0.0' });
  const connected = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  await client.connect(connected);
  return { client, transport: connected, consentHtml };
}

async function connectionOf(clientId: string) {
  const res = await app.admin(`/admin/connections?organizationId=${org.organizationId}`);
  return res.body.connections.filter((c: { clientId: string; revokedAt: string | null }) => c.clientId === clientId && c.revokedAt === null);
}

/** Refresh on expiry, then operator revocation followed by re-authorisation the SDK starts itself. */
async function refreshAndReauthorise(t: ExecutionContext, provider: MemoryProvider, client: Client, transport: StreamableHTTPClientTransport) {
  const before = (await provider.tokens())!;
  time.advance(61 * 60_000);
  try {
    // The access token has expired: a 401, a refresh_token grant inside the SDK, and the call succeeds.
    const listed = await client.callTool({ name: 'list_purchases', arguments: {} });
    t.true(structured(listed).purchases.length >= 1);
  } finally {
    time.advance(-61 * 60_000);
  }
  const after = (await provider.tokens())!;
  t.not(after.access_token, before.access_token);
  t.not(after.refresh_token, before.refresh_token, 'the refresh token rotated');
  t.is(provider.authorizationUrls.length, 1, 'no person was needed for the refresh');

  const clientId = String((await provider.clientInformation())!.client_id);
  const [connection] = await connectionOf(clientId);
  t.is((await app.admin(`/admin/connections/${connection.id}`, { method: 'DELETE' })).status, 200);
  // The next call is a 401; the SDK tries its refresh token (refused: the connection is revoked),
  // drops its tokens and starts a new authorization on its own.
  await t.throwsAsync(client.callTool({ name: 'list_purchases', arguments: {} }), { instanceOf: UnauthorizedError });
  t.is(provider.authorizationUrls.length, 2, 'the client asked the person to authorise again');
  const { code } = await personAllows(t, provider);
  await transport.finishAuth(code);
  const again = await client.callTool({ name: 'check_purchase', arguments: { merchant: 'Staples', amountMinor: '500', reason: 'Pens' } });
  t.is(structured(again).simulatedDecision.outcome, 'APPROVED');
  const [renewed] = await connectionOf(clientId);
  t.not(renewed.id, connection.id, 'a new connection');
}

test.serial('the SDK client with a client ID metadata document: discovery, sign-in, consent, every tool, refresh, revocation and re-authorisation', async (t) => {
  const provider = new MemoryProvider(`${metadataHost.origin}/client.json`);
  const { client, transport, consentHtml } = await connectThroughSdk(t, provider);
  t.is((await provider.clientInformation())!.client_id, `${metadataHost.origin}/client.json`, 'no registration: the document URL is the client_id');
  t.regex(consentHtml, /<h1>Allow SDK client \(metadata document\) to act as an agent\?<\/h1>/);
  t.false(consentHtml.includes('unverified'), 'a document is vouched for by its host');
  t.true(metadataHost.requests.some((r) => r.path === '/client.json'), 'the service fetched the document over HTTPS');
  const { submittedVia } = await everyTool(t, client, 'cimd-1');
  t.is(submittedVia.application, 'SDK client (metadata document)');
  await refreshAndReauthorise(t, provider, client, transport);
  await client.close();
});

test.serial('the SDK client without clientMetadataUrl registers dynamically and does the same', async (t) => {
  const provider = new MemoryProvider();
  const { client, transport, consentHtml } = await connectThroughSdk(t, provider);
  const info = (await provider.clientInformation())!;
  t.regex(info.client_id, new RegExp(`^${app.url}/oauth/clients/[0-9a-f-]{36}$`));
  t.false('client_secret' in info && info.client_secret !== undefined, 'a public client: no secret');
  t.regex(consentHtml, /<dt>Application<\/dt><dd>SDK client \(registered\) <strong>\(unverified\)<\/strong><\/dd>/);
  const { submittedVia } = await everyTool(t, client, 'dcr-1');
  t.is(submittedVia.application, 'SDK client (registered)');
  await refreshAndReauthorise(t, provider, client, transport);

  // The operator revokes the registration itself: its connection ends, and it cannot start again.
  const id = info.client_id.split('/').at(-1)!;
  const revoked = await app.admin(`/admin/oauth-clients/${id}`, { method: 'DELETE' });
  t.is(revoked.status, 200);
  t.is(revoked.body.connectionsRevoked, 1);
  await t.throwsAsync(client.callTool({ name: 'list_purchases', arguments: {} }), { instanceOf: UnauthorizedError });
  const refused = await fetch(provider.authorizationUrls.at(-1)!);
  t.is(refused.status, 400);
  t.regex(await refused.text(), /could not be verified/);
  await client.close();
});
