// The MCP endpoint with the SDK's own Client and Streamable HTTP transport: tools listed by scope,
// each tool's results and errors (MCP tool errors carrying docs/reference/contract.md codes), list_purchases paging,
// and the HTTP-level protections (401 challenge, audience, Origin, insufficient_scope challenge and
// the SDK client's step-up through it).
import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, ListToolsResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { TestApp } from '../helpers/app.ts';
import { acmeManifest } from '../helpers/fixtures.ts';
import { Client as DashboardClient, dashboardPurchase } from '../helpers/dashboard.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { mcpClient, toolError } from '../helpers/mcp.ts';
import { credentialDigest } from '../../src/identity/oauth/credentials.ts';
import { REDIRECT_URI, connect, fetchJson, hiddenField, setUpOrg, signInToConsent, startConnectionsApp, startMetadataServer, type MetadataServer, type Org } from '../oauth/helpers.ts';

let app: TestApp;
let meta: MetadataServer;
let org: Org;
let full: Awaited<ReturnType<typeof connect>>;
let readOnly: Awaited<ReturnType<typeof connect>>;
let pager: Awaited<ReturnType<typeof connect>>;

test.before(async () => {
  app = await startConnectionsApp();
  meta = await startMetadataServer('MCP Tester');
  org = await setUpOrg(app);
  full = await connect(app, org, meta.clientId);
  readOnly = await connect(app, org, meta.clientId, { scope: 'purchase:read' });
  pager = await connect(app, org, meta.clientId, { scope: 'purchase:read purchase:request' });
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

const client = (token: string) => mcpClient(app.url, token);
const errorOf = toolError;

const rpc = (body: unknown, headers: Record<string, string> = {}) =>
  fetchJson(`${app.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });

test('only the tools the scopes allow are listed', async (t) => {
  const c = await client(readOnly.access_token);
  t.deepEqual((await c.listTools()).tools.map((x) => x.name).sort(), ['get_purchase', 'list_purchases']);
  // Calling one the scopes do not reach is an insufficient_scope challenge naming the scopes to ask for.
  const res = await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'request_purchase', arguments: {} } }, { authorization: `Bearer ${readOnly.access_token}` });
  t.is(res.status, 403);
  t.is((await res.json()).error.code, 'insufficient_scope');
  const challenge = res.headers.get('www-authenticate') ?? '';
  t.regex(challenge, /error="insufficient_scope"/);
  t.regex(challenge, /scope="purchase:read purchase:request"/);
  t.regex(challenge, /resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/);
  await c.close();
});

// MCP 2025-11-25, Scope Challenge Handling: the SDK asks for exactly the challenge's scope, so a
// challenge naming only the missing scope would trade the connection's scopes for it.
test('stepping up with the SDK client asks for the scopes held as well as the one missing', async (t) => {
  const asked: URL[] = [];
  let tokens: OAuthTokens = { access_token: readOnly.access_token, token_type: 'Bearer' };
  let verifier = '';
  const provider: OAuthClientProvider = {
    redirectUrl: REDIRECT_URI,
    clientMetadata: { redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' },
    clientInformation: () => ({ client_id: meta.clientId }),
    tokens: () => tokens,
    saveTokens: (saved) => void (tokens = saved),
    redirectToAuthorization: (url) => void asked.push(url),
    saveCodeVerifier: (saved) => void (verifier = saved),
    codeVerifier: () => verifier,
  };
  const c = new Client({ name: 'mcp-step-up', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { authProvider: provider });
  await c.connect(transport);
  const purchase = { merchant: 'Step Up Supplies', amountMinor: '100', reason: 'Pens' };
  await t.throwsAsync(c.callTool({ name: 'request_purchase', arguments: purchase }), { instanceOf: UnauthorizedError });
  t.is(asked.length, 1, 'the 403 challenge started a new authorization');
  t.is(asked[0].searchParams.get('scope'), 'purchase:read purchase:request');

  // The person allows it; the client keeps reading and may now request.
  const { browser, consentHtml } = await signInToConsent(app, org, asked[0].href);
  const approved = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: org.agents.buyer.id, decision: 'approve' });
  await transport.finishAuth(new URL(approved.headers.get('location')!).searchParams.get('code')!);
  t.deepEqual((await c.listTools()).tools.map((x) => x.name).sort(), ['get_purchase', 'list_purchases', 'request_purchase']);
  await c.close();
});

test('list_purchases also lists what a person bought for the connection\'s agent on the dashboard, in order, as get_purchase reads it', async (t) => {
  const h = await setUpOrg(app, 'listing');
  const mine = await connect(app, h, meta.clientId, { scope: 'purchase:read purchase:request' });
  const elsewhere = await connect(app, h, meta.clientId, { scope: 'purchase:read', agentId: h.agents.travel.id });
  const c = await client(mine.access_token);
  const request = async (merchant: string) => ((await c.callTool({ name: 'request_purchase', arguments: { merchant, amountMinor: '100', reason: 'Supplies' } })).structuredContent as any).purchaseRequest.id as string;
  const person = new DashboardClient(app.url);
  await person.signIn(h.email);
  const first = await request('Shop A');
  const bought = await dashboardPurchase(person, h.agents.buyer.id, { merchant: 'Desk Co', amount: '3.00' });
  const last = await request('Shop B');
  const listed: string[] = [];
  let cursor: string | undefined;
  do {
    const page = (await c.callTool({ name: 'list_purchases', arguments: { limit: 1, ...(cursor ? { cursor } : {}) } })).structuredContent as any;
    listed.push(...page.purchases.map((p: any) => p.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  t.deepEqual(listed, [last, bought, first]);
  t.is(((await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: bought } })).structuredContent as any).purchase.origin, 'DASHBOARD');
  // A connection to another agent of the organisation lists none of them.
  const other = await client(elsewhere.access_token);
  t.deepEqual(((await other.callTool({ name: 'list_purchases', arguments: {} })).structuredContent as any).purchases, []);
  await Promise.all([c.close(), other.close()]);
});

test('request_purchase, get_purchase and list_purchases: newest first, paged by cursor', async (t) => {
  const c = await client(pager.access_token);
  const ids: string[] = [];
  for (const [i, amount] of ['100', '200', '300', '25000'].entries()) {
    const r = await c.callTool({ name: 'request_purchase', arguments: { merchant: `Shop ${i}`, amountMinor: amount, reason: 'Supplies', metadata: { order: i } } });
    t.falsy(r.isError);
    ids.push((r.structuredContent as any).purchaseRequest.id);
  }
  const big = await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: ids[3] } });
  t.is((big.structuredContent as any).purchase.status, 'PENDING_APPROVAL');
  t.is((big.structuredContent as any).purchase.approval.isPending, true);
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = (await c.callTool({ name: 'list_purchases', arguments: { limit: 3, ...(cursor ? { cursor } : {}) } })).structuredContent as any;
    seen.push(...page.purchases.map((p: any) => p.id));
    t.is(page.hasMore, page.nextCursor !== null);
    cursor = page.nextCursor ?? undefined;
    pages++;
  } while (cursor);
  t.is(pages, 2);
  t.deepEqual(seen, [...ids].reverse());
  // Another connection sees none of them, and cannot read them.
  const other = await client(readOnly.access_token);
  t.deepEqual(((await other.callTool({ name: 'list_purchases', arguments: {} })).structuredContent as any).purchases, []);
  t.is(errorOf(await other.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: ids[0] } })).code, 'not_found');
  await Promise.all([c.close(), other.close()]);
});

test('request_purchase honours idempotencyKey: same details replay, different details conflict', async (t) => {
  const c = await client(full.access_token);
  const args = { merchant: 'Staples', amountMinor: 999, reason: 'Pens', idempotencyKey: 'mcp-key-1' };
  const first = (await c.callTool({ name: 'request_purchase', arguments: args })).structuredContent as any;
  const again = (await c.callTool({ name: 'request_purchase', arguments: args })).structuredContent as any;
  t.false(first.replayed);
  t.true(again.replayed);
  t.is(again.purchaseRequest.id, first.purchaseRequest.id);
  // The decision's signed receipt (docs/integrate/receipts.md), the same on the replay, and the one the purchase lists.
  t.regex(first.receipt, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  t.is(again.receipt, first.receipt);
  const receipt = JSON.parse(Buffer.from(first.receipt.split('.')[1], 'base64url').toString());
  t.is(receipt.purchaseRequestId, first.purchaseRequest.id);
  t.is(receipt.decisionId, first.decision.id);
  t.is(errorOf(await c.callTool({ name: 'request_purchase', arguments: { ...args, amountMinor: 1000 } })).code, 'idempotency_key_reuse');
  const readback = (await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: first.purchaseRequest.id } })).structuredContent as any;
  t.is(readback.purchase.origin, 'MCP');
  await c.close();
});

test('tool errors carry docs/reference/contract.md codes', async (t) => {
  const c = await client(full.access_token);
  const blocked = (await c.callTool({ name: 'check_purchase', arguments: { merchant: 'Shady Goods Ltd', amountMinor: '100', reason: 'Cheap' } })).structuredContent as any;
  t.is(blocked.simulatedDecision.outcome, 'REJECTED', 'a refusal is an answer, not an error');
  const zero = errorOf(await c.callTool({ name: 'check_purchase', arguments: { merchant: 'Staples', amountMinor: '0', reason: 'Pens' } }));
  t.is(zero.code, 'invalid_request');
  t.is(zero.issues?.[0].code, 'AMOUNT_NOT_POSITIVE');
  const unknownField = errorOf(await c.callTool({ name: 'check_purchase', arguments: { merchant: 'Staples', amountMinor: '5', reason: 'Pens', agentId: org.agents.travel.id } }));
  t.is(unknownField.code, 'invalid_request');
  t.deepEqual(unknownField.issues?.map((i) => [i.path, i.code]), [['agentId', 'UNKNOWN_FIELD']]);
  const badAmount = errorOf(await c.callTool({ name: 'check_purchase', arguments: { merchant: 'Staples', amountMinor: '1.50', reason: 'Pens' } }));
  t.is(badAmount.issues?.[0].path, 'amountMinor');
  t.is(errorOf(await c.callTool({ name: 'list_purchases', arguments: { limit: 51 } })).code, 'invalid_request');
  t.is(errorOf(await c.callTool({ name: 'list_purchases', arguments: { cursor: 'bm90LWEtY3Vyc29y' } })).issues?.[0].code, 'INVALID_CURSOR');
  t.is(errorOf(await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: 'nope' } })).code, 'not_found');
  await c.close();
});

test('a merchant holding a control character or line break is refused by the tools as on /v1, and nothing is requested', async (t) => {
  const c = await client(full.access_token);
  const merchants = ['Staples\r\nX-Forged: yes', 'Sta\u0000ples', 'Staples\u2028'];
  for (const merchant of merchants) {
    for (const name of ['check_purchase', 'request_purchase']) {
      const refused = errorOf(await c.callTool({ name, arguments: { merchant, amountMinor: '100', reason: 'Pens' } }));
      t.is(refused.code, 'invalid_request', name);
      t.deepEqual(refused.issues?.map((i) => [i.path, i.code]), [['merchant', 'CONTROL_CHARACTER']], `${name} ${JSON.stringify(merchant)}`);
    }
  }
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: { $in: merchants } }), 0);
  await c.close();
});

test('the merchant schema tools/list gives refuses what the tools refuse: control characters and line breaks', async (t) => {
  const c = await client(full.access_token);
  const { tools } = await c.listTools();
  for (const name of ['check_purchase', 'request_purchase']) {
    const merchant = (tools.find((x) => x.name === name)!.inputSchema.properties as Record<string, { pattern?: string }>).merchant;
    t.truthy(merchant.pattern, name);
    const pattern = new RegExp(merchant.pattern!, 'u');
    for (const refused of ['Staples\r\nX-Forged: yes', 'Sta\u0000ples', 'Staples\u2028', 'Tab\tShop', 'C1\u0085Shop']) t.false(pattern.test(refused), `${name} ${JSON.stringify(refused)}`);
    for (const accepted of ['Staples', 'Deutsche Bahn', 'Zero\u200Bwidth', 'Café Müller']) t.true(pattern.test(accepted), `${name} ${JSON.stringify(accepted)}`);
  }
  await c.close();
});

// Serial: it briefly changes a token's audience, which must not disturb the other tests.
test.serial('HTTP protections: 401 challenge, audience, Origin, stateless GET', async (t) => {
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const none = await rpc(list);
  t.is(none.status, 401);
  t.regex(none.headers.get('www-authenticate') ?? '', /^Bearer scope="purchase:check purchase:read purchase:request", resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"$/);
  const bad = await rpc(list, { authorization: `Bearer cmp_oat_${'x'.repeat(43)}` });
  t.is(bad.status, 401);
  t.is((await bad.json()).error.code, 'invalid_token');
  t.regex(bad.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token", scope="purchase:check purchase:read purchase:request", resource_metadata="/);
  const refresh = await rpc(list, { authorization: `Bearer ${full.refresh_token}` });
  t.is(refresh.status, 401, 'a refresh token is not a bearer credential');
  t.is((await refresh.json()).error.code, 'invalid_token');
  const apiKey = await rpc(list, { authorization: `Bearer ${org.keys['buyer-key']}` });
  t.is(apiKey.status, 401, 'API keys do not reach MCP');

  // A token whose audience is not this endpoint (RFC 8707) is not valid here.
  const tokens = app.store.db.collection<{ _id: string; resource: string }>('oauth_access_tokens');
  await tokens.updateOne({ _id: credentialDigest(readOnly.access_token) }, { $set: { resource: 'https://other.example/mcp' } });
  t.is((await rpc(list, { authorization: `Bearer ${readOnly.access_token}` })).status, 401);
  await tokens.updateOne({ _id: credentialDigest(readOnly.access_token) }, { $set: { resource: `${app.url}/mcp` } });

  const evil = await rpc(list, { authorization: `Bearer ${full.access_token}`, origin: 'https://evil.example' });
  t.is(evil.status, 403);
  t.is((await evil.json()).error.code, 'origin_not_allowed');
  const own = await rpc(list, { authorization: `Bearer ${full.access_token}`, origin: app.url });
  t.is(own.status, 200);
  t.is((await own.json()).result.tools.length, 4);
  const get = await fetchJson(`${app.url}/mcp`, { headers: { authorization: `Bearer ${full.access_token}`, accept: 'text/event-stream' } });
  t.is(get.status, 405);

  const prm = await (await fetchJson(`${app.url}/.well-known/oauth-protected-resource/mcp`)).json();
  t.deepEqual(prm.scopes_supported, ['purchase:check', 'purchase:read', 'purchase:request']);
  t.is(prm.resource, `${app.url}/mcp`);
  // RFC 9728 3.3: the root document's resource is the URL it was built from, the service itself.
  const root = await (await fetchJson(`${app.url}/.well-known/oauth-protected-resource`)).json();
  t.is(root.resource, app.url);
  t.deepEqual(root.authorization_servers, [app.url]);
});

test('an access token only counts in the Authorization header: in the query or the body it is not read (401, no error code)', async (t) => {
  // The protected resource metadata says bearer_methods_supported ["header"]; RFC 6750 2.3's query form
  // would put the token in logs and Referer headers (RFC 9700 4.3.2).
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const inQuery = await fetchJson(`${app.url}/mcp?access_token=${full.access_token}`, {
    method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(list),
  });
  const inBody = await fetchJson(`${app.url}/mcp`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json, text/event-stream' }, body: `access_token=${full.access_token}`,
  });
  for (const res of [inQuery, inBody]) {
    t.is(res.status, 401);
    t.regex(res.headers.get('www-authenticate') ?? '', /^Bearer scope="[^"]+", resource_metadata="[^"]+"$/, 'no error code: no credential was sent (RFC 6750 3.1)');
  }
  const v1 = await fetchJson(`${app.url}/v1/simulations/current-policies?access_token=${full.access_token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.is(v1.status, 401);
  t.is((await v1.json()).error.code, 'unauthorized');
});

test('two Authorization lines are 401 invalid_token with the challenge, not served as the first one', async (t) => {
  // Node keeps the first line and drops the rest: a proxy reading the last would disagree about who
  // calls (docs/reference/decisions.md). Refused even when both lines carry the same valid token.
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const send = (...lines: string[]) =>
    rawRequest(app.url, 'POST', '/mcp', { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: lines as unknown as string }, body);
  const token = `Bearer ${full.access_token}`;
  t.is((await send(token)).status, 200);
  for (const second of [token, `Bearer ${readOnly.access_token}`, 'Bearer cmp_oat_' + 'x'.repeat(43)]) {
    const res = await send(token, second);
    t.is(res.status, 401);
    t.is(JSON.parse(res.text).error.code, 'invalid_token');
    t.regex(String(res.headers['www-authenticate']), /^Bearer error="invalid_token", scope="purchase:check purchase:read purchase:request", resource_metadata="/);
  }
});

// JSON.parse makes `__proto__` an ordinary own key, as in any JSON a client sends; /v1 refuses it
// (docs/reference/decisions.md: UNKNOWN_FIELD where the schema is closed, RESERVED_KEY inside metadata), and so do the tools.
test('a __proto__ key in tool arguments is refused as on /v1, not dropped', async (t) => {
  const c = await client(full.access_token);
  const purchase = { merchant: 'Proto Paper', amountMinor: '5', reason: 'm' };
  const inMetadata = errorOf(await c.callTool({ name: 'request_purchase', arguments: { ...purchase, metadata: JSON.parse('{"__proto__":{"x":1}}') } }));
  t.is(inMetadata.code, 'invalid_request');
  t.deepEqual(inMetadata.issues?.map((i) => [i.path, i.code]), [['metadata.__proto__', 'RESERVED_KEY']]);
  const topLevel = errorOf(await c.callTool({ name: 'request_purchase', arguments: { ...purchase, ...JSON.parse('{"__proto__":{"x":1}}') } }));
  t.deepEqual(topLevel.issues?.map((i) => [i.path, i.code]), [['__proto__', 'UNKNOWN_FIELD']]);
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: 'Proto Paper' }), 0);
  for (const [name, args] of [['check_purchase', purchase], ['list_purchases', {}], ['get_purchase', { purchaseRequestId: crypto.randomUUID() }]] as const) {
    const refused = errorOf(await c.callTool({ name, arguments: { ...args, ...JSON.parse('{"__proto__":{"x":1}}') } }));
    t.deepEqual(refused.issues?.map((i) => [i.path, i.code]), [['__proto__', 'UNKNOWN_FIELD']], name);
  }
  await c.close();
});

