// Endpoint management through real HTTP (docs/reference/contract.md §4.11-4.18): every operation, every error code
// of those sections, secrets at rest, and the destination rules (6.6) at creation and on PATCH.
// DNS is replaced by an injected lookup (configureWebhooks), so public names resolve offline.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { configureWebhooks } from '../../src/webhooks/runtime.ts';
import { webhookCollections } from '../../src/webhooks/documents.ts';
import { decryptSecret, parseEncryptionKey } from '../../src/webhooks/secrets.ts';
import type { LookupFn } from '../../src/webhooks/destination.ts';
import { eventsCollection } from '../../src/events/documents.ts';
import { newId } from '../../src/ids.ts';
import { credentialDigest } from '../../src/identity/oauth/credentials.ts';
import { oauthCollections } from '../../src/identity/oauth/documents.ts';
import { connectionsCollection } from '../../src/identity/connections/documents.ts';

const KEY_HEX = randomBytes(32).toString('hex');
const SECRET = /^cmp_whs_[A-Za-z0-9_-]{43}$/;
const PUBLIC_V4 = '93.184.215.14';

// Offline DNS: *.hooks-test.com names answer per this table; anything else does not exist.
const DNS: Record<string, string[]> = {
  'a.hooks-test.com': [PUBLIC_V4],
  'b.hooks-test.com': ['2606:4700::1111', PUBLIC_V4],
};
// A name whose nameservers never answer: the lookup never settles; each call's signal is kept.
const SILENT = 'silent.hooks-test.com';
const silentSignals: AbortSignal[] = [];
const lookup: LookupFn = async (hostname, { signal }) => {
  if (hostname === SILENT) {
    silentSignals.push(signal);
    return new Promise<never>(() => {});
  }
  const answer = DNS[hostname];
  if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

let app: TestApp;
let noKeyApp: TestApp;
let handles = 0;

test.before(async () => {
  app = await startApp({ env: { WEBHOOK_ENCRYPTION_KEY: KEY_HEX, WEBHOOK_ENDPOINT_LIMIT: '3', WEBHOOK_CREATIONS_PER_DAY: '6' } });
  // The check at creation is bounded by the attempt timeout: short here, for the silent name.
  configureWebhooks(app.deps, { lookup, timeoutMs: 1000 });
  noKeyApp = await startApp();
  configureWebhooks(noKeyApp.deps, { lookup });
});
test.after.always(async () => {
  await app?.close();
  await noKeyApp?.close();
});

async function org(target: TestApp = app): Promise<AppliedOrg & { admin: string; buyer: string }> {
  const applied = await applyManifest(target, acmeManifest(`org${++handles}`));
  return { ...applied, admin: applied.keys['admin-key'], buyer: applied.keys['buyer-key'] };
}

const create = (key: string, body: unknown = { url: 'https://a.hooks-test.com/in', subscribedTypes: ['purchase.approved'] }, target = app) =>
  target.request('/v1/webhooks', { key, body });

const expectError = (t: any, res: { status: number; body: any; text: string }, status: number, code: string) => {
  t.is(res.status, status, res.text);
  t.is(res.body?.error?.code, code, res.text);
};

test('create: 201 with the secret once; reads never show it; list includes it', async (t) => {
  const o = await org();
  const res = await create(o.admin, { url: 'https://a.hooks-test.com/in?x=1', subscribedTypes: ['purchase.approved', 'agent.disabled'], description: 'Main' });
  t.is(res.status, 201, res.text);
  t.regex(res.body.secret, SECRET);
  t.like(res.body, {
    url: 'https://a.hooks-test.com/in?x=1',
    description: 'Main',
    status: 'ACTIVE',
    apiVersion: '2026-09-01',
    consecutiveFailures: 0,
    disabledAt: null,
    revokedAt: null,
    lastFailureAt: null,
    lastSuccessAt: null,
  });
  t.deepEqual(res.body.subscribedTypes, ['purchase.approved', 'agent.disabled']);
  t.regex(res.body.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

  const got = await app.request(`/v1/webhooks/${res.body.id}`, { key: o.admin });
  t.is(got.status, 200);
  t.false('secret' in got.body);
  t.is(got.body.id, res.body.id);
  const list = await app.request('/v1/webhooks', { key: o.admin });
  t.is(list.status, 200);
  t.deepEqual(list.body.items.map((e: any) => e.id), [res.body.id]);
  t.false(list.text.includes('cmp_whs_'));
  t.false(list.text.includes(res.body.secret));
});

test('secrets at rest are AES-GCM blobs bound to the endpoint, never the plain secret', async (t) => {
  const o = await org();
  const res = await create(o.admin);
  const stored = await webhookCollections(app.store.db).endpoints.findOne({ _id: res.body.id });
  t.truthy(stored?.secrets);
  const raw = JSON.stringify(stored);
  t.false(raw.includes(res.body.secret));
  t.false(raw.includes('cmp_whs_'));
  const key = parseEncryptionKey(KEY_HEX);
  t.is(decryptSecret(key, stored!.secrets!.current, res.body.id), res.body.secret);
  t.throws(() => decryptSecret(key, stored!.secrets!.current, newId()));
});

test('another organisation’s endpoint is a plain 404 everywhere; malformed ids are 404', async (t) => {
  const mine = await org();
  const theirs = await org();
  const id = (await create(theirs.admin)).body.id;
  for (const [method, path, body] of [
    ['GET', `/v1/webhooks/${id}`, undefined],
    ['PATCH', `/v1/webhooks/${id}`, { description: 'x' }],
    ['DELETE', `/v1/webhooks/${id}`, undefined],
    ['GET', `/v1/webhooks/${id}/deliveries`, undefined],
    ['POST', `/v1/webhooks/${id}/rotate-secret`, undefined],
    ['POST', `/v1/webhooks/${id}/test`, undefined],
    ['GET', '/v1/webhooks/not-a-uuid', undefined],
    ['GET', `/v1/webhooks/${newId()}`, undefined],
    ['DELETE', '/v1/webhooks/123', undefined],
    ['GET', '/v1/webhooks/123/deliveries', undefined],
  ] as const) {
    const res = await app.request(path, { method, key: mine.admin, body });
    expectError(t, res, 404, 'not_found');
  }
  t.is((await app.request('/v1/webhooks', { key: mine.admin })).body.items.length, 0);
  // Still intact for its owner.
  t.is((await app.request(`/v1/webhooks/${id}`, { key: theirs.admin })).body.status, 'ACTIVE');
});

test('401 without or with a bad credential; 403 for an agent-bound key and for a connection', async (t) => {
  const o = await org();
  const id = (await create(o.admin)).body.id;
  // A connection's access token, minted directly in the store as the OAuth flow would.
  const token = 'cmp_oat_' + randomBytes(32).toString('base64url');
  const connectionId = newId();
  await connectionsCollection(app.store.db).insertOne({
    _id: connectionId, organizationId: o.organizationId, personId: newId(), grantedBy: { name: 'Ana Admin' }, agentId: o.agents.buyer.id,
    clientId: 'https://assistant.example/client.json', applicationName: 'Assistant', scopes: ['purchase:check', 'purchase:read', 'purchase:request'],
    createdAt: new Date(), revokedAt: null, revokedReason: null,
  });
  await oauthCollections(app.store.db).accessTokens.insertOne({
    _id: credentialDigest(token), connectionId, clientId: 'https://assistant.example/client.json',
    scopes: ['purchase:check', 'purchase:read', 'purchase:request'], resource: `${app.deps.config.baseUrl}/mcp`, createdAt: new Date(), expiresAt: new Date(Date.now() + 3600_000),
  });
  const probe = await app.request('/v1/webhooks', { key: token });
  const connectionWorks = probe.status === 403 && probe.body?.error?.code === 'oauth_not_permitted';

  const routes: Array<[string, string, unknown]> = [
    ['GET', '/v1/webhooks', undefined],
    ['POST', '/v1/webhooks', { url: 'https://a.hooks-test.com/in', subscribedTypes: ['purchase.approved'] }],
    ['GET', `/v1/webhooks/${id}`, undefined],
    ['PATCH', `/v1/webhooks/${id}`, { description: 'x' }],
    ['DELETE', `/v1/webhooks/${id}`, undefined],
    ['GET', `/v1/webhooks/${id}/deliveries`, undefined],
    ['POST', `/v1/webhooks/${id}/rotate-secret`, undefined],
    ['POST', `/v1/webhooks/${id}/test`, undefined],
  ];
  for (const [method, path, body] of routes) {
    expectError(t, await app.request(path, { method, body }), 401, 'unauthorized');
    expectError(t, await app.request(path, { method, body, key: 'cmp_live_nope' }), 401, 'invalid_api_key');
    expectError(t, await app.request(path, { method, body, key: o.buyer }), 403, 'api_key_not_organization_scoped');
    if (connectionWorks) expectError(t, await app.request(path, { method, body, key: token }), 403, 'oauth_not_permitted');
  }
  // The key-table shapes of the OAuth capability may change; say so rather than pass silently.
  if (!connectionWorks) t.log(`connection probe answered ${probe.status} ${probe.text}; oauth_not_permitted not exercised`);
  t.true(connectionWorks, 'a connection token reaches the webhook routes and is refused with oauth_not_permitted');
  // Nothing changed underneath.
  const after = await app.request(`/v1/webhooks/${id}`, { key: o.admin });
  t.like(after.body, { status: 'ACTIVE', description: null });
});

test('invalid bodies: 400 invalid_request with issues; the whole body has the empty path', async (t) => {
  const o = await org();
  const cases: Array<[unknown, string, string]> = [
    [[], '', 'INVALID_TYPE'],
    ['"a string"', '', 'INVALID_TYPE'],
    [{ subscribedTypes: ['purchase.approved'] }, 'url', 'REQUIRED'],
    [{ url: 'https://a.hooks-test.com/' }, 'subscribedTypes', 'REQUIRED'],
    [{ url: 'https://a.hooks-test.com/', subscribedTypes: [] }, 'subscribedTypes', 'TOO_FEW_ITEMS'],
    [{ url: 'https://a.hooks-test.com/', subscribedTypes: ['webhook.test'] }, 'subscribedTypes.0', 'INVALID_VALUE'],
    [{ url: 'https://a.hooks-test.com/', subscribedTypes: ['purchase.nope'] }, 'subscribedTypes.0', 'INVALID_VALUE'],
    [{ url: 'https://a.hooks-test.com/', subscribedTypes: ['agent.disabled', 'agent.disabled'] }, 'subscribedTypes', 'DUPLICATE_ITEMS'],
    [{ url: 'https://a.hooks-test.com/', subscribedTypes: ['agent.disabled'], headers: { a: 'b' } }, 'headers', 'UNKNOWN_FIELD'],
    [{ url: 42, subscribedTypes: ['agent.disabled'] }, 'url', 'INVALID_TYPE'],
    [{ url: 'https://a.hooks-test.com/', subscribedTypes: ['agent.disabled'], description: 7 }, 'description', 'INVALID_TYPE'],
  ];
  for (const [body, path, code] of cases) {
    const res = typeof body === 'string'
      ? await app.request('/v1/webhooks', { key: o.admin, raw: body, headers: { 'content-type': 'application/json' } })
      : await create(o.admin, body);
    expectError(t, res, 400, 'invalid_request');
    t.true(res.body.error.issues.some((i: any) => i.path === path && i.code === code), `${JSON.stringify(body)} -> ${res.text}`);
  }
  const id = (await create(o.admin)).body.id;
  const patches: Array<[unknown, string, string]> = [
    [{}, '', 'NO_FIELDS'],
    [[], '', 'INVALID_TYPE'],
    [{ status: 'REVOKED' }, 'status', 'INVALID_VALUE'],
    [{ apiVersion: '2025-01-01' }, 'apiVersion', 'INVALID_VALUE'],
    [{ secret: 'cmp_whs_x' }, 'secret', 'UNKNOWN_FIELD'],
    [{ subscribedTypes: [] }, 'subscribedTypes', 'TOO_FEW_ITEMS'],
  ];
  for (const [body, path, code] of patches) {
    const res = await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body });
    expectError(t, res, 400, 'invalid_request');
    t.true(res.body.error.issues.some((i: any) => i.path === path && i.code === code), `${JSON.stringify(body)} -> ${res.text}`);
  }
  const rotate = await app.request(`/v1/webhooks/${id}/rotate-secret`, { key: o.admin, body: { retireImmediately: 'yes' } });
  expectError(t, rotate, 400, 'invalid_request');
  t.is(rotate.body.error.issues[0].path, 'retireImmediately');
  const rotateExtra = await app.request(`/v1/webhooks/${id}/rotate-secret`, { key: o.admin, body: { later: true } });
  expectError(t, rotateExtra, 400, 'invalid_request');
  const testExtra = await app.request(`/v1/webhooks/${id}/test`, { key: o.admin, body: { type: 'purchase.approved' } });
  expectError(t, testExtra, 400, 'invalid_request');
});

