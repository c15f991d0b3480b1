// Every query the service sends on these paths is served by an index it declares (docs/operate/mongodb.md):
// on a MongoDB replica set, a filter that no index's first key constrains is a collection scan, over every
// organisation's documents, inside a transaction as often as not. The store records each query's filter
// (test/helpers/query-shapes.ts) while the paths run through HTTP, and each is checked against the layout.
import test from 'ava';
import type { TestApp } from '../helpers/app.ts';
import { Client, dashboardPurchase, type DashboardOrg } from '../helpers/dashboard.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { startRecordedApp, usableIndexes, type QueryRecorder } from '../helpers/query-shapes.ts';
import { manifest, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';
import { catchUpShadows } from '../../src/simulations/shadow.ts';
import { attemptDueDeliveries } from '../../src/webhooks/deliver.ts';

let app: TestApp;
let store: QueryRecorder;
let org: DashboardOrg;

test.before(async () => {
  ({ app, store, org } = await startRecordedApp('scans'));
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
});

test.serial('setting a password finds the person\'s sessions, sign-ins and connections through indexes', async (t) => {
  const from = store.shapes.length;
  const res = await app.admin(`/admin/people/${org.people.ana.id}/password`, { method: 'PUT', body: { password: 'a brand new passphrase' } });
  t.is(res.status, 200);
  const byPerson = store.shapes.slice(from).filter((s) => 'personId' in s.filter);
  t.deepEqual(byPerson.map((s) => s.collection).sort(), ['connections', 'dashboard_sessions', 'oauth_authorization_requests']);
  t.deepEqual(store.collectionScans(from), []);
  await app.admin(`/admin/people/${org.people.ana.id}/password`, { method: 'PUT', body: { password: 'correct horse battery staple' } });
});

test.serial('a purchase\'s dashboard page finds its approval by the purchase, not among the organisation\'s approvals', async (t) => {
  const client = new Client(app.url);
  const signedIn = await client.signIn('ana@scans.example');
  t.is(signedIn.status, 303, signedIn.text);
  const purchaseId = await dashboardPurchase(client, org.agents.buyer.id, { merchant: 'Staples', amount: '300.00' });
  const from = store.shapes.length;
  t.is((await client.get(`/dashboard/purchases/${purchaseId}`)).status, 200);
  // The page's read of the approval, whatever its state (the pending one's inbox read narrows by state too).
  const approvalRead = store.shapes.slice(from).find((s) => s.collection === 'approvals' && s.filter.purchaseId === purchaseId && !('state' in s.filter));
  t.true(approvalRead !== undefined && usableIndexes(approvalRead).some((keys) => keys[0] === 'purchaseId'));
  t.deepEqual(store.collectionScans(from), []);
});

test.serial('a shadow evaluating purchases reads the organisation\'s policy versions through an index', async (t) => {
  const { keys } = await applyManifest(app, manifest('shadowed', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]));
  const applied = await applyManifest(app, manifest('shadowed', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: false }]));
  t.is((await app.admin(`/admin/policy-versions/${applied.policies.office.draftVersionId}`, { method: 'PATCH', body: { shadow: true } })).status, 200);
  const from = store.shapes.length;
  const res = await app.request('/v1/purchase-requests', { key: keys['buyer-key'], body: { merchant: 'Staples', amountMinor: '1500', reason: 'Pens' } });
  t.is(res.status, 201);
  await app.deps.shadows!.idle();
  t.true(store.shapes.slice(from).some((s) => s.collection === 'policy_versions' && !('_id' in s.filter)), 'the shadow loaded the history');
  t.deepEqual(store.collectionScans(from), []);
});

test.serial('the worker\'s shadow catch-up, every 30 seconds, finds the running shadows through an index', async (t) => {
  const from = store.shapes.length;
  await catchUpShadows(app.deps);
  t.true(store.shapes.slice(from).some((s) => s.collection === 'policy_shadows'));
  t.deepEqual(store.collectionScans(from), []);
});

