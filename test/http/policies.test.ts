// GET /v1/agents, /v1/policies..., validate (docs/reference/contract.md §4.6-4.10) through real HTTP.
import test from 'ava';
import fc from 'fast-check';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { refoldOnce } from '../../src/store/text-search.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let app: TestApp;
let acme: AppliedOrg;
let globex: AppliedOrg;
let key: string;

test.before(async () => {
  app = await startApp();
  const manifest = acmeManifest();
  for (let i = 0; i < 30; i++) {
    manifest.policies.push({
      handle: `bulk-${i}`,
      name: `Bulk policy ${String(i).padStart(2, '0')}${i % 10 === 0 ? ' (Cloud)' : ''}`,
      description: null,
      status: i % 3 === 0 ? 'DISABLED' : 'ACTIVE',
      scope: 'ORGANIZATION',
      currencies: ['EUR'],
      activate: true,
      rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: String(1000 + i) }],
      merchants: [],
    } as never);
  }
  manifest.policies.push({
    handle: 'broken',
    name: 'Broken draft',
    description: 'Invalid on purpose',
    status: 'ACTIVE',
    scope: 'AGENT',
    agents: ['buyer'],
    currencies: ['EUR'],
    activate: false,
    rules: [
      { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '1000' },
      { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '5000' },
      { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '9000', currency: 'GBP' },
    ],
    merchants: [
      { listType: 'ALLOW', label: 'Paper  Co.' },
      { listType: 'BLOCK', label: 'PAPER CO' },
    ],
  } as never);
  acme = await applyManifest(app, manifest);
  globex = await applyManifest(app, acmeManifest('globex'));
  key = acme.keys['admin-key'];
});
test.after.always(() => app?.close());

test('GET /v1/agents lists the organisation’s agents in the Agent shape', async (t) => {
  const res = await app.request('/v1/agents', { key });
  t.is(res.status, 200);
  t.deepEqual(res.body.agents.map((a: any) => a.name).sort(), ['Office buyer', 'Travel booker']);
  for (const a of res.body.agents) {
    t.regex(a.id, UUID);
    t.regex(a.createdAt, TIMESTAMP);
    t.regex(a.updatedAt, TIMESTAMP);
    t.is(a.status, 'ENABLED');
    t.true('description' in a);
  }
  t.is(res.body.agents.find((a: any) => a.name === 'Travel booker').description, null);
});

test('tenants are isolated: another organisation’s agents and policies do not exist', async (t) => {
  const otherKey = globex.keys['admin-key'];
  const agents = await app.request('/v1/agents', { key: otherKey });
  t.false(agents.body.agents.some((a: any) => a.id === acme.agents.buyer.id));
  const policy = await app.request(`/v1/policies/${acme.policies.office.id}`, { key: otherKey });
  t.is(policy.status, 404);
  t.is(policy.body.error.code, 'not_found');
  const version = await app.request(`/v1/policies/${acme.policies.office.id}/versions/${acme.policies.office.activeVersionId}`, { key: otherKey });
  t.is(version.status, 404);
  const validate = await app.request(`/v1/policies/${acme.policies.office.id}/versions/${acme.policies.office.activeVersionId}/validate`, { method: 'POST', key: otherKey });
  t.is(validate.status, 404);
  const missing = await app.request('/v1/policies/0190aaaa-0000-7000-8000-000000000000', { key: otherKey });
  t.deepEqual(policy.body, missing.body);
});

test('GET /v1/policies pages newest first with the pagination object', async (t) => {
  const first = await app.request('/v1/policies', { key });
  t.is(first.status, 200);
  t.is(first.body.policies.length, 25);
  t.deepEqual(first.body.pagination, { page: 1, pageSize: 25, total: 33, totalPages: 2 });
  const second = await app.request('/v1/policies?page=2', { key });
  t.is(second.body.policies.length, 8);
  const ids = [...first.body.policies, ...second.body.policies].map((p: any) => p.id);
  t.is(new Set(ids).size, 33);
  const beyond = await app.request('/v1/policies?page=9', { key });
  t.is(beyond.status, 200);
  t.deepEqual(beyond.body.policies, []);
  t.is(beyond.body.pagination.totalPages, 2);
  const created = [...first.body.policies, ...second.body.policies].map((p: any) => p.createdAt);
  t.deepEqual(created, [...created].sort().reverse());
});