test('problems found before the schema about the whole body have the empty path too: nesting, a lone surrogate', async (t) => {
  const o = await org();
  const id = (await create(o.admin)).body.id;
  const deep = '{"description":' + '['.repeat(40) + ']'.repeat(40) + '}';
  const cases: Array<[string, string, string, string]> = [
    ['POST', '/v1/webhooks', '['.repeat(40) + ']'.repeat(40), 'TOO_DEEP'],
    ['PATCH', `/v1/webhooks/${id}`, deep, 'TOO_DEEP'],
    ['POST', `/v1/webhooks/${id}/rotate-secret`, deep, 'TOO_DEEP'],
    ['POST', `/v1/webhooks/${id}/test`, deep, 'TOO_DEEP'],
    ['DELETE', `/v1/webhooks/${id}`, deep, 'TOO_DEEP'],
    ['POST', '/v1/webhooks', '"\\ud800"', 'LONE_SURROGATE'],
    ['PATCH', `/v1/webhooks/${id}`, '"\\ud800"', 'LONE_SURROGATE'],
  ];
  for (const [method, path, raw, code] of cases) {
    const res = await app.request(path, { method, key: o.admin, raw, headers: { 'content-type': 'application/json' } });
    expectError(t, res, 400, 'invalid_request');
    t.deepEqual(res.body.error.issues.map((i: any) => [i.path, i.code]), [['', code]], `${method} ${path} ${raw.slice(0, 20)}`);
  }
  t.like((await app.request(`/v1/webhooks/${id}`, { key: o.admin })).body, { status: 'ACTIVE' });
});

