// What a manifest does to what is under way (docs/operate/manifests.md, docs/reference/contract.md §3.1): an
// agent archived or renamed while its purchases wait for a person, a policy archived while it holds budget.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { windowTotals } from '../helpers/windows.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

/** acmeManifest with a second organisation-wide EUR policy, `plain`: a daily budget and no approval threshold. */
function twoPolicies(handle: string) {
  const manifest: any = acmeManifest(handle);
  manifest.policies.push({
    handle: 'plain',
    name: 'Plain budget',
    scope: 'ORGANIZATION',
    currencies: ['EUR'],
    rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '500000' }],
  });
  return manifest;
}

const waiting = async (key: string) => {
  const res = await app.request('/v1/purchase-requests', { key, body: { merchant: 'Chair Co', amountMinor: '30000', reason: 'chairs' } });
  if (res.body?.decision?.outcome !== 'REQUIRES_APPROVAL') throw new Error(res.text);
  return res.body.purchaseRequest.id as string;
};
const statusOf = async (id: string) => (await app.admin(`/admin/purchase-requests/${id}`)).body.purchase;

test.serial('an agent a manifest archives has its waiting purchases cancelled and their holds released', async (t) => {
  const manifest = twoPolicies('archive-agent');
  const org = await applyManifest(app, manifest);
  const id = await waiting(org.keys['buyer-key']);
  t.is((await windowTotals(app.store.db, { organizationId: org.organizationId })).heldMinor, 60000); // two policies hold it

  manifest.agents[0].status = 'ARCHIVED';
  await applyManifest(app, manifest);
  const purchase = await statusOf(id);
  t.is(purchase.status, 'CANCELLED', JSON.stringify(purchase.approval));
  t.false(purchase.approval.isPending);
  t.is((await windowTotals(app.store.db, { organizationId: org.organizationId })).heldMinor, 0);
});

test.serial('an agent renamed in a manifest is a new agent: the old one and its waiting purchase stay as they were', async (t) => {
  const manifest = twoPolicies('rename-agent');
  const org = await applyManifest(app, manifest);
  const id = await waiting(org.keys['buyer-key']);
  manifest.agents[0].handle = 'office-buyer';
  manifest.apiKeys[0].handle = 'office-buyer-key';
  manifest.apiKeys[0].agent = 'office-buyer';
  const renamed = await applyManifest(app, manifest);
  t.not(renamed.agents['office-buyer'].id, org.agents.buyer.id);
  t.true((await statusOf(id)).approval.isPending);
  t.is((await windowTotals(app.store.db, { organizationId: org.organizationId })).heldMinor, 60000);
});

test.serial('a policy a manifest archives keeps what it holds until the purchase is answered; the answer releases it', async (t) => {
  const manifest = twoPolicies('archive-policy');
  const org = await applyManifest(app, manifest);
  const id = await waiting(org.keys['buyer-key']);
  manifest.policies[0].status = 'ARCHIVED';
  await applyManifest(app, manifest);
  t.true((await statusOf(id)).approval.isPending);
  t.is((await windowTotals(app.store.db, { organizationId: org.organizationId, policyId: org.policies.office.id })).heldMinor, 30000);

  const answered = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(answered.status, 200, answered.text);
  t.is(answered.body.purchase.status, 'APPROVED');
  const totals = await windowTotals(app.store.db, { organizationId: org.organizationId });
  t.is(totals.heldMinor, 0);
});