test('pageSize above 100 is clamped; malformed values are 400 invalid_request', async (t) => {
  const clamped = await app.request('/v1/policies?pageSize=500', { key });
  t.is(clamped.status, 200);
  t.is(clamped.body.pagination.pageSize, 100);
  t.is(clamped.body.policies.length, 33);
  for (const q of ['pageSize=abc', 'pageSize=0', 'page=0', 'page=-1', 'page=1.5', 'status=RUNNING', 'colour=blue']) {
    const res = await app.request(`/v1/policies?${q}`, { key });
    t.is(res.status, 400, q);
    t.is(res.body.error.code, 'invalid_request');
    t.true(res.body.error.issues.length > 0);
  }
});

test('a query with more than 100 problems lists the first 100, as a body does', async (t) => {
  const query = Array.from({ length: 150 }, (_, i) => `unknown${i}=1`).join('&');
  const res = await app.request(`/v1/policies?${query}&page=0`, { key });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'invalid_request');
  t.is(res.body.error.issues.length, 100);
  t.deepEqual(res.body.error.issues[0], { path: 'unknown0', code: 'UNKNOWN_FIELD', message: 'Unknown query parameter "unknown0".' });
});

test('status filter and case-insensitive plain-text search', async (t) => {
  const disabled = await app.request('/v1/policies?status=DISABLED&pageSize=100', { key });
  t.is(disabled.body.pagination.total, 10);
  t.true(disabled.body.policies.every((p: any) => p.status === 'DISABLED' && p.inForce === false));
  const search = await app.request(`/v1/policies?search=${encodeURIComponent('  (cloud) ')}`, { key });
  t.is(search.body.pagination.total, 3);
  const regexy = await app.request(`/v1/policies?search=${encodeURIComponent('.*')}`, { key });
  t.is(regexy.body.pagination.total, 0, 'search is plain text, not a pattern');
  const empty = await app.request('/v1/policies?search=', { key });
  t.is(empty.body.pagination.total, 33);
  const long = await app.request(`/v1/policies?search=${'x'.repeat(5000)}`, { key });
  t.is(long.status, 200);
});

test('search folds case in full: ss finds ß, istanbul finds İstanbul, also in a name an older release stored only lower-cased', async (t) => {
  const manifest = acmeManifest('foldco');
  manifest.policies = [
    { ...manifest.policies[0], handle: 'strasse', name: 'Büro Straße' },
    { ...manifest.policies[0], handle: 'istanbul', name: 'İstanbul Office' },
    { ...manifest.policies[0], handle: 'old', name: 'Old Straße Rules' },
  ];
  const foldco = await applyManifest(app, manifest);
  const names = async (text: string) => (await app.request(`/v1/policies?search=${encodeURIComponent(text)}`, { key: foldco.keys['admin-key'] })).body.policies.map((p: any) => p.name).sort();
  // As the previous release wrote it: toLowerCase, which leaves 'ß' and keeps the dot of 'İ'.
  const views = app.store.db.collection<{ _id: string }>('policy_views');
  await views.updateOne({ _id: foldco.policies.old.id }, { $set: { nameLower: 'old straße rules' } });
  await app.store.db.collection<{ _id: string }>('migrations').deleteMany({ _id: 'policy_views.nameLower.caseFold' });
  t.is(await refoldOnce(app.store.db, { marker: 'policy_views.nameLower.caseFold', collection: 'policy_views', field: 'nameLower', source: 'summary.name' }), 1);
  t.deepEqual(await names('strasse'), ['Büro Straße', 'Old Straße Rules']);
  t.deepEqual(await names('STRAẞE'), ['Büro Straße', 'Old Straße Rules']);
  t.deepEqual(await names('istanbul'), ['İstanbul Office']);
  t.deepEqual(await names('ｉｓｔａｎｂｕｌ'), ['İstanbul Office']);
  t.deepEqual(await names('buro'), [], 'accents count');
});