test('415 without JSON content type, 400 malformed_json, 413 above 16 KB', async (t) => {
  const o = await org();
  const id = (await create(o.admin)).body.id;
  const json = JSON.stringify({ url: 'https://a.hooks-test.com/', subscribedTypes: ['agent.disabled'] });
  expectError(t, await app.request('/v1/webhooks', { key: o.admin, raw: json, headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  expectError(t, await app.request('/v1/webhooks', { key: o.admin, raw: json }), 415, 'unsupported_media_type');
  expectError(t, await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, raw: '{"description":"x"}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  expectError(t, await app.request(`/v1/webhooks/${id}/rotate-secret`, { key: o.admin, raw: '{}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  const malformed = { key: o.admin, raw: '{"url": ', headers: { 'content-type': 'application/json' } };
  expectError(t, await app.request('/v1/webhooks', malformed), 400, 'malformed_json');
  expectError(t, await app.request(`/v1/webhooks/${id}`, { ...malformed, method: 'PATCH' }), 400, 'malformed_json');
  expectError(t, await app.request(`/v1/webhooks/${id}/rotate-secret`, malformed), 400, 'malformed_json');
  expectError(t, await app.request(`/v1/webhooks/${id}/test`, { key: o.admin, raw: '{}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  expectError(t, await app.request(`/v1/webhooks/${id}/test`, malformed), 400, 'malformed_json');
  for (const op of ['rotate-secret', 'test']) {
    const big = await app.request(`/v1/webhooks/${id}/${op}`, { key: o.admin, raw: `{"x":"${'d'.repeat(16 * 1024)}"}`, headers: { 'content-type': 'application/json' } });
    expectError(t, big, 413, 'payload_too_large');
  }

  // Exactly at the limit the body is read (and refused for its content); one byte over is 413.
  const padded = (size: number) => {
    const base = JSON.stringify({ url: 'https://a.hooks-test.com/', subscribedTypes: ['agent.disabled'], description: '' });
    return base.replace('"description":""', `"description":"${'d'.repeat(size - base.length)}"`);
  };
  const atLimit = padded(16 * 1024);
  t.is(Buffer.byteLength(atLimit), 16 * 1024);
  const okSize = await app.request('/v1/webhooks', { key: o.admin, raw: atLimit, headers: { 'content-type': 'application/json' } });
  expectError(t, okSize, 400, 'invalid_request'); // description longer than 1000
  const over = await app.request('/v1/webhooks', { key: o.admin, raw: padded(16 * 1024 + 1), headers: { 'content-type': 'application/json' } });
  expectError(t, over, 413, 'payload_too_large');
  const overPatch = await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, raw: padded(20_000), headers: { 'content-type': 'application/json' } });
  expectError(t, overPatch, 413, 'payload_too_large');
});

test('PATCH changes url, description (null clears), subscribedTypes, status and apiVersion; the secret never', async (t) => {
  const o = await org();
  const created = (await create(o.admin, { url: 'https://a.hooks-test.com/in', subscribedTypes: ['purchase.approved'], description: 'first' })).body;
  const before = await webhookCollections(app.store.db).endpoints.findOne({ _id: created.id });

  const r1 = await app.request(`/v1/webhooks/${created.id}`, { method: 'PATCH', key: o.admin, body: { url: 'https://b.hooks-test.com/new', subscribedTypes: ['budget.exhausted', 'connection.created'], apiVersion: '2026-09-01' } });
  t.is(r1.status, 200, r1.text);
  t.like(r1.body, { url: 'https://b.hooks-test.com/new', description: 'first', apiVersion: '2026-09-01', status: 'ACTIVE' });
  t.deepEqual(r1.body.subscribedTypes, ['budget.exhausted', 'connection.created']);
  t.false('secret' in r1.body);

  const r2 = await app.request(`/v1/webhooks/${created.id}`, { method: 'PATCH', key: o.admin, body: { description: null } });
  t.is(r2.body.description, null);
  const r3 = await app.request(`/v1/webhooks/${created.id}`, { method: 'PATCH', key: o.admin, body: { url: 'https://a.hooks-test.com/in' } });
  t.is(r3.body.description, null, 'omitted leaves it unchanged');

  const disabled = await app.request(`/v1/webhooks/${created.id}`, { method: 'PATCH', key: o.admin, body: { status: 'DISABLED' } });
  t.is(disabled.body.status, 'DISABLED');
  t.truthy(disabled.body.disabledAt);
  const enabled = await app.request(`/v1/webhooks/${created.id}`, { method: 'PATCH', key: o.admin, body: { status: 'ACTIVE' } });
  t.is(enabled.body.status, 'ACTIVE');
  t.is(enabled.body.disabledAt, disabled.body.disabledAt, 're-enabling keeps when it was last disabled (docs/reference/contract.md §3.4)');
  t.is((await app.request(`/v1/webhooks/${created.id}`, { key: o.admin })).body.disabledAt, disabled.body.disabledAt);

  const after = await webhookCollections(app.store.db).endpoints.findOne({ _id: created.id });
  t.deepEqual(after?.secrets, before?.secrets);
});

test('DELETE revokes: 200 with REVOKED, secrets destroyed, still listed; then 409 on every mutation', async (t) => {
  const o = await org();
  const id = (await create(o.admin)).body.id;
  await app.request(`/v1/webhooks/${id}/test`, { key: o.admin, method: 'POST' });
  const del = await app.request(`/v1/webhooks/${id}`, { method: 'DELETE', key: o.admin });
  t.is(del.status, 200, del.text);
  t.is(del.body.status, 'REVOKED');
  t.truthy(del.body.revokedAt);
  const stored = await webhookCollections(app.store.db).endpoints.findOne({ _id: id });
  t.false(stored !== null && 'secrets' in stored, 'every secret blob is gone');
  t.is((await app.request('/v1/webhooks', { key: o.admin })).body.items[0].status, 'REVOKED');
  const history = await app.request(`/v1/webhooks/${id}/deliveries`, { key: o.admin });
  t.is(history.status, 200);
  t.is(history.body.items.length, 1, 'delivery history survives');
  t.is(history.body.items[0].status, 'CANCELLED');

  expectError(t, await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'ACTIVE' } }), 409, 'webhook_endpoint_revoked');
  expectError(t, await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { url: 'https://a.hooks-test.com/x' } }), 409, 'webhook_endpoint_revoked');
  expectError(t, await app.request(`/v1/webhooks/${id}`, { method: 'DELETE', key: o.admin }), 409, 'webhook_endpoint_revoked');
  expectError(t, await app.request(`/v1/webhooks/${id}/rotate-secret`, { key: o.admin, method: 'POST' }), 409, 'webhook_endpoint_revoked');
  expectError(t, await app.request(`/v1/webhooks/${id}/test`, { key: o.admin, method: 'POST' }), 409, 'webhook_endpoint_revoked');
  t.is((await app.request(`/v1/webhooks/${id}`, { key: o.admin })).body.status, 'REVOKED');
});