test('an amount written as a fraction is refused by the tools as on /v1, though it parses to a whole number', async (t) => {
  const auth = { authorization: `Bearer ${full.access_token}` };
  for (const name of ['check_purchase', 'request_purchase']) {
    const res = await fetchJson(`${app.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth },
      body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}","arguments":{"merchant":"Fraction Paper","amountMinor":0.99999999999999999,"reason":"m"}}}`,
    });
    const body = await res.json();
    t.deepEqual(errorOf(body.result).issues?.map((i) => [i.path, i.code]), [['amountMinor', 'AMOUNT_NOT_INTEGER']], name);
  }
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: 'Fraction Paper' }), 0);
});

test('an integer amount past 2^53-1, even beyond a double\'s range, is judged by its value by the tools, as on /v1', async (t) => {
  const auth = { authorization: `Bearer ${full.access_token}` };
  for (const name of ['check_purchase', 'request_purchase']) {
    for (const [amount, code] of [['99999999999999999999', 'AMOUNT_TOO_LARGE'], ['9'.repeat(309), 'AMOUNT_TOO_LARGE'], [`-${'9'.repeat(309)}`, 'AMOUNT_NOT_POSITIVE'], ['1e400', 'AMOUNT_NOT_INTEGER']]) {
      const res = await fetchJson(`${app.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth },
        body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}","arguments":{"merchant":"Huge Paper","amountMinor":${amount},"reason":"m"}}}`,
      });
      const body = await res.json();
      t.deepEqual(errorOf(body.result).issues?.map((i) => [i.path, i.code]), [['amountMinor', code]], `${name} ${amount.slice(0, 8)}`);
    }
  }
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: 'Huge Paper' }), 0);
});

