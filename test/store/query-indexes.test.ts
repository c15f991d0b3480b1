// Every query the service sends on these paths is served by an index it declares (docs/operate/mongodb.md):
// on a MongoDB replica set, a filter that no index's first key constrains is a collection scan, over every
// organisation's documents, inside a transaction as often as not. The store records each query's filter
// (test/helpers/query-shapes.ts) while the paths run through HTTP, and each is checked against the layout.
import test from 'ava';
import type { TestApp } from '../helpers/app.ts';
import { Client, dashboardPurchase, type DashboardOrg } from '../helpers/dashboard.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { orderingIndexes, startRecordedApp, usableIndexes, type QueryRecorder, type QueryShape } from '../helpers/query-shapes.ts';
import { manifest, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';
import { catchUpShadows } from '../../src/simulations/shadow.ts';
import { expireDueApprovals, finishInterruptedArchives } from '../../src/approvals/close.ts';
import { sendDueNotices } from '../../src/approvals/notices.ts';
import { loadConfig } from '../../src/config.ts';
import { startSmtp } from '../helpers/smtp.ts';
import { dispatchEvents } from '../../src/webhooks/dispatch.ts';
import { newEndpoint } from '../../src/webhooks/manage.ts';
import { newId } from '../../src/ids.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../schemas/webhooks.ts';
import { attemptSlots, MAX_IN_FLIGHT_PER_ENDPOINT } from '../../src/webhooks/attempt-slots.ts';
import { attemptDelivery, attemptDueDeliveries } from '../../src/webhooks/deliver.ts';
import { NO_LEASE, webhookCollections, type WebhookDeliveryDoc } from '../../src/webhooks/documents.ts';

/**
 * The sorts left to memory on purpose, each with why the set it sorts stays small whatever an organisation's
 * size: an index for them would cost every write of the collection and spare no real work.
 */
const SORTED_IN_MEMORY: Array<{ collection: string; by: string; sort: Record<string, 1 | -1>; why: string }> = [
  {
    collection: 'webhook_endpoints',
    by: 'subscribedTypes',
    sort: { _id: 1 },
    why: 'the endpoints an event goes to (src/webhooks/dispatch.ts), found through { organizationId, status, subscribedTypes }: an organisation\'s active ones, at most WEBHOOK_ENDPOINT_LIMIT',
  },
  {
    collection: 'decisions',
    by: 'purchaseId',
    sort: { evaluatedAt: 1, _id: 1 },
    why: 'a purchase\'s decisions (its dashboard page), found through { purchaseId }: one per evaluation, a handful per purchase',
  },
];
const allowed = (s: QueryShape & { problems: string[] }) =>
  s.problems.every((p) => p.startsWith('sort ')) &&
  SORTED_IN_MEMORY.some((a) => a.collection === s.collection && a.by in s.filter && JSON.stringify(a.sort) === JSON.stringify(s.sort));
/** The queries since `from` that an index serves only in part, less those SORTED_IN_MEMORY allows. */
const flagged = (from = 0) => store.partlyIndexed(from).filter((s) => !allowed(s));

let app: TestApp;
let store: QueryRecorder;
let org: DashboardOrg;
/** The queries recorded before the tests: start-up's, which reads whole collections on purpose (its one-off upgrades). */
let started = 0;

test.before(async () => {
  ({ app, store, org } = await startRecordedApp('scans'));
  started = store.shapes.length;
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
  // Its page of changes, read in chunks by (fromKey, _id).
  const shadowPage = await app.request(`/v1/policies/${applied.policies.office.id}/versions/${applied.policies.office.draftVersionId}/shadow`, { key: keys['org-key'] });
  t.is(shadowPage.status, 200, shadowPage.text);
  t.true(store.shapes.slice(from).some((s) => s.collection === 'shadow_decisions' && s.sort !== undefined), 'the changes were read');
  t.deepEqual(store.collectionScans(from), []);
  t.deepEqual(flagged(from), []);
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
  t.deepEqual(flagged(from), []);
});

test.serial('resuming an endpoint\'s deliveries deferred by the in-flight caps reads its oldest due ones in order through an index', async (t) => {
  const { deliveries } = webhookCollections(app.deps.store.db);
  const past = new Date(app.deps.now().getTime() - 60_000);
  // Deliveries of endpoints that are gone: no receiver is sent anything, and the attempt that frees a slot cancels its own.
  const delivery = (id: string, endpointId: string): WebhookDeliveryDoc =>
    ({ _id: id, eventId: `event-${id}`, endpointId, organizationId: `org-${endpointId}`, status: 'PENDING', nextAttemptAt: past, leaseUntil: NO_LEASE, leaseToken: null, attemptCount: 0 }) as unknown as WebhookDeliveryDoc;
  await deliveries.insertMany([delivery('waiting-1', 'full'), delivery('waiting-2', 'full'), delivery('freeing', 'other')]);
  const slots = attemptSlots(app.deps);
  const full = { endpointId: 'full', organizationId: 'org-full', host: '' };
  for (let i = 0; i < MAX_IN_FLIGHT_PER_ENDPOINT; i++) t.is(slots.take(full), null);
  t.is((await attemptDelivery(app.deps, 'waiting-1')).kind, 'DEFERRED');
  for (let i = 0; i < MAX_IN_FLIGHT_PER_ENDPOINT; i++) slots.give(full);
  const from = store.shapes.length;
  // An attempt ends and gives its slot back: the waiting endpoint's due deliveries are put back on the schedule.
  t.is((await attemptDelivery(app.deps, 'freeing')).kind, 'CANCELLED');
  const resumed = store.shapes.slice(from).find((s) => s.collection === 'webhook_deliveries' && s.filter.endpointId === 'full' && s.sort !== undefined);
  t.is(resumed?.returned, 2, 'the endpoint\'s due deliveries were read');
  // In order, and only the endpoint's: the sweep's index orders them too, but through every endpoint's due deliveries.
  t.deepEqual(orderingIndexes(resumed!).filter((keys) => keys[0] === 'endpointId'), [['endpointId', 'status', 'nextAttemptAt', '_id']]);
  t.deepEqual(store.collectionScans(from), []);
  t.deepEqual(flagged(from), []);
});

test.serial('every dashboard page reads through indexes, its lists in an index\'s order (agents by name, the inbox newest first)', async (t) => {
  const client = new Client(app.url);
  t.is((await client.signIn('ana@scans.example')).status, 303);
  const purchaseId = await dashboardPurchase(client, org.agents.buyer.id, { merchant: 'Staples', amount: '300.00' });
  const from = store.shapes.length;
  for (const page of ['', '/inbox/live', '/purchases', '/purchases/new', `/purchases/${purchaseId}`, '/budgets', '/policies', '/connections', '/keys']) {
    t.is((await client.get(`/dashboard${page}`)).status, 200, page);
  }
  const sorted = (collection: string) => store.shapes.slice(from).filter((s) => s.collection === collection && s.sort !== undefined);
  t.true(sorted('agents').some((s) => 'name' in s.sort!), 'the agent lists were read by name');
  t.true(sorted('approvals').some((s) => s.filter.state === 'PENDING'), 'the inbox was read');
  t.deepEqual(store.collectionScans(from), []);
  t.deepEqual(flagged(from), []);
});

test.serial('checking a version\'s quorum counts the approvers through an index bounding both branches of its $or on roles', async (t) => {
  const { keys, policies } = await applyManifest(app, manifest('quorum', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]));
  const from = store.shapes.length;
  const res = await app.request(`/v1/policies/${policies.office.id}/versions/${policies.office.activeVersionId}/validate`, { key: keys['org-key'], body: {} });
  t.is(res.status, 200, res.text);
  t.true(store.shapes.slice(from).some((s) => s.collection === 'people' && Array.isArray(s.filter.$or)), 'the approvers were counted');
  t.deepEqual(store.collectionScans(from), []);
  t.deepEqual(flagged(from), []);
});

