// The lists that grow with time (docs/reference/decisions.md): connections and API keys stop listing
// what was revoked long ago; webhook endpoints and a policy's versions are listed whole, as the contract
// asks, from a read that leaves out what the answer does not show. Seeded through the store, read over HTTP.
import test from 'ava';
import type { TestApp } from '../helpers/app.ts';
import { Client, type DashboardOrg } from '../helpers/dashboard.ts';
import { startRecordedApp, type QueryRecorder } from '../helpers/query-shapes.ts';
import { newId } from '../../src/ids.ts';
import { issueApiKey } from '../../src/identity/credentials/api-keys.ts';
import type { ApiKeyDoc } from '../../src/store/collections.ts';
import { connectionsCollection, type ConnectionDoc } from '../../src/identity/connections/documents.ts';
import { webhookCollections, type WebhookEndpointDoc } from '../../src/webhooks/documents.ts';
import { newEndpoint } from '../../src/webhooks/manage.ts';

const DAY = 86_400_000;

let app: TestApp;
let store: QueryRecorder;
let org: DashboardOrg;

test.before(async () => {
  ({ app, store, org } = await startRecordedApp('lists'));
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
});

const ago = (days: number) => new Date(app.deps.now().getTime() - days * DAY);

function connection(applicationName: string, createdDaysAgo: number, revokedDaysAgo: number | null): ConnectionDoc {
  return {
    _id: newId(),
    organizationId: org.organizationId,
    personId: org.people.ana.id,
    grantedBy: { name: 'Ana Admin' },
    agentId: org.agents.buyer.id,
    clientId: `https://${applicationName.toLowerCase().replaceAll(' ', '-')}.example/client.json`,
    applicationName,
    scopes: ['purchase:check'],
    createdAt: ago(createdDaysAgo),
    revokedAt: revokedDaysAgo === null ? null : ago(revokedDaysAgo),
    revokedReason: revokedDaysAgo === null ? null : 'OPERATOR',
  };
}

test.serial('connections revoked more than 30 days ago leave the operator API and the dashboard; unrevoked ones stay however old', async (t) => {
  const kept = [connection('Old Unrevoked', 400, null), connection('Revoked Lately', 60, 29)];
  const gone = [connection('Revoked Long Ago', 90, 31), ...Array.from({ length: 50 }, (_, i) => connection(`Revoked Year Ago ${i}`, 500, 365))];
  await connectionsCollection(app.store.db).insertMany([...kept, ...gone]);

  const res = await app.admin(`/admin/connections?organizationId=${org.organizationId}`);
  t.is(res.status, 200, res.text);
  t.deepEqual(
    res.body.connections.map((c: { application: string }) => c.application),
    ['Revoked Lately', 'Old Unrevoked'], // newest first
  );

  const client = new Client(app.url);
  t.is((await client.signIn('ana@lists.example')).status, 303);
  const page = (await client.get('/dashboard/connections')).text;
  for (const c of kept) t.true(page.includes(c.applicationName), c.applicationName);
  t.false(page.includes('Revoked Long Ago'));
  t.false(page.includes('Revoked Year Ago'));
  t.true(page.includes('Connections revoked more than 30 days ago are not listed.'));
});

function apiKey(handle: string, createdDaysAgo: number, revokedDaysAgo: number | null): ApiKeyDoc {
  const { prefix, hash } = issueApiKey();
  const revokedAt = revokedDaysAgo === null ? null : ago(revokedDaysAgo);
  return { _id: newId(), organizationId: org.organizationId, agentId: null, handle, prefix, hash, expiresAt: null, revokedAt, createdAt: ago(createdDaysAgo) };
}

test.serial('the dashboard\'s keys page leaves out keys revoked more than 30 days ago, through indexes; unrevoked ones stay however old', async (t) => {
  const kept = [apiKey('old-unrevoked', 400, null), apiKey('revoked-lately', 60, 29)];
  const gone = [apiKey('revoked-long-ago', 90, 31), ...Array.from({ length: 50 }, (_, i) => apiKey(`revoked-year-ago-${i}`, 500, 365))];
  await app.deps.collections.apiKeys.insertMany([...kept, ...gone]);

  const client = new Client(app.url);
  t.is((await client.signIn('ana@lists.example')).status, 303);
  const from = store.shapes.length;
  const page = (await client.get('/dashboard/keys')).text;
  for (const k of kept) t.true(page.includes(k.prefix), k.handle);
  for (const k of gone) t.false(page.includes(k.prefix), k.handle);
  t.true(page.includes('Keys revoked more than 30 days ago are not listed.'));
  const read = store.shapes.slice(from).find((s) => s.collection === 'api_keys' && s.method === 'find');
  t.is(read?.returned, (await app.deps.collections.apiKeys.countDocuments({ organizationId: org.organizationId, revokedAt: null })) + 1);
  t.deepEqual(store.partlyIndexed(from), []);
});