// Messages no real client sends: tools/call params the protocol's own schema refuses.
test('malformed tools/call params are JSON-RPC -32602 Invalid params, not -32603; a batch is judged per message', async (t) => {
  const auth = { authorization: `Bearer ${full.access_token}` };
  for (const params of [{ name: 'check_purchase', arguments: null }, { name: 'check_purchase', arguments: [] }, { name: { a: 1 } }, undefined]) {
    const res = await rpc({ jsonrpc: '2.0', id: 9, method: 'tools/call', params }, auth);
    t.is(res.status, 200);
    const body = await res.json();
    t.is(body.id, 9);
    t.is(body.error.code, -32602, JSON.stringify(params));
    t.regex(body.error.message, /^Invalid params/);
    t.notRegex(body.error.message, /expected|\n/, 'no validator dump');
  }
  // Any other request the protocol knows, with params its schema refuses, is -32602 too.
  for (const message of [{ jsonrpc: '2.0', id: 10, method: 'tools/list', params: { cursor: 5 } }, { jsonrpc: '2.0', id: 11, method: 'tools/list', params: { cursor: ['a'] } }]) {
    const res = await rpc(message, auth);
    const body = await res.json();
    t.is(body.error?.code, -32602, JSON.stringify(message) + ' ' + JSON.stringify(body));
    t.notRegex(body.error.message, /expected|\n/, 'no validator dump');
  }
  // In a batch (no MCP-Protocol-Version: 2025-03-26, which has batches) each message is judged on its own
  // (a __proto__ one too); the others are answered as usual.
  const batch = await rpc([
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_purchases', arguments: [] } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_purchases', arguments: JSON.parse('{"__proto__":{"x":1}}') } },
    { jsonrpc: '2.0', id: 3, method: 'tools/list' },
  ], auth);
  const answers = await batch.json();
  t.is(answers.find((a: any) => a.id === 1).error.code, -32602);
  t.is(errorOf(answers.find((a: any) => a.id === 2).result).issues?.[0].code, 'UNKNOWN_FIELD');
  t.is(answers.find((a: any) => a.id === 3).result.tools.length, 4);
});