test('DELETE takes no fields: an unknown one is refused and nothing is revoked; an empty object is tolerated', async (t) => {
  const o = await org();
  const id = (await create(o.admin)).body.id;
  const refused = await app.request(`/v1/webhooks/${id}`, { method: 'DELETE', key: o.admin, body: { force: true } });
  expectError(t, refused, 400, 'invalid_request');
  t.is(refused.body.error.issues[0].path, 'force');
  t.is(refused.body.error.issues[0].code, 'UNKNOWN_FIELD');
  t.is((await app.request(`/v1/webhooks/${id}`, { key: o.admin })).body.status, 'ACTIVE', 'nothing was revoked');
  expectError(t, await app.request(`/v1/webhooks/${id}`, { method: 'DELETE', key: o.admin, raw: '{"force":', headers: { 'content-type': 'application/json' } }), 400, 'malformed_json');
  const deleted = await app.request(`/v1/webhooks/${id}`, { method: 'DELETE', key: o.admin, body: {} });
  t.is(deleted.status, 200, deleted.text);
  t.is(deleted.body.status, 'REVOKED');
});

test('409 webhook_limit_reached at the allowance of non-revoked endpoints; revoking frees a place', async (t) => {
  const o = await org();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await create(o.admin);
    t.is(res.status, 201);
    ids.push(res.body.id);
  }
  expectError(t, await create(o.admin), 409, 'webhook_limit_reached');
  await app.request(`/v1/webhooks/${ids[0]}`, { method: 'PATCH', key: o.admin, body: { status: 'DISABLED' } });
  expectError(t, await create(o.admin), 409, 'webhook_limit_reached');
  await app.request(`/v1/webhooks/${ids[0]}`, { method: 'DELETE', key: o.admin });
  t.is((await create(o.admin)).status, 201);
  t.is((await app.request('/v1/webhooks', { key: o.admin })).body.items.length, 4, 'the revoked one stays listed');
  // Another organisation has its own allowance.
  t.is((await create((await org()).admin)).status, 201);
});

