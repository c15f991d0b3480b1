// Activation runs validate's own check (docs/reference/contract.md §4.9, src/policies/check-version.ts): a
// manifest that would activate a version with issues is refused whole, each issue at its manifest path;
// a draft may have issues; warnings never refuse and come back in the answer. Through the operator API.
import test from 'ava';
import fc from 'fast-check';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { ruleArbitrary } from '../helpers/arbitraries.ts';
import { runCommand } from '../../src/commands/run-command.ts';
import { activateVersion } from '../../src/manifests/apply.ts';
import { projectPolicy } from '../../src/policies/projection.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

/** A policy with all three issues: a rule in a currency it does not cover, a dead threshold, no merchant it could approve. */
const unacceptable = (activate: boolean) => ({
  handle: 'bad',
  name: 'Bad',
  scope: 'ORGANIZATION',
  currencies: ['EUR'],
  activate,
  rules: [
    { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '100000', currency: 'USD' },
    { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '1000' },
    { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '5000' },
  ],
  merchants: [
    { listType: 'ALLOW', label: 'Paper Co' },
    { listType: 'BLOCK', label: 'Paper Co' },
  ],
});

const ISSUES = [
  ['RULE_CURRENCY_NOT_COVERED', 'policies.2.rules.0.currency'],
  ['APPROVAL_THRESHOLD_ABOVE_MAXIMUM', 'policies.2.rules.2'],
  ['RULES_NEVER_APPROVE', 'policies.2.merchants'],
];

const withPolicy = (handle: string, policy: object) => {
  const m = acmeManifest(handle);
  return { ...m, policies: [...m.policies, policy] };
};

const snapshot = async () => {
  const out: Record<string, unknown[]> = {};
  for (const name of ['organizations', 'people', 'agents', 'policies', 'policy_versions', 'policy_views', 'api_keys', 'events']) {
    out[name] = await app.store.db.collection(name).find({}).sort({ _id: 1 }).toArray();
  }
  return out;
};

/** One organisation's documents, for the tests that run beside others. */
const orgSnapshot = async (organizationId: string) => {
  const out: Record<string, unknown[]> = {};
  for (const name of ['people', 'agents', 'policies', 'policy_versions', 'policy_views', 'api_keys', 'events']) {
    out[name] = await app.store.db.collection(name).find({ organizationId }).sort({ _id: 1 }).toArray();
  }
  out.organizations = await app.deps.collections.organizations.find({ _id: organizationId }).toArray();
  return out;
};

test.serial('a manifest that would activate a version with issues is refused whole: each issue at its manifest path, nothing written', async (t) => {
  const before = await snapshot();
  const res = await app.admin('/admin/manifests', { body: withPolicy('act-new', unacceptable(true)) });
  t.is(res.status, 400, res.text);
  t.is(res.body.error.code, 'invalid_request');
  t.is(res.body.error.message, 'The manifest is not valid; nothing was applied.');
  t.deepEqual(res.body.error.issues.map((i: any) => [i.code, i.path]), ISSUES);
  for (const i of res.body.error.issues) t.true(typeof i.message === 'string' && i.message.length > 0);
  t.deepEqual(await snapshot(), before, 'not the organisation, nor its agents, keys or the valid policies before it');

  // An organisation that exists: its other changes in the same manifest are not written either.
  const org = await applyManifest(app, acmeManifest('act-existing'));
  const stored = await snapshot();
  const renamed = withPolicy('act-existing', unacceptable(true));
  renamed.policies[0] = { ...renamed.policies[0], name: 'Renamed' };
  const again = await app.admin('/admin/manifests', { body: renamed });
  t.is(again.status, 400, again.text);
  t.deepEqual(await snapshot(), stored);
  t.is((await app.deps.collections.policies.findOne({ _id: org.policies.office.id }))!.name, 'Office supplies');
});

test('as a draft the same version is applied; validate reports its issues; activating that draft is refused and it stays a draft', async (t) => {
  const draft = await applyManifest(app, withPolicy('act-draft', unacceptable(false)));
  const bad = draft.policies.bad;
  t.is(bad.activeVersionId, null);
  t.truthy(bad.draftVersionId);
  const validated = await app.request(`/v1/policies/${bad.id}/versions/${bad.draftVersionId}/validate`, { method: 'POST', key: draft.keys['admin-key'] });
  t.is(validated.status, 200, validated.text);
  t.false(validated.body.valid);
  // The same issues, at the version's paths where the manifest has them at its own.
  t.deepEqual(
    validated.body.issues.map((i: any) => [i.code, `policies.2.${i.path}`]),
    ISSUES,
  );

  const activate = await app.admin('/admin/manifests', { body: withPolicy('act-draft', unacceptable(true)) });
  t.is(activate.status, 400, activate.text);
  t.deepEqual(activate.body.error.issues.map((i: any) => [i.code, i.path]), ISSUES);
  const versions = await app.deps.collections.policyVersions.find({ policyId: bad.id }).toArray();
  t.deepEqual(versions.map((v) => [v._id, v.status]), [[bad.draftVersionId, 'DRAFT']]);
  t.is((await app.deps.collections.policies.findOne({ _id: bad.id }))!.activeVersionId, null);
});