test('JSON that is no JSON-RPC message is -32600 Invalid Request, not -32700 Parse error; so is an empty batch', async (t) => {
  const auth = { authorization: `Bearer ${full.access_token}` };
  const cases: Array<[unknown, string | number | null]> = [
    [{}, null],
    [{ jsonrpc: '2.0', id: 1 }, 1],
    [{ jsonrpc: '1.0', id: 2, method: 'tools/list' }, 2],
    [{ jsonrpc: '2.0', id: { a: 1 }, method: 'tools/list' }, null],
    [{ jsonrpc: '2.0', id: 1.5, method: 'tools/list' }, null],
    [{ jsonrpc: '2.0', id: 'p', method: 'tools/list', params: [] }, 'p'],
    [[{ jsonrpc: '2.0', id: 3, method: 'tools/list' }, 7], null],
    [null, null],
    ['tools/list', null],
    [[], null],
  ];
  for (const [body, id] of cases) {
    const res = await rpc(body, auth);
    t.is(res.status, 400, JSON.stringify(body));
    const answer = await res.json();
    t.deepEqual({ code: answer.error?.code, id: answer.id, jsonrpc: answer.jsonrpc }, { code: -32600, id, jsonrpc: '2.0' }, `${JSON.stringify(body)}: ${JSON.stringify(answer)}`);
    t.regex(answer.error.message, /^Invalid Request/);
  }
  // Text that is not JSON is still the service's malformed_json.
  const broken = await fetchJson(`${app.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth }, body: '{"jsonrpc":' });
  t.is(broken.status, 400);
  t.is((await broken.json()).error.code, 'malformed_json');
});

// MCP tools, error handling (2025-06-18 and 2025-11-25): an unknown tool is a protocol error, -32602.
test('an unknown tool is JSON-RPC -32602 Unknown tool, not a tool result; names of object properties too', async (t) => {
  const c = await client(full.access_token);
  for (const name of ['no_such_tool', 'toString', '__proto__', 'constructor']) {
    const error = await t.throwsAsync(c.callTool({ name, arguments: {} }), { instanceOf: McpError }, name);
    t.is(error?.code, ErrorCode.InvalidParams, name);
    t.is(error?.message, `MCP error -32602: Unknown tool: ${name}`);
  }
  await c.close();
});

test('a purchase through a connection counts as made by the person who authorised it: they cannot approve it, another approver can', async (t) => {
  // A second approver joins the organisation (the manifest creates people by handle).
  const manifest = acmeManifest('acme');
  const joined = await app.admin('/admin/manifests', { body: { ...manifest, people: [...manifest.people, { handle: 'ben', name: 'Ben Approver', email: 'ben@acme.example' }] } });
  t.is(joined.status, 200, joined.text);
  const c = await client(full.access_token);
  const asked = (await c.callTool({ name: 'request_purchase', arguments: { merchant: 'Standing Desks Ltd', amountMinor: '30000', reason: 'A desk' } })).structuredContent as any;
  t.is(asked.decision.outcome, 'REQUIRES_APPROVAL');
  const id = asked.purchaseRequest.id;
  const own = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(own.status, 403);
  t.is(own.body.error.code, 'self_approval_not_permitted');
  const other = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'ben' } });
  t.is(other.status, 200, other.text);
  t.is(other.body.purchase.status, 'APPROVED');
  t.deepEqual(other.body.purchase.approval.answers.map((a: any) => a.name), ['Ben Approver']);
  await c.close();
});

test('get_purchase gives the purchase\'s receipts, so that the receipt of a person\'s answer reaches the agent too', async (t) => {
  const c = await client(full.access_token);
  const held = (await c.callTool({ name: 'request_purchase', arguments: { merchant: 'Desks Ltd', amountMinor: '30000', reason: 'a desk' } })).structuredContent as any;
  t.is(held.decision.outcome, 'REQUIRES_APPROVAL');
  // Ana authorised this connection: she may not approve what it asked for, but may reject it.
  const answered = await app.admin(`/admin/purchase-requests/${held.purchaseRequest.id}/answer`, { body: { answer: 'REJECT', person: 'ana', comment: null } });
  t.is(answered.status, 200, answered.text);
  const read = (await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: held.purchaseRequest.id } })).structuredContent as any;
  t.is(read.purchase.status, 'REJECTED');
  t.is(read.receipts.length, 2);
  t.is(read.receipts[0].receipt, held.receipt);
  t.is(read.receipts[1].receipt, answered.headers.get('decision-receipt'));
  const payload = JSON.parse(Buffer.from(read.receipts[1].receipt.split('.')[1], 'base64url').toString());
  t.like(payload, { seq: read.receipts[1].seq, kind: 'APPROVAL_REEVALUATION', outcome: 'REJECTED', decisionId: read.purchase.decision.id });
  // The same list over REST with the connection's token (purchase:read).
  const rest = await app.request(`/v1/purchase-requests/${held.purchaseRequest.id}/receipts`, { key: full.access_token });
  t.is(rest.status, 200, rest.text);
  t.deepEqual(rest.body.receipts, read.receipts);
  await c.close();
});

// MCP 2025-11-25, tasks: a server that declares no `tasks` capability (this one) must process a
// task-augmented request normally, ignoring `task`; the SDK's server answered -32603 Internal error.
test('a task-augmented tools/call is processed normally, as the server declares no tasks capability', async (t) => {
  const c = await client(full.access_token);
  t.is(c.getServerCapabilities()?.tasks, undefined);
  const asked = await c.callTool({ name: 'request_purchase', arguments: { merchant: 'Task Paper', amountMinor: '120', reason: 'Pens' } }, undefined, { task: { ttl: 60_000 } });
  t.falsy(asked.isError, JSON.stringify(asked));
  const id = (asked.structuredContent as any).purchaseRequest.id;
  t.is((asked.structuredContent as any).decision.outcome, 'APPROVED');
  const read = await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: id } }, undefined, { task: { ttl: 60_000 } });
  t.is((read.structuredContent as any).purchase.id, id);
  await c.close();
});

// An assistant sees the reason /v1 gives for the same mistake (docs/reference/decisions.md, amount range and
// amounts written as JSON numbers): zod said INVALID_ARGUMENT for each, and its int() stopped at 2^53-1.
test('the tools give /v1\'s issue codes for the same mistake, all at once: amount too large, field required or unknown, too long, out of range, wrong type or form', async (t) => {
  const amount = (literal: string) => `{"merchant":"Huge Amounts Ltd","amountMinor":${literal},"reason":"x"}`;
  const bodies = [
    ...['9007199254740993', '9007199254740992', '12345678901234567890123456789', '-9007199254740993', '1.5', '1e400', 'true', '"12a"', '"99999999999999999999"'].map(amount),
    '{"amountMinor":"5"}',
    `{"merchant":"${'m'.repeat(201)}","amountMinor":"5","reason":"${'r'.repeat(2001)}","category":"${'c'.repeat(101)}"}`,
    '{"merchant":5,"amountMinor":"5","reason":"x","currency":"eur","merchantDomain":7}',
    // An unknown field is listed with the other problems, not alone.
    '{"amountMinor":"5","reason":"x","zzz":1,"currency":"eur"}',
  ];
  for (const body of bodies) {
    const rest = await app.request('/v1/purchase-requests', { key: full.access_token, raw: body, headers: { 'content-type': 'application/json' } });
    t.is(rest.status, 400, body);
    const expected = rest.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]);
    if (/"amountMinor":(9007199254740993|12345678901234567890123456789),/.test(body)) t.deepEqual(expected, [['amountMinor', 'AMOUNT_TOO_LARGE']], body);
    for (const name of ['check_purchase', 'request_purchase']) {
      const res = await fetchJson(`${app.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${full.access_token}` },
        body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${body}}}`,
      });
      const refused = errorOf((await res.json()).result);
      t.is(refused.code, 'invalid_request', `${name} ${body}`);
      t.deepEqual(refused.issues?.map((i) => [i.path, i.code]), expected, `${name} ${body}`);
    }
  }
  t.is(await app.store.db.collection('purchases').countDocuments({ reason: 'x' }), 0);
  // An idempotencyKey /v1 would refuse in its header is refused under its own name, with the header's code.
  const c = await client(full.access_token);
  // The other tools' arguments get /v1's codes too, never zod's INVALID_ARGUMENT.
  for (const [name, args, expected] of [
    ['list_purchases', { limit: 51 }, [['limit', 'OUT_OF_RANGE']]],
    ['list_purchases', { limit: '5', cursor: 5 }, [['limit', 'INVALID_TYPE'], ['cursor', 'INVALID_TYPE']]],
    ['get_purchase', {}, [['purchaseRequestId', 'REQUIRED']]],
    ['get_purchase', { y: 1 }, [['purchaseRequestId', 'REQUIRED'], ['y', 'UNKNOWN_FIELD']]],
    ['get_purchase', { purchaseRequestId: 'x'.repeat(101) }, [['purchaseRequestId', 'TOO_LONG']]],
  ] as const) {
    t.deepEqual(errorOf(await c.callTool({ name, arguments: args })).issues?.map((i) => [i.path, i.code]), expected, `${name} ${JSON.stringify(args)}`);
  }
  const badKey = errorOf(await c.callTool({ name: 'request_purchase', arguments: { merchant: 'Key Paper', amountMinor: '5', reason: 'm', idempotencyKey: 'é' } }));
  t.deepEqual(badKey.issues?.map((i) => [i.path, i.code]), [['idempotencyKey', 'INVALID_IDEMPOTENCY_KEY']]);
  // The listed schema is still /v1's: what an amount is, and what is required.
  const listed = (await c.listTools()).tools.find((x) => x.name === 'request_purchase')!.inputSchema;
  t.deepEqual((listed.properties as any).amountMinor.anyOf, [{ type: 'string', pattern: '^-?\\d+$' }, { type: 'integer' }]);
  t.deepEqual(listed.required, ['merchant', 'amountMinor', 'reason']);
  await c.close();
});

