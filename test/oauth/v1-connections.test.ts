// Connection tokens on /v1 (docs/reference/contract.md §5.3): what each scope reaches, oauth_not_permitted elsewhere,
// connection_unauthorized for a revoked connection or a disabled agent, invalid_token for bad or
// expired tokens, and purchases readable only by the credential that submitted them.
import test from 'ava';
import type { TestApp } from '../helpers/app.ts';
import { openApi } from '../helpers/contract.ts';
import { clock, connect, setUpOrg, startConnectionsApp, startMetadataServer, tokenForm, type MetadataServer, type Org } from './helpers.ts';

let app: TestApp;
let meta: MetadataServer;
let org: Org;
let full: Awaited<ReturnType<typeof connect>>;
let other: Awaited<ReturnType<typeof connect>>;
let checkOnly: Awaited<ReturnType<typeof connect>>;
const time = clock();

const purchase = { merchant: 'Staples', amountMinor: '1250', reason: 'Printer paper' };

test.before(async () => {
  app = await startConnectionsApp({ now: time.now });
  meta = await startMetadataServer('Desk Assistant');
  org = await setUpOrg(app);
  full = await connect(app, org, meta.clientId);
  other = await connect(app, org, meta.clientId);
  checkOnly = await connect(app, org, meta.clientId, { scope: 'purchase:check' });
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

test('a connection submits and reads back its purchase; submittedVia names the connection', async (t) => {
  const submitted = await app.request('/v1/purchase-requests', { key: full.access_token, body: purchase, headers: { 'idempotency-key': 'k-1' } });
  t.is(submitted.status, 201);
  const id = submitted.body.purchaseRequest.id;
  const read = await app.request(`/v1/purchase-requests/${id}`, { key: full.access_token });
  t.is(read.status, 200);
  t.is(read.body.purchase.origin, 'API');
  t.is(read.body.purchase.agent.id, org.agents.buyer.id);
  t.deepEqual(read.body.purchase.submittedVia, { type: 'CONNECTION', connectionId: full.connectionId, application: 'Desk Assistant', grantedBy: { name: 'Ana Admin' } });
  const replay = await app.request('/v1/purchase-requests', { key: full.access_token, body: purchase, headers: { 'idempotency-key': 'k-1' } });
  t.is(replay.status, 200);
  t.true(replay.body.replayed);
});

test('a purchase is readable only by the credential that submitted it (404 for everyone else)', async (t) => {
  const mine = (await app.request('/v1/purchase-requests', { key: full.access_token, body: purchase })).body.purchaseRequest.id;
  const byKey = (await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: purchase })).body.purchaseRequest.id;
  // Another connection of the same person, agent and application.
  const cross = await app.request(`/v1/purchase-requests/${mine}`, { key: other.access_token });
  t.is(cross.status, 404);
  t.is(cross.body.error.code, 'not_found');
  // An API key's purchase, even one bound to the same agent.
  t.is((await app.request(`/v1/purchase-requests/${byKey}`, { key: full.access_token })).status, 404);
  // And the other way round.
  t.is((await app.request(`/v1/purchase-requests/${mine}`, { key: org.keys['buyer-key'] })).status, 404);
  t.is((await app.request('/v1/purchase-requests/not-a-uuid', { key: full.access_token })).status, 404);
});

