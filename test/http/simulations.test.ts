// The three simulations (docs/reference/contract.md §2.7, §4.3-4.5): the full SimulationResponse, the agentId rule,
// and nothing written anywhere.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, acmeManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { storeSnapshot } from '../helpers/store.ts';

const NOW = new Date('2026-11-18T10:00:00.000Z');
let app: TestApp;
let shop: AppliedOrg;
let other: AppliedOrg;

test.before(async () => {
  app = await startApp({ now: () => NOW });
  const manifest: any = shopManifest();
  manifest.policies.push({
    handle: 'draft',
    name: 'Stricter draft',
    scope: 'AGENT',
    agents: ['a'],
    currencies: ['EUR'],
    activate: false,
    rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '500' }],
    merchants: [],
  });
  shop = await applyManifest(app, manifest);
  other = await applyManifest(app, acmeManifest('sim-other'));
  // Some spending so that budgets have a current state.
  await app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: purchase(19000, 'Paper Co') });
});
test.after.always(() => app?.close());

const snapshot = () => storeSnapshot(app.store.db);

const simulate = (path: string, key: string, body: unknown) => app.request(`/v1/simulations/${path}`, { key, body });

test('current-policies as an agent key: the full response, and nothing written', async (t) => {
  const before = await snapshot();
  const res = await simulate('current-policies', shop.keys['a-key'], purchase(30000, 'Paper Co', { category: 'office' }));
  t.is(res.status, 200);
  const b = res.body;
  t.deepEqual(Object.keys(b).sort(), ['agent', 'budgets', 'policiesConsidered', 'policiesExcludedByCurrencyScope', 'purchase', 'ruleEvaluations', 'simulatedDecision', 'simulation']);
  t.like(b.simulation, { isSimulation: true, mode: 'CURRENT_POLICIES' });
  t.is(typeof b.simulation.disclaimer, 'string');
  t.is(b.simulation.simulatedAt, NOW.toISOString());
  t.deepEqual(b.purchase, { amountMinor: '30000', category: 'office', currency: 'EUR', currencyExponent: 2, merchant: 'Paper Co', merchantDomain: null, merchantKey: 'paper co' });
  t.deepEqual(b.agent, { id: shop.agents.a.id, name: 'Agent A', status: 'ENABLED' });
  t.like(b.simulatedDecision, { outcome: 'REQUIRES_APPROVAL', wouldRequireApproval: true, reasonCodes: ['APPROVAL_THRESHOLD_EXCEEDED'] });
  t.is(b.policiesConsidered.length, 1);
  t.like(b.policiesConsidered[0], { policyId: shop.policies.main.id, policyName: 'Main rules', policyStatus: 'ACTIVE', versionStatus: 'ACTIVE', versionNumber: 1, scopeType: 'AGENT', applicabilityReason: 'AGENT_SCOPE', currencies: ['EUR'] });
  t.is(b.budgets.length, 1);
  const budget = b.budgets[0];
  t.like(budget, { currency: 'EUR', periodKind: 'DAY', periodKey: '2026-11-18', policyId: shop.policies.main.id, policyName: 'Main rules', wouldExceed: false });
  t.like(budget.current, { committedMinor: '19000', heldMinor: '0', openingBalanceMinor: '0', reservedMinor: '19000' });
  t.deepEqual(budget.simulated, { projectedMinor: '49000', requestedMinor: '30000' });
  t.like(budget.limits[0], { effect: 'BLOCK', limitMinor: '100000', remainingBeforeMinor: '81000', remainingAfterMinor: '51000', wouldExceed: false });
  t.is(budget.periodStart, '2026-11-17T23:00:00.000Z');
  t.is(budget.periodEnd, '2026-11-18T23:00:00.000Z');
  // docs/reference/contract.md §2.7: the window's counter is a UUID, the same on every read of it.
  t.regex(budget.budgetCounterId, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const again = await simulate('current-policies', shop.keys['a-key'], purchase(100, 'Paper Co'));
  t.is(again.body.budgets[0].budgetCounterId, budget.budgetCounterId);
  for (const field of ['id', 'purchaseRequestId', 'decisionId', 'purchaseRequest', 'decision', 'replayed']) t.false(field in b, field);
  t.deepEqual(await snapshot(), before);
});

test('a simulation that would exceed a budget says by how much', async (t) => {
  const res = await simulate('current-policies', shop.keys['a-key'], purchase(19000, 'Paper Co'));
  t.is(res.body.simulatedDecision.outcome, 'APPROVED');
  const over = await simulate('current-policies', shop.keys['org-key'], purchase(19000, 'Paper Co', { agentId: shop.agents.a.id }));
  t.is(over.status, 200);
  t.deepEqual(over.body.agent.id, shop.agents.a.id);
  const excluded = await simulate('current-policies', shop.keys['b-key'], purchase(100, 'Paper Co', { currency: 'GBP' }));
  t.deepEqual(excluded.body.simulatedDecision.reasonCodes, ['CURRENCY_NOT_COVERED']);
  t.like(excluded.body.policiesExcludedByCurrencyScope[0], { policyId: shop.policies.allow.id, requestCurrency: 'GBP', currencies: ['EUR', 'USD'] });
});

test('the agentId rule: required for organisation keys, refused for agent keys; unknown agents are 404', async (t) => {
  const missing = await simulate('current-policies', shop.keys['org-key'], purchase(100));
  t.is(missing.status, 400);
  t.is(missing.body.error.issues[0].code, 'AGENT_ID_REQUIRED');
  const forbidden = await simulate('current-policies', shop.keys['a-key'], purchase(100, 'Paper Co', { agentId: shop.agents.b.id }));
  t.is(forbidden.status, 400);
  t.is(forbidden.body.error.issues[0].code, 'AGENT_ID_NOT_PERMITTED');
  const unknown = await simulate('current-policies', shop.keys['org-key'], purchase(100, 'Paper Co', { agentId: '0190aaaa-0000-7000-8000-000000000000' }));
  t.is(unknown.status, 404);
  const foreign = await simulate('current-policies', shop.keys['org-key'], purchase(100, 'Paper Co', { agentId: other.agents.buyer.id }));
  t.is(foreign.status, 404);
  t.deepEqual(foreign.body, unknown.body);
  const bad = await simulate('current-policies', shop.keys['org-key'], purchase(100, 'Paper Co', { agentId: 'nope', metadata: {} }));
  t.is(bad.status, 400);
  t.deepEqual(bad.body.error.issues.map((i: any) => i.path).sort(), ['agentId', 'metadata']);
});

test('draft-policy evaluates a DRAFT as written; policy-version an ACTIVE version as frozen; nothing written', async (t) => {
  const before = await snapshot();
  const draft = await simulate('draft-policy', shop.keys['org-key'], purchase(600, 'Paper Co', { policyVersionId: shop.policies.draft.draftVersionId }));
  t.is(draft.status, 200);
  t.like(draft.body.simulation, { isSimulation: true, mode: 'DRAFT_POLICY' });
  t.is(draft.body.agent, null);
  t.like(draft.body.simulatedDecision, { outcome: 'REJECTED', reasonCodes: ['AMOUNT_EXCEEDS_MAX'] });
  t.like(draft.body.policiesConsidered[0], { versionStatus: 'DRAFT', policyVersionId: shop.policies.draft.draftVersionId });
  const active = await simulate('policy-version', shop.keys['org-key'], purchase(600, 'Paper Co', { policyVersionId: shop.policies.main.activeVersionId }));
  t.is(active.status, 200);
  t.like(active.body.simulation, { mode: 'POLICY_VERSION' });
  t.is(active.body.simulatedDecision.outcome, 'APPROVED');
  const wrongKind = await simulate('draft-policy', shop.keys['org-key'], purchase(600, 'Paper Co', { policyVersionId: shop.policies.main.activeVersionId }));
  t.is(wrongKind.status, 400);
  t.is(wrongKind.body.error.issues[0].code, 'VERSION_NOT_DRAFT');
  const wrongKind2 = await simulate('policy-version', shop.keys['org-key'], purchase(600, 'Paper Co', { policyVersionId: shop.policies.draft.draftVersionId }));
  t.is(wrongKind2.body.error.issues[0].code, 'VERSION_IS_DRAFT');
  const foreign = await simulate('policy-version', other.keys['admin-key'], purchase(600, 'Paper Co', { policyVersionId: shop.policies.main.activeVersionId }));
  t.is(foreign.status, 404);
  const agentKey = await simulate('draft-policy', shop.keys['a-key'], purchase(600, 'Paper Co', { policyVersionId: shop.policies.draft.draftVersionId }));
  t.is(agentKey.status, 403);
  t.is(agentKey.body.error.code, 'api_key_not_organization_scoped');
  t.deepEqual(await snapshot(), before);
});

test('simulation bodies: 415, 413, malformed_json, unknown fields', async (t) => {
  const key = shop.keys['a-key'];
  const type = await app.request('/v1/simulations/current-policies', { key, raw: '{}', headers: { 'content-type': 'text/plain' } });
  t.is(type.status, 415);
  const broken = await app.request('/v1/simulations/current-policies', { key, raw: '{', headers: { 'content-type': 'application/json' } });
  t.is(broken.body.error.code, 'malformed_json');
  const big = await simulate('current-policies', key, purchase(1, 'Paper Co', { category: 'x'.repeat(70 * 1024) }));
  t.is(big.status, 413);
  const unknown = await simulate('policy-version', shop.keys['org-key'], purchase(1, 'Paper Co', { policyVersionId: shop.policies.main.activeVersionId, agentId: shop.agents.a.id }));
  t.is(unknown.status, 400);
  t.is(unknown.body.error.issues[0].code, 'UNKNOWN_FIELD');
});