// MCP 2025-11-25 keeps `_meta` inside params: a `_meta` that is not an object is an invalid parameter of
// a well-formed request (JSON-RPC 2.0 section 5.1, -32602), not an invalid request (-32600, as it was).
test('a params._meta that is not an object is -32602 Invalid params, answered to the request it came with', async (t) => {
  const c = await client(full.access_token);
  for (const [method, params] of [['tools/list', { _meta: 5 }], ['ping', { _meta: 'x' }], ['tools/list', { _meta: { progressToken: {} } }], ['tools/call', { name: 'request_purchase', arguments: { merchant: 'Meta Paper', amountMinor: '5', reason: 'm' }, _meta: [] }]] as const) {
    const error = await t.throwsAsync(c.request({ method, params } as any, ListToolsResultSchema), { instanceOf: McpError }, method);
    t.is(error?.code, ErrorCode.InvalidParams, `${method} ${JSON.stringify(params)}`);
    t.regex(error?.message ?? '', /Invalid params at params\._meta/);
  }
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: 'Meta Paper' }), 0);
  // A notification is never answered (JSON-RPC 2.0 section 4.1): accepted and ignored, as any the server has no use for.
  const note = await rpc({ jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: 5 } }, { authorization: `Bearer ${full.access_token}` });
  t.is(note.status, 202);
  t.is(await note.text(), '');
  await c.close();
});