test('409 webhook_limit_reached past the day\'s creations, however many were revoked; the next UTC day starts again', async (t) => {
  const o = await org();
  const createAndDelete = async () => {
    const res = await create(o.admin);
    if (res.status === 201) t.is((await app.request(`/v1/webhooks/${res.body.id}`, { method: 'DELETE', key: o.admin })).status, 200);
    return res;
  };
  for (let i = 0; i < 6; i++) t.is((await createAndDelete()).status, 201, `creation ${i + 1}`);
  const refused = await createAndDelete();
  expectError(t, refused, 409, 'webhook_limit_reached');
  t.regex(refused.body.error.message, /today/);
  t.is((await app.request('/v1/webhooks', { key: o.admin })).body.items.length, 6, 'the refused creation left nothing');
  // Another organisation has its own day.
  t.is((await create((await org()).admin)).status, 201);
  // Yesterday's count (as the store holds it) no longer counts.
  const { quotas } = webhookCollections(app.store.db);
  await quotas.updateOne({ _id: o.organizationId }, { $set: { creationsDay: '2000-01-01' } });
  t.is((await create(o.admin)).status, 201);
  t.is((await quotas.findOne({ _id: o.organizationId }))?.creations, 1);
});

test('concurrent creations never exceed the allowance', async (t) => {
  const o = await org();
  const results = await Promise.all(Array.from({ length: 6 }, () => create(o.admin)));
  t.is(results.filter((r) => r.status === 201).length, 3);
  t.is(results.filter((r) => r.status === 409 && r.body.error.code === 'webhook_limit_reached').length, 3);
});