test.serial('the approvers\' email sweep reads the notices due, the approvals never emailed and the people to email through indexes in an index\'s order', async (t) => {
  const relay = await startSmtp();
  try {
    const { smtp } = loadConfig({ ADMIN_TOKEN: 'x'.repeat(32), SMTP_URL: relay.url, SMTP_FROM: 'spend@scans.example' });
    // A minute on: past the grace the sweep leaves a new approval's first email to its own job (the pages above
    // made approvals; Ana, their only approver, made them too, so nobody is emailed, but the people are read).
    const later = { ...app.deps, config: { ...app.deps.config, smtp }, now: () => new Date(Date.now() + 60_000) };
    const from = store.shapes.length;
    await sendDueNotices(later);
    t.true(store.shapes.slice(from).some((s) => s.collection === 'people'), 'the people to email were read');
    t.deepEqual(store.collectionScans(from), []);
    t.deepEqual(flagged(from), []);
  } finally {
    await relay.close();
  }
});

test.serial('an event fans out to the organisation\'s subscribed endpoints, found through an index', async (t) => {
  const sealed = { current: 'sealed-secret', previous: null, previousExpiresAt: null };
  await webhookCollections(app.deps.store.db).endpoints.insertOne(newEndpoint(newId(), org.organizationId, { url: 'https://hooks.example/scans', description: null, subscribedTypes: SUBSCRIBABLE_EVENT_TYPES }, sealed, app.deps.now()));
  const client = new Client(app.url);
  t.is((await client.signIn('ana@scans.example')).status, 303);
  await dashboardPurchase(client, org.agents.buyer.id, { merchant: 'Staples', amount: '12.00' });
  const from = store.shapes.length;
  t.true((await dispatchEvents(app.deps)) > 0);
  t.true(store.shapes.slice(from).some((s) => s.collection === 'webhook_endpoints' && s.sort !== undefined), 'the subscribed endpoints were read');
  t.deepEqual(store.collectionScans(from), []);
  t.deepEqual(flagged(from), []);
});

test.serial('the API\'s and the operator API\'s lists, and the worker\'s approval and event sweeps, read through indexes in an index\'s order', async (t) => {
  const from = store.shapes.length;
  for (const path of ['/v1/agents', '/v1/policies', '/v1/policies?status=ACTIVE', '/v1/webhooks']) {
    t.is((await app.request(path, { key: org.keys['admin-key'] })).status, 200, path);
  }
  for (const path of [`/admin/connections?organizationId=${org.organizationId}`, '/admin/oauth-clients']) t.is((await app.admin(path)).status, 200, path);
  await expireDueApprovals(app.deps);
  await sendDueNotices(app.deps);
  await dispatchEvents(app.deps);
  // Archiving an agent cancels its pending approvals (the dashboard purchases above made some).
  t.is((await app.admin(`/admin/agents/${org.agents.buyer.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } })).status, 200);
  t.true(store.shapes.slice(from).some((s) => s.collection === 'approvals' && s.filter.agentId === org.agents.buyer.id), 'the agent\'s pending approvals were read');
  await finishInterruptedArchives(app.deps);
  t.deepEqual(store.collectionScans(from), []);
  t.deepEqual(flagged(from), []);
});

// Last: every query the paths above sent, those of the tests that check only scans included.
test.serial('no query of any path above is a collection scan or served by an index only in part (unless SORTED_IN_MEMORY says why)', (t) => {
  t.deepEqual(store.collectionScans(started), []);
  t.deepEqual(flagged(started), []);
});