// MCP 2025-06-18 removed JSON-RPC batches; 2025-03-26, which the server still negotiates, requires them.
test('a batch is refused under MCP 2025-06-18 and later, before anything runs; answered under 2025-03-26', async (t) => {
  const batch = [
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'request_purchase', arguments: { merchant: 'Batch Paper', amountMinor: '5', reason: 'm' } } },
    { jsonrpc: '2.0', id: 2, method: 'ping' },
  ];
  for (const [token, version] of [[full.access_token, '2025-11-25'], [full.access_token, '2025-06-18'], [readOnly.access_token, '2025-11-25']]) {
    const res = await rpc(batch, { authorization: `Bearer ${token}`, 'mcp-protocol-version': version });
    t.is(res.status, 400, version);
    const answer = await res.json();
    t.deepEqual({ jsonrpc: answer.jsonrpc, id: answer.id, code: answer.error?.code }, { jsonrpc: '2.0', id: null, code: -32600 }, JSON.stringify(answer));
    t.regex(answer.error.message, /^Invalid Request: MCP \d{4}-\d{2}-\d{2} has no JSON-RPC batches/);
  }
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: 'Batch Paper' }), 0);
  const legacy = await rpc(batch, { authorization: `Bearer ${full.access_token}`, 'mcp-protocol-version': '2025-03-26' });
  t.is(legacy.status, 200);
  t.deepEqual((await legacy.json()).map((a: any) => a.id).sort(), [1, 2]);
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: 'Batch Paper' }), 1);
});