test('503 webhook_not_configured on create, rotate and test without WEBHOOK_ENCRYPTION_KEY; reads work', async (t) => {
  const o = await org(noKeyApp);
  expectError(t, await create(o.admin, undefined, noKeyApp), 503, 'webhook_not_configured');
  // An endpoint made while a key was configured (inserted directly) cannot be rotated or tested.
  const id = newId();
  const now = new Date();
  await webhookCollections(noKeyApp.store.db).endpoints.insertOne({
    _id: id, organizationId: o.organizationId, url: 'https://a.hooks-test.com/in', description: null, status: 'ACTIVE', subscribedTypes: ['agent.disabled'],
    apiVersion: '2026-09-01', consecutiveFailures: 0, createdAt: now, updatedAt: now, disabledAt: null, revokedAt: null, lastFailureAt: null, lastSuccessAt: null,
    lastStatusCode: null, lastDurationMs: null, lastErrorClass: null, lastResponseSnippet: null, secrets: { current: 'v1.x.y.z', previous: null, previousExpiresAt: null }, version: 1,
  });
  expectError(t, await noKeyApp.request(`/v1/webhooks/${id}/rotate-secret`, { key: o.admin, method: 'POST' }), 503, 'webhook_not_configured');
  expectError(t, await noKeyApp.request(`/v1/webhooks/${id}/test`, { key: o.admin, method: 'POST' }), 503, 'webhook_not_configured');
  t.is((await noKeyApp.request(`/v1/webhooks/${id}`, { key: o.admin })).status, 200);
  t.is((await noKeyApp.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { description: 'ok' } })).status, 200);
  t.is((await noKeyApp.request('/v1/webhooks', { key: o.admin })).body.items.length, 1);
});

test('rotate-secret: a new secret each time; the old one keeps signing for 24 h unless retireImmediately', async (t) => {
  const o = await org();
  const created = (await create(o.admin)).body;
  const key = parseEncryptionKey(KEY_HEX);
  const rotated = await app.request(`/v1/webhooks/${created.id}/rotate-secret`, { key: o.admin, method: 'POST' });
  t.is(rotated.status, 200, rotated.text);
  t.regex(rotated.body.secret, SECRET);
  t.not(rotated.body.secret, created.secret);
  t.is(rotated.body.id, created.id);
  let stored = (await webhookCollections(app.store.db).endpoints.findOne({ _id: created.id }))!;
  t.is(decryptSecret(key, stored.secrets!.current, created.id), rotated.body.secret);
  t.is(decryptSecret(key, stored.secrets!.previous!, created.id), created.secret);
  const overlap = stored.secrets!.previousExpiresAt!.getTime() - Date.now();
  t.true(overlap > 23.9 * 3600_000 && overlap <= 24 * 3600_000, String(overlap));

  const empty = await app.request(`/v1/webhooks/${created.id}/rotate-secret`, { key: o.admin, raw: '', headers: { 'content-type': 'application/json' } });
  t.is(empty.status, 200, 'an empty body means defaults');

  const retired = await app.request(`/v1/webhooks/${created.id}/rotate-secret`, { key: o.admin, body: { retireImmediately: true } });
  t.is(retired.status, 200);
  stored = (await webhookCollections(app.store.db).endpoints.findOne({ _id: created.id }))!;
  t.is(decryptSecret(key, stored.secrets!.current, created.id), retired.body.secret);
  t.is(stored.secrets!.previous, null);
  t.false('secret' in (await app.request(`/v1/webhooks/${created.id}`, { key: o.admin })).body);
});

