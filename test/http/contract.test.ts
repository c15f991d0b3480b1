// The OpenAPI document against the running service. Every HTTP test's /v1 responses are checked by
// test/helpers/contract.ts; this file walks every documented operation (successes and the errors a
// client meets), proves the check fails on a response that disagrees, and that the served document
// is the committed one with this deployment's URLs, readable without a credential.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { purchase, shopManifest } from '../helpers/shop.ts';
import { checkAgainstDocument, covered, documentedOperations, openApi } from '../helpers/contract.ts';
import { configureWebhooks } from '../../src/webhooks/runtime.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp({ env: { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex'), BASE_URL: 'https://spend.example.com' } });
  configureWebhooks(app.deps, { lookup: async () => [{ address: '93.184.215.14', family: 4 }] });
});
test.after.always(() => app?.close());

test.serial('every documented operation answers as documented, errors included', async (t) => {
  const shop = await applyManifest(app, shopManifest('contract'));
  const a = shop.keys['a-key'];
  const org = shop.keys['org-key'];
  const policyId = shop.policies.main.id;
  const versionId = shop.policies.main.activeVersionId!;
  const r = app.request;

  // Purchases: the three outcomes, a replay, a readback, and their errors.
  const approved = await r('/v1/purchase-requests', { key: a, body: purchase(1000), headers: { 'idempotency-key': 'contract-1' } });
  t.is(approved.status, 201);
  t.is((await r('/v1/purchase-requests', { key: a, body: purchase(1000), headers: { 'idempotency-key': 'contract-1' } })).status, 200);
  t.is((await r('/v1/purchase-requests', { key: a, body: purchase(2000), headers: { 'idempotency-key': 'contract-1' } })).status, 409);
  const pending = await r('/v1/purchase-requests', { key: a, body: purchase(30000) });
  t.is(pending.body.decision.outcome, 'REQUIRES_APPROVAL');
  t.is((await r('/v1/purchase-requests', { key: a, body: purchase(1000, 'Shady Goods Ltd') })).body.decision.outcome, 'REJECTED');
  t.is((await r('/v1/purchase-requests', { key: a, body: { merchant: '' } })).status, 400);
  t.is((await r('/v1/purchase-requests', { key: a, raw: '{', headers: { 'content-type': 'application/json' } })).status, 400);
  t.is((await r('/v1/purchase-requests', { key: a, raw: 'x', headers: { 'content-type': 'text/plain' } })).status, 415);
  t.is((await r('/v1/purchase-requests', { key: a, raw: JSON.stringify({ merchant: 'x'.repeat(70_000) }), headers: { 'content-type': 'application/json' } })).status, 413);
  t.is((await r('/v1/purchase-requests', { body: purchase(1) })).status, 401);
  t.is((await r('/v1/purchase-requests', { key: org, body: purchase(1) })).status, 403);
  t.is((await r(`/v1/purchase-requests/${pending.body.purchaseRequest.id}`, { key: a })).status, 200);
  t.is((await r(`/v1/purchase-requests/${pending.body.purchaseRequest.id}`, { key: shop.keys['b-key'] })).status, 404);
  t.is((await r(`/v1/purchase-requests/${pending.body.purchaseRequest.id}/receipts`, { key: a })).status, 200);
  t.is((await r(`/v1/purchase-requests/${pending.body.purchaseRequest.id}/receipts`, { key: shop.keys['b-key'] })).status, 404);
  t.is((await r(`/v1/purchase-requests/${pending.body.purchaseRequest.id}/receipts`, { key: org })).status, 403);
  t.is((await r('/.well-known/jwks.json')).status, 200);

  // Simulations.
  t.is((await r('/v1/simulations/current-policies', { key: a, body: purchase(1000) })).status, 200);
  t.is((await r('/v1/simulations/current-policies', { key: org, body: purchase(1000) })).status, 400);
  t.is((await r('/v1/simulations/current-policies', { key: org, body: { ...purchase(1000), agentId: '0190a3c4-0000-7000-8000-000000000000' } })).status, 404);
  t.is((await r('/v1/simulations/policy-version', { key: org, body: { ...purchase(1000), policyVersionId: versionId } })).status, 200);
  t.is((await r('/v1/simulations/draft-policy', { key: org, body: { ...purchase(1000), policyVersionId: versionId } })).status, 400);
  t.is((await r('/v1/simulations/draft-policy', { key: a, body: { ...purchase(1000), policyVersionId: versionId } })).status, 403);
  const range = { from: '2026-01-01T00:00:00Z', to: '2026-03-01T00:00:00Z' };
  t.is((await r('/v1/simulations/replay', { key: org, body: { policyVersionId: versionId, from: '2020-01-01T00:00:00Z', to: '2040-01-01T00:00:00Z' } })).status, 400);
  t.is((await r('/v1/simulations/replay', { key: org, body: { policyVersionId: '0190a3c4-0000-7000-8000-000000000000', ...range } })).status, 404);
  t.is((await r('/v1/simulations/replay/0190a3c4-0000-7000-8000-000000000000', { key: org })).status, 404);
  t.is((await r(`/v1/policies/${policyId}/versions/${versionId}/shadow`, { key: org })).status, 200);

  // Policies and agents.
  t.is((await r('/v1/policies?pageSize=1', { key: org })).status, 200);
  t.is((await r('/v1/policies?page=0', { key: org })).status, 400);
  t.is((await r(`/v1/policies/${policyId}`, { key: org })).status, 200);
  t.is((await r('/v1/policies/not-a-uuid', { key: org })).status, 404);
  t.is((await r(`/v1/policies/${policyId}/versions/${versionId}`, { key: org })).status, 200);
  t.is((await r(`/v1/policies/${policyId}/versions/${versionId}/validate`, { key: org, method: 'POST' })).status, 200);
  t.is((await r('/v1/agents', { key: org })).status, 200);
  t.is((await r('/v1/agents', { key: a })).status, 403);

  // Webhooks.
  const created = await r('/v1/webhooks', { key: org, body: { url: 'https://hooks.example.com/in', subscribedTypes: ['purchase.approved'] } });
  t.is(created.status, 201);
  const hook = `/v1/webhooks/${created.body.id}`;
  t.is((await r('/v1/webhooks', { key: org, body: { url: 'http://hooks.example.com/in', subscribedTypes: ['purchase.approved'] } })).status, 400);
  t.is((await r('/v1/webhooks', { key: org })).status, 200);
  t.is((await r(hook, { key: org })).status, 200);
  t.is((await r(hook, { key: org, method: 'PATCH', body: { description: 'contract' } })).status, 200);
  t.is((await r(`${hook}/rotate-secret`, { key: org, method: 'POST' })).status, 200);
  t.is((await r(`${hook}/test`, { key: org, method: 'POST' })).status, 202);
  t.is((await r(`${hook}/deliveries?limit=5`, { key: org })).status, 200);
  t.is((await r(`${hook}/deliveries?limit=0`, { key: org })).status, 400);
  t.is((await r(hook, { key: org, method: 'DELETE' })).status, 200);
  t.is((await r(hook, { key: org, method: 'DELETE' })).status, 409);

  // The reference itself, and what is not an operation.
  t.is((await r('/v1/openapi.json')).status, 200);
  t.is((await r('/v1/nothing-here', { key: org })).status, 404);
  t.is((await r('/v1/policies', { key: org, body: {} })).status, 403);

  const missing = documentedOperations().filter((op) => !covered.has(op));
  t.deepEqual(missing, [], 'operations the walk did not reach');
});

