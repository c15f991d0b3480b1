// The credential matrix of docs/reference/contract.md §5.1/§5.3 and the 401/403 codes of section 7, through real HTTP.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { openApi } from '../helpers/contract.ts';
import { classifyKey } from '../../src/identity/credentials/api-keys.ts';

let app: TestApp;
let acme: AppliedOrg;

test.before(async () => {
  app = await startApp();
  const manifest = acmeManifest();
  manifest.apiKeys.push(
    { handle: 'expired-key', expiresAt: '2020-01-01T00:00:00.000Z' } as never,
    { handle: 'doomed-key' } as never,
  );
  acme = await applyManifest(app, manifest);
});
test.after.always(() => app?.close());

const code = (res: { body: any }) => res.body?.error?.code;

test('no credential, or not a bearer credential, is 401 unauthorized', async (t) => {
  for (const headers of [{}, { authorization: 'Basic dXNlcjpwYXNz' }, { authorization: 'Bearer' }, { authorization: '' }] as Record<string, string>[]) {
    const res = await app.request('/v1/agents', { headers });
    t.is(res.status, 401);
    t.is(code(res), 'unauthorized');
    t.is(typeof res.body.error.message, 'string');
  }
});

test('an unknown or malformed key is 401 invalid_api_key', async (t) => {
  const forged = acme.keys['admin-key'].slice(0, -4) + 'AAAA';
  for (const key of ['cmp_live_000000000000_' + 'A'.repeat(43), 'not-a-key', forged, 'cmp_live_short']) {
    const res = await app.request('/v1/agents', { key });
    t.is(res.status, 401, key);
    t.is(code(res), 'invalid_api_key');
  }
});

test('a key of another environment is 401 wrong_environment', async (t) => {
  const res = await app.request('/v1/agents', { key: 'cmp_test_abcdefabcdef_' + 'B'.repeat(43) });
  t.is(res.status, 401);
  t.is(code(res), 'wrong_environment');
});

test('an unknown access token is 401 invalid_token', async (t) => {
  const res = await app.request('/v1/agents', { key: 'cmp_oat_' + 'C'.repeat(43) });
  t.is(res.status, 401);
  t.is(code(res), 'invalid_token');
});

test('an expired key is 401 api_key_expired', async (t) => {
  const res = await app.request('/v1/agents', { key: acme.keys['expired-key'] });
  t.is(res.status, 401);
  t.is(code(res), 'api_key_expired');
});

test('a key revoked through the operator API is refused on the next call', async (t) => {
  const key = acme.keys['doomed-key'];
  t.is((await app.request('/v1/agents', { key })).status, 200);
  const revoke = await app.admin(`/admin/api-keys/${acme.keyIds['doomed-key']}`, { method: 'DELETE' });
  t.is(revoke.status, 200);
  t.truthy(revoke.body.apiKey.revokedAt);
  const res = await app.request('/v1/agents', { key });
  t.is(res.status, 401);
  t.is(code(res), 'api_key_revoked');
});

test('agent-bound keys are refused on organisation operations with api_key_not_organization_scoped', async (t) => {
  const key = acme.keys['buyer-key'];
  const policyId = acme.policies.office.id;
  const versionId = acme.policies.office.activeVersionId;
  for (const [method, path] of [
    ['GET', '/v1/agents'],
    ['GET', '/v1/policies'],
    ['GET', `/v1/policies/${policyId}`],
    ['GET', `/v1/policies/${policyId}/versions/${versionId}`],
    ['POST', `/v1/policies/${policyId}/versions/${versionId}/validate`],
  ]) {
    const res = await app.request(path, { method, key });
    t.is(res.status, 403, `${method} ${path}`);
    t.is(code(res), 'api_key_not_organization_scoped');
  }
});

test('organization-scoped keys reach the organisation operations', async (t) => {
  const key = acme.keys['admin-key'];
  const policyId = acme.policies.office.id;
  const versionId = acme.policies.office.activeVersionId;
  for (const [method, path] of [
    ['GET', '/v1/agents'],
    ['GET', '/v1/policies'],
    ['GET', `/v1/policies/${policyId}`],
    ['GET', `/v1/policies/${policyId}/versions/${versionId}`],
    ['POST', `/v1/policies/${policyId}/versions/${versionId}/validate`],
  ]) {
    const res = await app.request(path, { method, key });
    t.is(res.status, 200, `${method} ${path}`);
  }
});

test('no credential may author policy: 403 api_key_not_permitted for every kind', async (t) => {
  const policyId = acme.policies.office.id;
  const versionId = acme.policies.office.activeVersionId;
  const attempts: [string, string][] = [
    ['POST', '/v1/policies'],
    ['PUT', `/v1/policies/${policyId}`],
    ['PATCH', `/v1/policies/${policyId}`],
    ['DELETE', `/v1/policies/${policyId}`],
    ['POST', `/v1/policies/${policyId}/versions`],
    ['POST', `/v1/policies/${policyId}/versions/${versionId}/activate`],
    ['PATCH', `/v1/policies/${policyId}/versions/${versionId}`],
    ['DELETE', `/v1/policies/${policyId}/versions/${versionId}`],
  ];
  for (const key of [acme.keys['admin-key'], acme.keys['buyer-key']]) {
    for (const [method, path] of attempts) {
      const res = await app.request(path, { method, key, body: { name: 'x' } });
      t.is(res.status, 403, `${method} ${path}`);
      t.is(code(res), 'api_key_not_permitted');
    }
  }
});