test('a policy summary has every field of docs/reference/contract.md §2.6', async (t) => {
  const res = await app.request(`/v1/policies/${acme.policies.office.id}`, { key });
  t.is(res.status, 200);
  const p = res.body.policy;
  t.is(p.name, 'Office supplies');
  t.is(p.scopeType, 'ORGANIZATION');
  t.is(p.status, 'ACTIVE');
  t.true(p.inForce);
  t.is(p.description, null);
  t.is(p.archivedAt, null);
  t.deepEqual(p.agentIds, []);
  t.is(p.versions.length, 1);
  const v = p.activeVersion;
  t.like(v, { versionNumber: 1, status: 'ACTIVE', currencies: ['EUR'], currencyScope: 'EXPLICIT', ruleCount: 3, merchantCount: 1, archivedAt: null });
  t.regex(v.activatedAt, TIMESTAMP);
  const travel = await app.request(`/v1/policies/${acme.policies['travel-usd'].id}`, { key });
  t.deepEqual(travel.body.policy.agentIds, [acme.agents.travel.id]);
});

test('a version carries its rules with MinorAmount strings and merchants with normalised keys', async (t) => {
  const res = await app.request(`/v1/policies/${acme.policies.broken.id}/versions/${acme.policies.broken.draftVersionId}`, { key });
  t.is(res.status, 200);
  const v = res.body.version;
  t.is(v.status, 'DRAFT');
  t.is(v.policyId, acme.policies.broken.id);
  t.is(v.activatedAt, null);
  t.deepEqual(v.rules.map((r: any) => r.amountMinor), ['1000', '5000', '9000']);
  t.deepEqual(v.rules.map((r: any) => r.currency), [null, null, 'GBP']);
  for (const r of v.rules) t.regex(r.id, UUID);
  t.deepEqual(v.merchants.map((m: any) => [m.listType, m.merchantKey, m.label]), [
    ['ALLOW', 'paper co', 'Paper  Co.'],
    ['BLOCK', 'paper co', 'PAPER CO'],
  ]);
});

test('a draft-only policy is not in force', async (t) => {
  const res = await app.request(`/v1/policies/${acme.policies.broken.id}`, { key });
  t.is(res.body.policy.activeVersion, null);
  t.false(res.body.policy.inForce);
});

test('validate reports the problems of a version and writes nothing', async (t) => {
  const path = `/v1/policies/${acme.policies.broken.id}/versions/${acme.policies.broken.draftVersionId}/validate`;
  const before = await app.request(`/v1/policies/${acme.policies.broken.id}`, { key });
  const res = await app.request(path, { method: 'POST', key });
  t.is(res.status, 200);
  t.false(res.body.valid);
  const codes = res.body.issues.map((i: any) => i.code).sort();
  t.deepEqual(codes, ['APPROVAL_THRESHOLD_ABOVE_MAXIMUM', 'RULES_NEVER_APPROVE', 'RULE_CURRENCY_NOT_COVERED']);
  for (const issue of res.body.issues) t.is(typeof issue.message, 'string');
  t.true(Array.isArray(res.body.warnings));
  t.deepEqual(res.body.budgetImpact, []);
  t.is(res.body.version.id, acme.policies.broken.draftVersionId);
  const after = await app.request(`/v1/policies/${acme.policies.broken.id}`, { key });
  t.deepEqual(after.body, before.body);

  const good = await app.request(`/v1/policies/${acme.policies.office.id}/versions/${acme.policies.office.activeVersionId}/validate`, { method: 'POST', key });
  t.true(good.body.valid);
  t.deepEqual(good.body.issues, []);
});