test('warnings never refuse: the apply answer carries validate\'s warnings, at their manifest paths', async (t) => {
  const policy = {
    handle: 'odd',
    name: 'Odd',
    scope: 'ORGANIZATION',
    currencies: ['EUR'],
    rules: [
      { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '50000' },
      { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '20000' },
    ],
    merchants: [],
  };
  const empty = { handle: 'empty', name: 'Empty', scope: 'ORGANIZATION', currencies: ['EUR'], rules: [], merchants: [] };
  const m = acmeManifest('act-warn');
  const res = await app.admin('/admin/manifests', { body: { ...m, policies: [...m.policies, policy, empty] } });
  t.is(res.status, 200, res.text);
  t.truthy(res.body.policies.odd.activeVersionId);
  t.truthy(res.body.policies.empty.activeVersionId);
  t.deepEqual(res.body.warnings.map((w: any) => [w.code, w.path]), [['BUDGET_BELOW_MAXIMUM', 'policies.2.rules.1'], ['NO_RULES', 'policies.3']]);
  // validate says the same of the version, at its own paths.
  const validated = await app.request(`/v1/policies/${res.body.policies.odd.id}/versions/${res.body.policies.odd.activeVersionId}/validate`, {
    method: 'POST',
    key: res.body.apiKeys['admin-key'].key,
  });
  t.true(validated.body.valid);
  t.deepEqual(validated.body.warnings.map((w: any) => [w.code, w.path]), [['BUDGET_BELOW_MAXIMUM', 'rules.1']]);
});

test('validate\'s answer is the one activation keeps: valid exactly when the manifest activating the draft is applied', async (t) => {
  const CURRENCIES = ['EUR', 'USD'];
  const content = fc.record({
    currencies: fc.subarray(CURRENCIES, { minLength: 1 }),
    rules: fc.array(ruleArbitrary(CURRENCIES, { min: 1, max: 100 }, { min: 1, max: 200 }), { maxLength: 3 }),
    merchants: fc.uniqueArray(fc.record({ listType: fc.constantFrom('ALLOW', 'BLOCK'), label: fc.constantFrom('Paper Co', 'Coffee Beans') }), {
      maxLength: 3,
      selector: (m) => `${m.listType}:${m.label}`,
    }),
  });
  let run = 0;
  const seen = { valid: 0, invalid: 0 };
  await fc.assert(
    fc.asyncProperty(content, async (c) => {
      const handle = `act-prop-${++run}`;
      const manifest = (activate: boolean) => ({ ...acmeManifest(handle), policies: [{ handle: 'p', name: 'P', scope: 'ORGANIZATION', ...c, activate }] });
      const draft = await applyManifest(app, manifest(false));
      const p = draft.policies.p;
      const validated = await app.request(`/v1/policies/${p.id}/versions/${p.draftVersionId}/validate`, { method: 'POST', key: draft.keys['admin-key'] });
      const activated = await app.admin('/admin/manifests', { body: manifest(true) });
      seen[validated.body.valid ? 'valid' : 'invalid']++;
      if (validated.body.valid) return activated.status === 200 && activated.body.policies.p.activeVersionId === p.draftVersionId;
      const codes = (issues: any[]) => issues.map((i) => i.code).sort();
      return activated.status === 400 && JSON.stringify(codes(activated.body.error.issues)) === JSON.stringify(codes(validated.body.issues));
    }),
    { numRuns: 25 },
  );
  t.log(seen);
  t.pass();
});

/** What an earlier service did without the check: applies the bad policy as a draft, then activates that draft as it is. */
async function activatedWithIssues(handle: string) {
  const manifest = withPolicy(handle, unacceptable(false));
  const org = await applyManifest(app, manifest);
  const bad = org.policies.bad;
  const c = app.deps.collections;
  await runCommand(app.deps.store, async (session) => {
    const policy = (await c.policies.findOne({ _id: bad.id }, { session }))!;
    const version = (await c.policyVersions.findOne({ _id: bad.draftVersionId! }, { session }))!;
    await activateVersion(c, session, policy, version, null, new Date());
    await projectPolicy(c, session, policy._id);
  });
  return { manifest, org, bad };
}