// The transport answers by id: of two requests sharing one, both ran and one was answered.
test('a batch (MCP 2025-03-26) whose requests repeat an id is -32600, and none of it runs', async (t) => {
  const purchase = (id: number | string, merchant: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'request_purchase', arguments: { merchant, amountMinor: '5', reason: 'm' } } });
  const res = await rpc([purchase(7, 'Twin Paper A'), { jsonrpc: '2.0', method: 'notifications/initialized' }, purchase(7, 'Twin Paper B')], { authorization: `Bearer ${full.access_token}`, 'mcp-protocol-version': '2025-03-26' });
  t.is(res.status, 400);
  const answer = await res.json();
  t.deepEqual({ id: answer.id, code: answer.error?.code }, { id: null, code: -32600 });
  t.regex(answer.error.message, /message 3 of the batch repeats the id of an earlier request/);
  t.is(await app.store.db.collection('purchases').countDocuments({ merchant: { $in: ['Twin Paper A', 'Twin Paper B'] } }), 0);
  // 7 and "7" are two ids (JSON-RPC 2.0 compares them as sent): both are answered.
  const distinct = await rpc([purchase(7, 'Twin Paper A'), purchase('7', 'Twin Paper B')], { authorization: `Bearer ${full.access_token}`, 'mcp-protocol-version': '2025-03-26' });
  t.deepEqual((await distinct.json()).map((a: any) => [a.id, a.result.isError ?? false]).sort(), [[7, false], ['7', false]]);
});