test.serial('applying a manifest reads the organisation\'s people, agents and keys once each in its transaction, not once per item', async (t) => {
  const many = (n: number, make: (i: number) => object) => Array.from({ length: n }, (_, i) => make(i));
  const big = {
    ...manifest('many', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]),
    people: many(40, (i) => ({ handle: `p${i}`, name: `Person ${i}`, email: `p${i}@many.example` })),
    agents: many(40, (i) => ({ handle: `a${i}`, name: `Agent ${i}` })),
    apiKeys: many(40, (i) => ({ handle: `k${i}`, agent: `a${i}` })),
  };
  await applyManifest(app, big);
  const from = store.shapes.length;
  await applyManifest(app, big);
  const reads = (collection: string) => store.shapes.slice(from).filter((s) => s.collection === collection && ['find', 'findOne'].includes(s.method)).length;
  t.deepEqual({ people: reads('people'), agents: reads('agents'), api_keys: reads('api_keys') }, { people: 1, agents: 2, api_keys: 2 });
});

test.serial('applying a manifest reads a policy\'s active and draft versions, not its whole history', async (t) => {
  const rules = (n: number) => [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: String(10000 + n) }];
  for (let n = 0; n < 12; n++) await applyManifest(app, manifest('versions', [{ rules: rules(n), merchants: [], activate: true }]));
  const from = store.shapes.length;
  const applied = await applyManifest(app, manifest('versions', [{ rules: rules(99), merchants: [], activate: false }]));
  t.truthy(applied.policies.office.draftVersionId);
  const versionsRead = store.shapes.slice(from).filter((s) => s.collection === 'policy_versions').reduce((sum, s) => sum + (s.returned ?? 1), 0);
  t.true(versionsRead <= 3, `${versionsRead} versions read`);
});

test.serial('a replay reads the approvals pending at its start through an index, those answered since included, not the organisation\'s whole history', async (t) => {
  const { keys } = await applyManifest(app, manifest('carried', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]));
  const applied = await applyManifest(app, manifest('carried', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: false }]));
  const from = store.shapes.length;
  const now = Date.now();
  const range = { from: new Date(now - 3_600_000).toISOString(), to: new Date(now).toISOString() };
  const res = await app.request('/v1/simulations/replay', { key: keys['org-key'], body: { policyVersionId: applied.policies.office.draftVersionId, ...range } });
  t.is(res.status, 200, res.text);
  t.true(store.shapes.slice(from).some((s) => s.collection === 'approvals' && Array.isArray(s.filter.$or)), 'the replay read the carried approvals');
  t.deepEqual(store.collectionScans(from), []);
  t.deepEqual(store.partlyIndexed(from), []);
});

test.serial('the worker\'s webhook sweep reads the due deliveries in their order through an index, not sorting every due one in memory', async (t) => {
  const from = store.shapes.length;
  await attemptDueDeliveries(app.deps);
  t.true(store.shapes.slice(from).some((s) => s.collection === 'webhook_deliveries' && s.sort !== undefined), 'the sweep read the due deliveries');
  t.deepEqual(store.collectionScans(from), []);
  t.deepEqual(store.partlyIndexed(from), []);
});

test.serial('the merchant filter and the policies search narrow what the organisation\'s index selects, in its order', async (t) => {
  const client = new Client(app.url);
  t.is((await client.signIn('ana@scans.example')).status, 303);
  const from = store.shapes.length;
  t.is((await client.get(`/dashboard/purchases?merchant=${encodeURIComponent('STRAẞE')}`)).status, 200);
  t.is((await app.request(`/v1/policies?search=${encodeURIComponent('İstanbul')}`, { key: org.keys['admin-key'] })).status, 200);
  const searches = store.shapes.slice(from).filter((s) => 'merchantFold' in s.filter || 'nameLower' in s.filter);
  t.deepEqual(searches.map((s) => s.collection).sort(), ['policy_views', 'policy_views', 'purchase_views']);
  t.deepEqual(store.collectionScans(from), []);
  t.true(searches.every((s) => usableIndexes(s).some((keys) => keys[0] === 'organizationId')));
  // The policies list's sort ({ createdAt, _id } against an index of { organizationId, createdAt }) is not the search's doing.
  t.deepEqual(store.partlyIndexed(from).filter((s) => s.collection === 'purchase_views'), []);
});