test('a version activated with issues by an earlier service goes on deciding, and the manifest that made it still applies', async (t) => {
  const { manifest, org, bad } = await activatedWithIssues('act-legacy');

  const purchase = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { amountMinor: '500', merchant: 'Paper Co', reason: 'desk' } });
  t.is(purchase.status, 201, purchase.text);
  t.is(purchase.body.decision.outcome, 'REJECTED', 'the merchant is blocked, as the version says');

  // The same manifest, now asking to activate what is already active: nothing to activate, nothing refused.
  const again = await app.admin('/admin/manifests', { body: { ...manifest, policies: [...manifest.policies.slice(0, 2), unacceptable(true)] } });
  t.is(again.status, 200, again.text);
  t.false(again.body.changed);
  t.is(again.body.policies.bad.activeVersionId, bad.draftVersionId);
  const validated = await app.request(`/v1/policies/${bad.id}/versions/${bad.draftVersionId}/validate`, { method: 'POST', key: org.keys['admin-key'] });
  t.false(validated.body.valid, 'validate still says what is wrong with it');
});

// A version decides purchases only as the active version of an ACTIVE policy: one with issues may be activated
// while its policy is DISABLED or ARCHIVED (it decides nothing), and enabling the policy runs the same check.
for (const dormant of ['DISABLED', 'ARCHIVED']) {
  test(`a version with issues is activated in a ${dormant} policy, with its issues as warnings; enabling that policy is refused until it has an acceptable version`, async (t) => {
    const handle = `act-dormant-${dormant.toLowerCase()}`;
    const applied = await app.admin('/admin/manifests', { body: withPolicy(handle, { ...unacceptable(true), status: dormant }) });
    t.is(applied.status, 200, applied.text);
    const bad = applied.body.policies.bad;
    t.truthy(bad.activeVersionId);
    t.deepEqual(applied.body.warnings.map((w: any) => [w.code, w.path]), ISSUES);
    const keys = { buyer: applied.body.apiKeys['buyer-key'].key };
    // Paper Co is on the bad policy's block list; not in force, it refuses nothing.
    const purchase = await app.request('/v1/purchase-requests', { key: keys.buyer, body: { amountMinor: '500', merchant: 'Paper Co', reason: 'desk' } });
    t.is(purchase.status, 201, purchase.text);
    t.is(purchase.body.decision.outcome, 'APPROVED');

    const stored = await orgSnapshot(applied.body.organization.id);
    const enable = await app.admin('/admin/manifests', { body: withPolicy(handle, { ...unacceptable(true), status: 'ACTIVE' }) });
    t.is(enable.status, 400, enable.text);
    t.is(enable.body.error.message, 'The manifest is not valid; nothing was applied.');
    t.deepEqual(enable.body.error.issues.map((i: any) => [i.code, i.path]), ISSUES);
    t.deepEqual(await orgSnapshot(applied.body.organization.id), stored, 'the policy stays as it was');

    // Enabling with a draft beside it: the version that would decide is the active one, whose issues are named at the status.
    const fixed = { ...unacceptable(false), status: 'ACTIVE', rules: [], merchants: [] };
    const withDraft = await app.admin('/admin/manifests', { body: withPolicy(handle, fixed) });
    t.is(withDraft.status, 400, withDraft.text);
    t.deepEqual(
      withDraft.body.error.issues.map((i: any) => [i.code, i.path]),
      ISSUES.map(([code]) => [code, 'policies.2.status']),
    );
    t.regex(withDraft.body.error.issues[0].message, /^Enabling the policy puts its active version 1 in force, and it is not acceptable \(rules\.0\.currency\): The rule is in USD/);
    t.deepEqual(await orgSnapshot(applied.body.organization.id), stored);

    // Enabling it with an acceptable version activated in the same manifest is accepted.
    const enabled = await app.admin('/admin/manifests', { body: withPolicy(handle, { ...fixed, activate: true }) });
    t.is(enabled.status, 200, enabled.text);
    const policy = (await app.deps.collections.policies.findOne({ _id: bad.id }))!;
    t.is(policy.status, 'ACTIVE');
    t.not(policy.activeVersionId, bad.activeVersionId);
  });
}

test('a version activated with issues by an earlier service is not put back in force by enabling its disabled policy', async (t) => {
  const { bad } = await activatedWithIssues('act-legacy-enable');
  const c = app.deps.collections;
  const disable = await app.admin('/admin/manifests', { body: withPolicy('act-legacy-enable', { ...unacceptable(true), status: 'DISABLED' }) });
  t.is(disable.status, 200, disable.text);
  const enable = await app.admin('/admin/manifests', { body: withPolicy('act-legacy-enable', { ...unacceptable(true), status: 'ACTIVE' }) });
  t.is(enable.status, 400, enable.text);
  t.deepEqual(enable.body.error.issues.map((i: any) => [i.code, i.path]), ISSUES);
  t.is((await c.policies.findOne({ _id: bad.id }))!.status, 'DISABLED');
});