function endpoint(createdDaysAgo: number, status: WebhookEndpointDoc['status']): WebhookEndpointDoc {
  const createdAt = ago(createdDaysAgo);
  const sealed = { current: 'sealed-secret', previous: null, previousExpiresAt: null };
  const { secrets, ...created } = newEndpoint(newId(), org.organizationId, { url: `https://hooks.example/${createdDaysAgo}`, description: null, subscribedTypes: ['purchase.approved'] }, sealed, createdAt);
  // Revocation destroys the secrets (contract §3.4).
  return status === 'REVOKED' ? { ...created, status, revokedAt: createdAt } : { ...created, status, secrets };
}

test.serial('GET /v1/webhooks lists every endpoint, revoked ones of years ago included, read without their secrets', async (t) => {
  const seeded = [...Array.from({ length: 300 }, (_, i) => endpoint(1000 - i, 'REVOKED')), endpoint(2, 'DISABLED'), endpoint(1, 'ACTIVE')];
  await webhookCollections(app.store.db).endpoints.insertMany(seeded);
  const from = store.shapes.length;
  const res = await app.request('/v1/webhooks', { key: org.keys['admin-key'] });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.items.map((e: { id: string }) => e.id), seeded.map((e) => e._id)); // oldest first
  t.is(res.body.items.filter((e: { status: string }) => e.status === 'REVOKED').length, 300);
  const read = store.shapes.slice(from).find((s) => s.collection === 'webhook_endpoints' && s.method === 'find');
  t.is(read?.returned, 302);
  t.false(read?.fields?.has('secrets'));
  t.deepEqual(store.partlyIndexed(from), []); // the order is the index's: no sort in memory
});

test.serial('GET /v1/policies/{id} lists every version, with counts the store computed, not its rules and merchant entries', async (t) => {
  const policy = org.policies.office;
  const versions = app.store.db.collection<{ _id: string; versionNumber: number; status: string; rules: unknown[]; merchants: unknown[]; activatedAt: Date | null; archivedAt: Date | null }>('policy_versions');
  const active = (await versions.findOne({ _id: policy.activeVersionId! }))!;
  const merchants = Array.from({ length: 40 }, (_, i) => ({ id: newId(), listType: 'BLOCK', merchantKey: `shop ${i}`, label: `Shop ${i}` }));
  // Older versions, as 200 applies would have left them (numbers above the active one's: only the order matters here).
  const archived = Array.from({ length: 200 }, (_, i) => ({ ...active, _id: newId(), versionNumber: 1000 + i, status: 'ARCHIVED', merchants: merchants.slice(0, i % 40), archivedAt: ago(1) }));
  await versions.insertMany(archived);

  const from = store.shapes.length;
  const res = await app.request(`/v1/policies/${policy.id}`, { key: org.keys['admin-key'] });
  t.is(res.status, 200, res.text);
  const listed = res.body.policy.versions as Array<{ id: string; versionNumber: number; ruleCount: number; merchantCount: number }>;
  t.is(listed.length, 201);
  t.deepEqual(listed.map((v) => v.versionNumber), [...archived.map((v) => v.versionNumber).reverse(), active.versionNumber]);
  t.deepEqual(listed.slice(0, 200).map((v) => v.merchantCount), archived.map((v) => v.merchants.length).reverse());
  t.true(listed.every((v) => v.ruleCount === active.rules.length));
  t.is(res.body.policy.activeVersion.id, active._id);
  t.is(res.body.policy.activeVersion.merchantCount, active.merchants.length);
  const read = store.shapes.slice(from).find((s) => s.collection === 'policy_versions' && s.method === 'find');
  t.is(read?.returned, 201);
  t.false(read?.fields?.has('rules'));
  t.false(read?.fields?.has('merchants'));
  t.deepEqual(store.partlyIndexed(from), []);
  // Each stays reachable, whole, by its own route.
  const one = await app.request(`/v1/policies/${policy.id}/versions/${archived[39]._id}`, { key: org.keys['admin-key'] });
  t.is(one.status, 200, one.text);
  t.is(one.body.version.merchants.length, 39);
});
