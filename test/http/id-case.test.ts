// Ids are UUIDs, which RFC 9562 makes case-insensitive; the service issues them lower-case. Written in
// upper-case hex, in a path or a body, every /v1 and /admin route finds the same thing as the lower-case id:
// never accepted in one place and not found in another (docs/reference/decisions.md, cursors).
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { configureWebhooks } from '../../src/webhooks/runtime.ts';

let app: TestApp;
let org: AppliedOrg;

test.before(async () => {
  app = await startApp({ env: { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex') } });
  configureWebhooks(app.deps, { lookup: async () => [{ address: '93.184.215.14', family: 4 }] });
  org = await applyManifest(app);
});
test.after.always(() => app?.close());

const up = (id: string) => id.toUpperCase();
const purchase = { merchant: 'Paper Co', amountMinor: '1500', reason: 'Paper' };

test('every route with an id in its path finds the same thing by the id in upper-case hex', async (t) => {
  const buyer = org.keys['buyer-key'];
  const admin = org.keys['admin-key'];
  const office = org.policies.office;
  const submitted = await app.request('/v1/purchase-requests', { key: buyer, body: purchase });
  const purchaseId: string = submitted.body.purchaseRequest.id;
  const webhook = await app.request('/v1/webhooks', { key: admin, body: { url: 'https://a.hooks-test.com/in', subscribedTypes: ['purchase.approved'] } });
  t.is(webhook.status, 201, webhook.text);
  const webhookId: string = webhook.body.id;
  t.regex(purchaseId + office.id + office.activeVersionId + webhookId, /[a-f]/);

  const cases: [string, string, string, unknown?][] = [
    ['GET', `/v1/purchase-requests/${up(purchaseId)}`, buyer],
    ['GET', `/v1/purchase-requests/${up(purchaseId)}/receipts`, buyer],
    ['GET', `/v1/policies/${up(office.id)}`, admin],
    ['GET', `/v1/policies/${up(office.id)}/versions/${up(office.activeVersionId!)}`, admin],
    ['POST', `/v1/policies/${up(office.id)}/versions/${up(office.activeVersionId!)}/validate`, admin],
    ['GET', `/v1/policies/${up(office.id)}/versions/${up(office.activeVersionId!)}/shadow`, admin],
    ['GET', `/v1/webhooks/${up(webhookId)}`, admin],
    ['PATCH', `/v1/webhooks/${up(webhookId)}`, admin, { description: 'Shouted' }],
    ['GET', `/v1/webhooks/${up(webhookId)}/deliveries`, admin],
    ['POST', `/v1/webhooks/${up(webhookId)}/rotate-secret`, admin],
    ['POST', `/v1/webhooks/${up(webhookId)}/test`, admin],
    ['DELETE', `/v1/webhooks/${up(webhookId)}`, admin],
  ];
  for (const [method, path, key, body] of cases) {
    const res = await app.request(path, { method, key, ...(body === undefined ? {} : { body }) });
    t.true(res.status === 200 || res.status === 202, `${method} ${path}: ${res.status} ${res.text.slice(0, 200)}`);
  }
  const read = await app.admin(`/admin/purchase-requests/${up(purchaseId)}`);
  t.is(read.body.purchase?.id, purchaseId);
});

test('ids in a body in upper-case hex name the same agent and version', async (t) => {
  const admin = org.keys['admin-key'];
  const office = org.policies.office;
  const asAgent = await app.request('/v1/simulations/current-policies', { key: admin, body: { ...purchase, agentId: up(org.agents.buyer.id) } });
  t.is(asAgent.status, 200, asAgent.text);
  const version = await app.request('/v1/simulations/policy-version', { key: admin, body: { ...purchase, policyVersionId: up(office.activeVersionId!) } });
  t.is(version.status, 200, version.text);
  const range = { from: '2026-01-01T00:00:00.000Z', to: '2026-03-01T00:00:00.000Z' };
  const replay = await app.request('/v1/simulations/replay', { key: admin, body: { policyVersionId: up(office.activeVersionId!), agentId: up(org.agents.buyer.id), ...range } });
  t.is(replay.status, 200, replay.text);
});