test('a threshold above a maximum of one currency is valid when it applies in another the version covers', async (t) => {
  const manifest = acmeManifest('multi');
  manifest.policies = [
    {
      handle: 'both',
      name: 'Euros and dollars',
      description: null,
      status: 'ACTIVE',
      scope: 'ORGANIZATION',
      currencies: ['EUR', 'USD'],
      activate: true,
      rules: [
        { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '1000', currency: 'EUR' },
        { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '5000' },
      ],
      merchants: [],
    } as never,
  ];
  const multi = await applyManifest(app, manifest);
  const validate = (o: AppliedOrg, versionId = o.policies.both.activeVersionId) =>
    app.request(`/v1/policies/${o.policies.both.id}/versions/${versionId}/validate`, { method: 'POST', key: multi.keys['admin-key'] });
  const res = await validate(multi);
  t.is(res.status, 200);
  t.deepEqual(res.body.issues, []);
  t.true(res.body.valid);
  // It does apply: a dollar purchase above it goes to a person.
  const usd = await app.request('/v1/purchase-requests', { key: multi.keys['buyer-key'], body: { amountMinor: '6000', currency: 'USD', merchant: 'Paper Co', reason: 'desk' } });
  t.deepEqual(usd.body.decision.reasonCodes, ['APPROVAL_THRESHOLD_EXCEEDED']);

  // Below a maximum in every currency it covers, it can never apply (a draft: activation refuses it).
  Object.assign(manifest.policies[0] as any, { activate: false });
  (manifest.policies[0] as any).rules.push({ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '2000', currency: 'USD' });
  const drafted = await applyManifest(app, manifest);
  const dead = await validate(drafted, drafted.policies.both.draftVersionId);
  t.is(dead.status, 200, dead.text);
  t.false(dead.body.valid);
  t.deepEqual(dead.body.issues.map((i: any) => [i.code, i.path]), [['APPROVAL_THRESHOLD_ABOVE_MAXIMUM', 'rules.1'], ['APPROVAL_THRESHOLD_ABOVE_MAXIMUM', 'rules.1']]);
});

test('a threshold equal to the maximum can never apply: validate says so, as the engine refuses what it would escalate', async (t) => {
  const manifest = acmeManifest('equal-threshold');
  const office = manifest.policies[0] as any;
  office.rules[1].amountMinor = office.rules[0].amountMinor;
  office.activate = false; // activation refuses it: validated and simulated as a draft
  const equal = await applyManifest(app, manifest);
  const draftId = equal.policies.office.draftVersionId;
  const res = await app.request(`/v1/policies/${equal.policies.office.id}/versions/${draftId}/validate`, { method: 'POST', key: equal.keys['admin-key'] });
  t.is(res.status, 200, res.text);
  t.false(res.body.valid);
  t.deepEqual(res.body.issues.map((i: any) => [i.code, i.path]), [['APPROVAL_THRESHOLD_ABOVE_MAXIMUM', 'rules.1']]);
  t.regex(res.body.issues[0].message, /equals the per-purchase maximum/);
  // The engine: at the limit both pass, one minor unit above it is refused, never escalated.
  const submit = (amountMinor: string) =>
    app.request('/v1/simulations/draft-policy', { key: equal.keys['admin-key'], body: { policyVersionId: draftId, amountMinor, merchant: 'Paper Co', reason: 'desk' } });
  t.is((await submit(office.rules[0].amountMinor)).body.simulatedDecision.outcome, 'APPROVED');
  const above = await submit(String(Number(office.rules[0].amountMinor) + 1));
  t.is(above.body.simulatedDecision.outcome, 'REJECTED', above.text);
  // One minor unit below the maximum, it escalates something.
  office.rules[1].amountMinor = String(Number(office.rules[0].amountMinor) - 1);
  const below = await applyManifest(app, manifest);
  const ok = await app.request(`/v1/policies/${below.policies.office.id}/versions/${below.policies.office.draftVersionId}/validate`, { method: 'POST', key: equal.keys['admin-key'] });
  t.deepEqual(ok.body.issues, [], ok.text);
});