test('a suspended organisation is refused with 403 organization_suspended, and reinstated', async (t) => {
  const other = await applyManifest(app, acmeManifest('suspendable'));
  const key = other.keys['admin-key'];
  const suspend = await app.admin(`/admin/organizations/${other.organizationId}`, { method: 'PATCH', body: { status: 'SUSPENDED' } });
  t.is(suspend.status, 200);
  for (const k of [key, other.keys['buyer-key']]) {
    const res = await app.request('/v1/agents', { key: k });
    t.is(res.status, 403);
    t.is(code(res), 'organization_suspended');
  }
  await app.admin(`/admin/organizations/${other.organizationId}`, { method: 'PATCH', body: { status: 'ACTIVE' } });
  t.is((await app.request('/v1/agents', { key })).status, 200);
});

test('a suspended organisation is 403 organization_suspended on every documented operation, whatever the kind of key', async (t) => {
  const other = await applyManifest(app, acmeManifest('suspended-everywhere'));
  const id = '01a226da-0860-7525-973b-454a2adc038d';
  const operations = Object.entries(openApi.paths as Record<string, Record<string, any>>).flatMap(([template, item]) =>
    Object.entries(item)
      .filter(([, op]) => op.security?.length > 0)
      .map(([method]) => [method.toUpperCase(), template.replace(/\{\w+\}/g, id)] as const),
  );
  t.true(operations.length >= 20, `${operations.length} operations`);
  await app.admin(`/admin/organizations/${other.organizationId}`, { method: 'PATCH', body: { status: 'SUSPENDED' } });
  try {
    for (const [method, path] of operations) {
      for (const key of [other.keys['admin-key'], other.keys['buyer-key']]) {
        const res = await app.request(path, { method, key, body: method === 'GET' || method === 'DELETE' ? undefined : {} });
        t.is(res.status, 403, `${method} ${path}`);
        t.is(code(res), 'organization_suspended', `${method} ${path}`);
      }
    }
  } finally {
    await app.admin(`/admin/organizations/${other.organizationId}`, { method: 'PATCH', body: { status: 'ACTIVE' } });
  }
});

test('keys are stored as digests: no stored document contains a secret', async (t) => {
  const docs = await app.deps.collections.apiKeys.find({ organizationId: acme.organizationId }).toArray();
  t.true(docs.length >= 3);
  const dump = JSON.stringify(docs);
  for (const key of Object.values(acme.keys)) {
    t.false(dump.includes(key));
    t.true(dump.includes(key.slice(0, 21)), 'the public prefix is kept for display');
  }
});

test('the operator API accepts only ADMIN_TOKEN', async (t) => {
  for (const key of [acme.keys['admin-key'], 'wrong-token-wrong-token-wrong', null]) {
    const res = await app.request('/admin/manifests', { key, body: acmeManifest('x') });
    t.is(res.status, 401);
    t.is(code(res), 'unauthorized');
  }
});

// RFC 9110 15.5.2: a 401 MUST carry WWW-Authenticate; RFC 6750 3 and 3.1: `Bearer`, with no error
// code when no credential was sent and `invalid_token` when the one sent was refused.
test('every 401 on /v1 and /admin names the Bearer scheme in WWW-Authenticate, invalid_token when a credential was refused', async (t) => {
  const challengeOf = async (path: string, key: string | null, headers: Record<string, string> = {}) => {
    const res = await app.request(path, { key, headers });
    t.is(res.status, 401, `${path} ${key?.slice(0, 12)}`);
    return res.headers.get('www-authenticate');
  };
  t.is(await challengeOf('/v1/agents', null), 'Bearer');
  t.is(await challengeOf('/v1/agents', null, { authorization: 'Basic dXNlcjpwYXNz' }), 'Bearer', 'another scheme: as if none was sent');
  for (const key of ['cmp_live_000000000000_' + 'A'.repeat(43), 'not-a-key', 'cmp_test_abcdefabcdef_' + 'B'.repeat(43), 'cmp_oat_' + 'C'.repeat(43), acme.keys['expired-key']]) {
    t.is(await challengeOf('/v1/agents', key), 'Bearer error="invalid_token"', key.slice(0, 12));
  }
  t.is(await challengeOf('/admin/connections', null), 'Bearer');
  t.is(await challengeOf('/admin/connections', 'wrong-token-wrong-token-wrong'), 'Bearer error="invalid_token"');
});

test('a key\'s lastUsedAt is written at most once a minute, though the key is served from the cache', async (t) => {
  let clock = new Date('2026-11-23T10:00:00.000Z');
  const own = await startApp({ now: () => clock });
  t.teardown(() => own.close());
  const org = await applyManifest(own, acmeManifest());
  const key = org.keys['admin-key'];
  const { prefix } = classifyKey(key) as { prefix: string };
  const stored = async () => ((await own.store.db.collection('api_keys').findOne({ prefix })) as { lastUsedAt?: Date } | null)?.lastUsedAt;
  for (let i = 0; i < 5; i++) {
    t.is((await own.request('/v1/agents', { key })).status, 200);
    clock = new Date(clock.getTime() + 10_000);
  }
  t.deepEqual(await stored(), new Date('2026-11-23T10:00:00.000Z'), 'five calls within a minute: the first one\'s time');
  clock = new Date('2026-11-23T10:01:00.000Z');
  t.is((await own.request('/v1/agents', { key })).status, 200);
  t.deepEqual(await stored(), new Date('2026-11-23T10:01:00.000Z'), 'a minute later it is written again');
});