test('test: 202 {deliveryId, eventId, status: queued}; a real webhook.test event and delivery, regardless of subscriptions', async (t) => {
  const o = await org();
  const created = (await create(o.admin, { url: 'https://a.hooks-test.com/in', subscribedTypes: ['budget.exhausted'] })).body;
  const res = await app.request(`/v1/webhooks/${created.id}/test`, { key: o.admin, method: 'POST' });
  t.is(res.status, 202, res.text);
  t.is(res.body.status, 'queued');
  const event = await eventsCollection(app.store.db).findOne({ _id: res.body.eventId });
  t.like(event, { type: 'webhook.test', organizationId: o.organizationId });
  t.truthy(event?.dispatchedAt, 'not fanned out to other endpoints');
  const list = await app.request(`/v1/webhooks/${created.id}/deliveries`, { key: o.admin });
  t.is(list.body.items.length, 1);
  t.like(list.body.items[0], { id: res.body.deliveryId, eventId: res.body.eventId, eventType: 'webhook.test', status: 'PENDING', attemptCount: 0, deliveredAt: null, lastAttemptAt: null });
  const delivery = await webhookCollections(app.store.db).deliveries.findOne({ _id: res.body.deliveryId });
  const envelope = JSON.parse(delivery!.body);
  t.deepEqual(Object.keys(envelope), ['id', 'type', 'apiVersion', 'createdAt', 'accountId', 'data']);
  t.like(envelope, { id: res.body.eventId, type: 'webhook.test', apiVersion: '2026-09-01', accountId: o.organizationId });
});

test('deliveries: newest first, limit (default 20, 1..100) and hasMore; bad limits are invalid_request', async (t) => {
  const o = await org();
  const id = (await create(o.admin)).body.id;
  const made: string[] = [];
  for (let i = 0; i < 22; i++) made.push((await app.request(`/v1/webhooks/${id}/test`, { key: o.admin, method: 'POST' })).body.deliveryId);
  const newestFirst = [...made].reverse();
  const def = await app.request(`/v1/webhooks/${id}/deliveries`, { key: o.admin });
  t.is(def.body.items.length, 20);
  t.true(def.body.hasMore);
  t.deepEqual(def.body.items.map((d: any) => d.id), newestFirst.slice(0, 20));
  const five = await app.request(`/v1/webhooks/${id}/deliveries?limit=5`, { key: o.admin });
  t.deepEqual(five.body.items.map((d: any) => d.id), newestFirst.slice(0, 5));
  const all = await app.request(`/v1/webhooks/${id}/deliveries?limit=100`, { key: o.admin });
  t.is(all.body.items.length, 22);
  t.false(all.body.hasMore);
  const exact = await app.request(`/v1/webhooks/${id}/deliveries?limit=22`, { key: o.admin });
  t.false(exact.body.hasMore);
  // Leading zeros, any number of them, write the same number (as page and pageSize do).
  for (const zeros of ['005', '000005']) t.is((await app.request(`/v1/webhooks/${id}/deliveries?limit=${zeros}`, { key: o.admin })).body.items?.length, 5, zeros);
  for (const bad of ['0', '101', '-1', 'abc', '2.5', '', '1e1', '00000', '99999999999999999999']) {
    const res = await app.request(`/v1/webhooks/${id}/deliveries?limit=${encodeURIComponent(bad)}`, { key: o.admin });
    expectError(t, res, 400, 'invalid_request');
    t.is(res.body.error.issues[0].path, 'limit');
  }
});

// ---- Destination rules through the API (docs/reference/contract.md §6.6): syntax and resolved addresses. ----