test('validate calls a threshold dead exactly when the engine never escalates an amount above it', async (t) => {
  const manifest = acmeManifest('threshold-property');
  const office = manifest.policies[0] as any;
  office.activate = false; // a dead threshold cannot be activated: the one draft, rewritten each run, is validated and simulated
  const first = await applyManifest(app, manifest);
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 60 }), async (maximum, threshold) => {
      office.rules[0].amountMinor = String(maximum);
      office.rules[1].amountMinor = String(threshold);
      const applied = await applyManifest(app, manifest);
      const { id, draftVersionId } = applied.policies.office!;
      const validated = await app.request(`/v1/policies/${id}/versions/${draftVersionId}/validate`, { method: 'POST', key: first.keys['admin-key'] });
      const dead = validated.body.issues.some((i: any) => i.code === 'APPROVAL_THRESHOLD_ABOVE_MAXIMUM');
      // The smallest amount the threshold could escalate.
      const sim = await app.request('/v1/simulations/draft-policy', {
        key: first.keys['admin-key'],
        body: { policyVersionId: draftVersionId, amountMinor: String(threshold + 1), merchant: 'Paper Co', reason: 'desk' },
      });
      return dead === (sim.body.simulatedDecision.outcome !== 'REQUIRES_APPROVAL');
    }),
    { numRuns: 15, examples: [[30, 30], [30, 29], [30, 31]] },
  );
  t.pass();
});

test('validate takes no body: an empty object is tolerated, a field is refused, not ignored', async (t) => {
  const path = `/v1/policies/${acme.policies.office.id}/versions/${acme.policies.office.activeVersionId}/validate`;
  t.is((await app.request(path, { method: 'POST', key, body: {} })).status, 200);
  const field = await app.request(path, { method: 'POST', key, body: { dryRun: true } });
  t.is(field.status, 400);
  t.deepEqual(field.body.error.issues.map((i: { path: string; code: string }) => [i.path, i.code]), [['dryRun', 'UNKNOWN_FIELD']]);
  t.is((await app.request(path, { method: 'POST', key, raw: '{', headers: { 'content-type': 'application/json' } })).body.error.code, 'malformed_json');
  t.is((await app.request(path, { method: 'POST', key, raw: 'x', headers: { 'content-type': 'text/plain' } })).status, 415);
});

test('malformed and unknown ids are the same 404', async (t) => {
  for (const path of ['/v1/policies/not-a-uuid', '/v1/policies/0190aaaa-0000-7000-8000-000000000000', `/v1/policies/${acme.policies.office.id}/versions/nope`]) {
    const res = await app.request(path, { key });
    t.is(res.status, 404, path);
    t.is(res.body.error.code, 'not_found');
  }
  const route = await app.request('/v1/nothing-here', { key });
  t.is(route.status, 404);
  t.is(route.body.error.code, 'not_found');
});

test('search is capped at 200 characters, not UTF-16 units: a 200-character name outside the BMP is found by itself', async (t) => {
  const manifest = acmeManifest('initech');
  const long = 'x'.repeat(199) + '😀'; // 200 characters, 201 UTF-16 units: a valid name
  const smiles = '😀'.repeat(100) + 'X';
  manifest.policies = [
    { ...manifest.policies[0], handle: 'long', name: long },
    { ...manifest.policies[0], handle: 'smiles', name: smiles },
  ];
  const initech = await applyManifest(app, manifest);
  const search = (text: string) => app.request(`/v1/policies?search=${encodeURIComponent(text)}`, { key: initech.keys['admin-key'] });
  const names = async (text: string) => (await search(text)).body.policies.map((p: any) => p.name);
  t.deepEqual(await names(long), [long]);
  t.deepEqual(await names(long + 'beyond the cap'), [long], 'what is past 200 characters is dropped, the 200 kept');
  // 150 characters, under the cap: searched whole, so a name with only 100 of them does not match.
  t.deepEqual(await names('😀'.repeat(150)), []);
});