test.serial('a response that disagrees with the document fails the check', async (t) => {
  const shop = await applyManifest(app, shopManifest('contract-fail'));
  const res = await app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: purchase(1000) });
  t.is(res.status, 201);
  const withExtra = { ...res, body: { ...res.body, decision: { ...res.body.decision, surprise: true } } };
  t.throws(() => checkAgainstDocument('POST', '/v1/purchase-requests', withExtra), { message: /surprise|additional/ });
  const wrongType = { ...res, body: { ...res.body, purchaseRequest: { ...res.body.purchaseRequest, amountMinor: 1000 } } };
  t.throws(() => checkAgainstDocument('POST', '/v1/purchase-requests', wrongType), { message: /amountMinor/ });
  t.throws(() => checkAgainstDocument('POST', '/v1/purchase-requests', { ...res, status: 204 }), { message: /not documented/ });
  const headers = new Headers(res.headers);
  headers.delete('server-timing');
  t.throws(() => checkAgainstDocument('POST', '/v1/purchase-requests', { ...res, headers }), { message: /Server-Timing/ });
  t.throws(() => checkAgainstDocument('GET', '/v1/unknown', { ...res, status: 404, body: { message: 'no' } }), { message: /error body/ });
});

test('GET /v1/openapi.json serves the committed document with this deployment\'s URLs, without a credential', async (t) => {
  const res = await app.request('/v1/openapi.json');
  t.is(res.status, 200);
  t.deepEqual(res.body.servers, [{ url: 'https://spend.example.com' }]);
  t.is(res.body.components.securitySchemes.connectionToken.flows.authorizationCode.tokenUrl, 'https://spend.example.com/oauth/token');
  t.deepEqual({ ...res.body, servers: openApi.servers, components: { ...res.body.components, securitySchemes: openApi.components.securitySchemes } }, openApi);
});