const hostileUrls = [
  'http://a.hooks-test.com/',
  'https://a.hooks-test.com:8443/',
  'https://a.hooks-test.com:80/',
  'https://user:pass@a.hooks-test.com/',
  'https://user@a.hooks-test.com/',
  'https://127.0.0.1/',
  'https://2130706433/',
  'https://0177.0.0.1/',
  'https://0x7f.0.0.1/',
  'https://0x7f000001/',
  'https://127.1/',
  'https://017700000001/',
  'https://169.254.169.254/latest/meta-data/',
  'https://8.8.8.8/',
  'https://%31%32%37.0.0.1/',
  'https://１２７.０.０.１/',
  'https://[::1]/',
  'https://[fe80::1%25eth0]/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:7f00:1]/',
  'https://[64:ff9b::7f00:1]/',
  'https://localhost/',
  'https://LOCALHOST/',
  'https://api.localhost/',
  'https://printer.local/',
  'https://metadata.google.internal/',
  'https://a.hooks-test.com/#frag',
  'https://unknown.hooks-test.com/',
];

// Names resolving (per the injected DNS) to addresses that are not publicly routable.
const hostileAnswers: Array<[string, string[]]> = [
  ['loopback', ['127.0.0.1']],
  ['private10', ['10.0.0.5']],
  ['private172', ['172.16.3.4']],
  ['private192', ['192.168.1.1']],
  ['cgnat', ['100.64.0.1']],
  ['metadata', ['169.254.169.254']],
  ['zero', ['0.0.0.0']],
  ['multicast', ['224.0.0.251']],
  ['reserved', ['240.0.0.1']],
  ['v6loopback', ['::1']],
  ['ula', ['fd12:3456::1']],
  ['linklocal6', ['fe80::1']],
  ['zoneid', ['fe80::1%eth0']],
  ['mapped', ['::ffff:127.0.0.1']],
  ['mappedpublic', ['::ffff:8.8.8.8']],
  ['nat64', ['64:ff9b::a9fe:a9fe']],
  ['sixtofour', ['2002:7f00:1::1']],
  ['mixed1', [PUBLIC_V4, '10.0.0.1']],
  ['mixed2', ['192.168.0.1', PUBLIC_V4]],
  ['mixed3', ['2606:4700::1111', '::1']],
];
for (const [name, addresses] of hostileAnswers) DNS[`${name}.evil-test.com`] = addresses;

test(`${hostileUrls.length + hostileAnswers.length} hostile destinations: 400 webhook_url_not_permitted at create and on PATCH`, async (t) => {
  t.true(hostileUrls.length + hostileAnswers.length >= 40);
  const o = await org();
  const id = (await create(o.admin)).body.id;
  const urls = [...hostileUrls, ...hostileAnswers.map(([name]) => `https://${name}.evil-test.com/hook`)];
  for (const url of urls) {
    const res = await create(o.admin, { url, subscribedTypes: ['purchase.approved'] });
    t.is(res.status, 400, `${url}: ${res.text}`);
    t.is(res.body?.error?.code, 'webhook_url_not_permitted', url);
    const patch = await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { url } });
    t.is(patch.body?.error?.code, 'webhook_url_not_permitted', `PATCH ${url}`);
  }
  const list = await app.request('/v1/webhooks', { key: o.admin });
  t.is(list.body.items.length, 1, 'nothing was created');
  t.is(list.body.items[0].url, 'https://a.hooks-test.com/in', 'nothing was changed');
});

test('public names on port 443 are accepted (IPv6 + IPv4 answers; explicit :443)', async (t) => {
  const o = await org();
  const res = await create(o.admin, { url: 'https://B.hooks-test.com:443/path?q=1', subscribedTypes: ['purchase.approved'] });
  t.is(res.status, 201, res.text);
  t.is(res.body.url, 'https://b.hooks-test.com/path?q=1');
});

test('a name whose nameservers never answer: 400 webhook_url_not_permitted at create and on PATCH once the timeout passes, and the resolver is told to stop', async (t) => {
  const o = await org();
  const id = (await create(o.admin)).body.id;
  const res = await create(o.admin, { url: `https://${SILENT}/hook`, subscribedTypes: ['purchase.approved'] });
  t.is(res.status, 400, res.text);
  t.is(res.body?.error?.code, 'webhook_url_not_permitted');
  t.regex(res.body?.error?.message ?? '', /could not be resolved within 1000 ms/);
  const patch = await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { url: `https://${SILENT}/hook` } });
  t.is(patch.status, 400, patch.text);
  t.is(patch.body?.error?.code, 'webhook_url_not_permitted');
  t.is(silentSignals.length, 2);
  t.true(silentSignals.every((signal) => signal.aborted), 'each resolution was cancelled at the deadline');
  t.is((await app.request(`/v1/webhooks/${id}`, { key: o.admin })).body.url, 'https://a.hooks-test.com/in', 'nothing was changed');
});