test('purchase:check only: simulations as its agent; submitting, reading or listing receipts is insufficient_scope', async (t) => {
  const sim = await app.request('/v1/simulations/current-policies', { key: checkOnly.access_token, body: purchase });
  t.is(sim.status, 200);
  t.is(sim.body.agent.id, org.agents.buyer.id);
  const withAgent = await app.request('/v1/simulations/current-policies', { key: checkOnly.access_token, body: { ...purchase, agentId: org.agents.travel.id } });
  t.is(withAgent.status, 400);
  t.is(withAgent.body.error.issues[0].code, 'AGENT_ID_NOT_PERMITTED');
  const submit = await app.request('/v1/purchase-requests', { key: checkOnly.access_token, body: purchase });
  t.is(submit.status, 403);
  t.is(submit.body.error.code, 'insufficient_scope');
  // No resource_metadata: /v1 has no protected resource metadata document (RFC 9728 3.3; docs/reference/decisions.md).
  t.is(submit.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="purchase:request"');
  const read = await app.request('/v1/purchase-requests/00000000-0000-7000-8000-000000000000', { key: checkOnly.access_token });
  t.is(read.body.error.code, 'insufficient_scope');
  const receipts = await app.request('/v1/purchase-requests/00000000-0000-7000-8000-000000000000/receipts', { key: checkOnly.access_token });
  t.is(receipts.status, 403);
  t.is(receipts.body.error.code, 'insufficient_scope');
});

test('every other /v1 operation is oauth_not_permitted, whatever the scopes', async (t) => {
  for (const [method, path, body] of [
    ['GET', '/v1/agents', undefined],
    ['GET', '/v1/policies', undefined],
    ['GET', '/v1/webhooks', undefined],
    ['POST', '/v1/simulations/draft-policy', { ...purchase, policyVersionId: '00000000-0000-7000-8000-000000000000' }],
  ] as const) {
    const res = await app.request(path, { method, key: full.access_token, body });
    t.is(res.status, 403, path);
    t.is(res.body.error.code, 'oauth_not_permitted', path);
  }
});

test('every documented operation no scope reaches is oauth_not_permitted, and policy authoring api_key_not_permitted', async (t) => {
  const id = '01a226da-0860-7525-973b-454a2adc038d';
  const orgOnly = Object.entries(openApi.paths as Record<string, Record<string, any>>).flatMap(([template, item]) =>
    Object.entries(item)
      .filter(([, op]) => op.security?.length > 0 && !op.security.some((s: object) => 'connectionToken' in s))
      .map(([method]) => [method.toUpperCase(), template.replace(/\{\w+\}/g, id)] as const),
  );
  t.true(orgOnly.length >= 15, `${orgOnly.length} operations`);
  for (const [method, path] of orgOnly) {
    const body = method === 'GET' || method === 'DELETE' ? undefined : {};
    const res = await app.request(path, { method, key: full.access_token, body });
    t.is(res.status, 403, `${method} ${path}`);
    t.is(res.body.error.code, 'oauth_not_permitted', `${method} ${path}`);
  }
  for (const [method, path] of [['POST', '/v1/policies'], ['PATCH', `/v1/policies/${id}`], ['DELETE', `/v1/policies/${id}`], ['POST', `/v1/policies/${id}/versions/${id}/activate`]] as const) {
    const res = await app.request(path, { method, key: full.access_token, body: method === 'DELETE' ? undefined : {} });
    t.is(res.status, 403, `${method} ${path}`);
    t.is(res.body.error.code, 'api_key_not_permitted', `${method} ${path}`);
  }
});

test('an unknown or malformed token, and a refresh token or code used as a bearer, is 401 invalid_token', async (t) => {
  for (const key of ['cmp_oat_' + 'A'.repeat(43), 'cmp_oat_short', full.refresh_token, 'cmp_oac_' + 'A'.repeat(43)]) {
    const res = await app.request('/v1/simulations/current-policies', { key, body: purchase });
    t.is(res.status, 401, key.slice(0, 12));
    t.is(res.body.error.code, 'invalid_token', key.slice(0, 12));
    t.regex(res.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
  }
  const notOurs = await app.request('/v1/simulations/current-policies', { key: 'cmp_xyz_' + 'A'.repeat(43), body: purchase });
  t.is(notOurs.body.error.code, 'invalid_api_key', 'anything else is still an unrecognised key');
});

test.serial('an access token expires after 60 minutes', async (t) => {
  const fresh = await connect(app, org, meta.clientId);
  time.advance(59 * 60_000);
  t.is((await app.request('/v1/simulations/current-policies', { key: fresh.access_token, body: purchase })).status, 200);
  time.advance(2 * 60_000);
  const res = await app.request('/v1/simulations/current-policies', { key: fresh.access_token, body: purchase });
  t.is(res.status, 401);
  t.is(res.body.error.code, 'invalid_token');
  time.advance(-61 * 60_000);
});

/** The same token on /mcp, where a token that no longer works is a 401 challenge instead. */
const mcpList = (token: string) =>
  app.request('/mcp', { key: token, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });

test.serial('an agent no longer ENABLED makes its connections connection_unauthorized until re-enabled', async (t) => {
  await app.admin(`/admin/agents/${org.agents.buyer.id}`, { method: 'PATCH', body: { status: 'DISABLED' } });
  const res = await app.request('/v1/simulations/current-policies', { key: full.access_token, body: purchase });
  t.is(res.status, 403);
  t.is(res.body.error.code, 'connection_unauthorized');
  const mcp = await mcpList(full.access_token);
  t.is(mcp.status, 401);
  t.is(mcp.body.error.code, 'invalid_token');
  t.regex(mcp.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token", scope="purchase:check purchase:read purchase:request", resource_metadata="/);
  // A refresh would only yield tokens refused at once: invalid_grant, so a client asks the person again.
  const refresh = { grant_type: 'refresh_token', refresh_token: full.refresh_token, client_id: meta.clientId };
  const refused = await tokenForm(app, refresh);
  t.is(refused.status, 400);
  t.deepEqual(await refused.json(), { error: 'invalid_grant', error_description: 'the agent of this connection is not enabled' });
  await app.admin(`/admin/agents/${org.agents.buyer.id}`, { method: 'PATCH', body: { status: 'ENABLED' } });
  t.is((await app.request('/v1/simulations/current-policies', { key: full.access_token, body: purchase })).status, 200);
  const renewed = await tokenForm(app, refresh);
  t.is(renewed.status, 200, 'the refresh token was not consumed by the refusal');
  full = { ...full, ...(await renewed.json()) };
});

test('a connection revoked by an operator is refused on the next call', async (t) => {
  const doomed = await connect(app, org, meta.clientId);
  t.is((await app.request('/v1/simulations/current-policies', { key: doomed.access_token, body: purchase })).status, 200);
  t.is((await app.admin(`/admin/connections/${doomed.connectionId}`, { method: 'DELETE' })).status, 200);
  const res = await app.request('/v1/simulations/current-policies', { key: doomed.access_token, body: purchase });
  t.is(res.status, 403);
  t.is(res.body.error.code, 'connection_unauthorized');
  // The status is the contract's (§5.3); the challenge still says the token no longer works (RFC 6750 3).
  t.is(res.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
  const mcp = await mcpList(doomed.access_token);
  t.is(mcp.status, 401);
  t.is(mcp.body.error.code, 'invalid_token');
  const event = (await app.store.db.collection<{ _id: string; type: string; data: Record<string, unknown> }>('events').find({ type: 'connection.revoked' }).toArray()).find(
    (e) => e.data.connectionId === doomed.connectionId,
  );
  t.is(event?.data.reason, 'OPERATOR');
});

test('a suspended organisation refuses its connections', async (t) => {
  // A second organisation, so suspending it disturbs no other test.
  const beta = await setUpOrg(app, 'beta');
  const conn = await connect(app, beta, meta.clientId);
  await app.admin(`/admin/organizations/${beta.organizationId}`, { method: 'PATCH', body: { status: 'SUSPENDED' } });
  const res = await app.request('/v1/simulations/current-policies', { key: conn.access_token, body: purchase });
  t.is(res.status, 403);
  t.is(res.body.error.code, 'organization_suspended');
});
