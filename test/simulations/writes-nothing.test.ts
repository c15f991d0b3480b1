// "What would happen" writes nothing (docs/reference/contract.md §1 rule 5, §4.3-4.5, §4.9; replays:
// docs/integrate/simulations.md#replay): every document of every collection is the same after a battery of
// simulations, validations and inline replays as before it, whatever they answered, and no decision is
// counted in the metrics. The battery reaches the cases most likely to write: budget windows that do not
// exist yet, budgets a purchase would cross or exhaust, an Idempotency-Key, refused bodies, a disabled agent,
// a suspended organisation. A real submission, last, shows the snapshot sees what a decision writes.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { storeSnapshot } from '../helpers/store.ts';
import { renderMetrics } from '../../src/metrics/metrics.ts';

const NOW = new Date('2026-11-18T10:00:00.000Z');
let app: TestApp;
let shop: AppliedOrg;
let suspended: AppliedOrg;
let draftId: string;

test.before(async () => {
  app = await startApp({ now: () => NOW });
  const manifest: any = shopManifest('quiet');
  shop = await applyManifest(app, manifest);
  // Some spending: agent a's daily window exists, agent m's monthly one does not; agent b's policy has no budget yet.
  for (const amount of [19000, 25000, 19000]) await app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: purchase(amount) });
  await app.request('/v1/purchase-requests', { key: shop.keys['b-key'], body: purchase(15000) });
  // A draft giving b's policy a daily budget the day's spending already uses (validate's budgetImpact; windows never opened).
  const allow = manifest.policies.find((p: any) => p.handle === 'allow');
  Object.assign(allow, { activate: false, rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '20000' }] });
  draftId = (await applyManifest(app, manifest)).policies.allow.draftVersionId!;
  suspended = await applyManifest(app, shopManifest('quiet-suspended'));
  await app.admin(`/admin/organizations/${suspended.organizationId}`, { method: 'PATCH', body: { status: 'SUSPENDED' } });
});
test.after.always(() => app?.close());

const snapshot = () => storeSnapshot(app.store.db);
const decisionsCounted = async () => (await renderMetrics()).split('\n').filter((line) => /^spend_decision/.test(line));

test.serial('simulations, validations and replays leave every document as it was, and count no decision', async (t) => {
  const org = shop.keys['org-key'];
  const a = shop.keys['a-key'];
  const main = shop.policies.main;
  const calls: [string, string, { key: string; body?: unknown; raw?: string; headers?: Record<string, string>; method?: string }, number][] = [
    ['within policy', '/v1/simulations/current-policies', { key: a, body: purchase(100) }, 200],
    ['would cross 80% of the day', '/v1/simulations/current-policies', { key: a, body: purchase(19000) }, 200],
    ['would hold the rest of the day', '/v1/simulations/current-policies', { key: a, body: purchase(37000) }, 200],
    ['would exceed the day', '/v1/simulations/current-policies', { key: a, body: purchase(45000, 'Paper Co', { agentId: null }) }, 200],
    ['a month window never opened', '/v1/simulations/current-policies', { key: shop.keys['m-key'], body: purchase(29000) }, 200],
    ['the same, by the organisation key', '/v1/simulations/current-policies', { key: org, body: purchase(31000, 'Paper Co', { agentId: shop.agents.m.id }) }, 200],
    ['with an Idempotency-Key', '/v1/simulations/current-policies', { key: a, body: purchase(100), headers: { 'idempotency-key': 'sim-1' } }, 200],
    ['the key again, another body', '/v1/simulations/current-policies', { key: a, body: purchase(200), headers: { 'idempotency-key': 'sim-1' } }, 200],
    ['a disabled agent, as itself', '/v1/simulations/current-policies', { key: shop.keys['off-key'], body: purchase(100) }, 200],
    ['a disabled agent, named', '/v1/simulations/current-policies', { key: org, body: purchase(100, 'Paper Co', { agentId: shop.agents.off.id }) }, 200],
    ['a blocked merchant', '/v1/simulations/current-policies', { key: a, body: purchase(100, 'Shady Goods Ltd') }, 200],
    ['a currency nobody covers', '/v1/simulations/current-policies', { key: a, body: purchase(100, 'Paper Co', { currency: 'GBP' }) }, 200],
    ['an invalid body', '/v1/simulations/current-policies', { key: a, body: purchase(-5, '', { metadata: {} }) }, 400],
    ['malformed JSON', '/v1/simulations/current-policies', { key: a, raw: '{"merchant":', headers: { 'content-type': 'application/json' } }, 400],
    ['an unknown agent', '/v1/simulations/current-policies', { key: org, body: purchase(100, 'Paper Co', { agentId: '0190aaaa-0000-7000-8000-000000000000' }) }, 404],
    ['a suspended organisation', '/v1/simulations/current-policies', { key: suspended.keys['a-key'], body: purchase(100) }, 403],
    ['a suspended organisation, a version', '/v1/simulations/policy-version', { key: suspended.keys['org-key'], body: purchase(100, 'Paper Co', { policyVersionId: suspended.policies.main.activeVersionId }) }, 403],
    ['a draft opening a window', '/v1/simulations/draft-policy', { key: org, body: purchase(5000, 'Paper Co', { policyVersionId: draftId, currency: 'USD' }) }, 200],
    ['a draft over its budget', '/v1/simulations/draft-policy', { key: org, body: purchase(6000, 'Paper Co', { policyVersionId: draftId }) }, 200],
    ['a draft of the wrong kind', '/v1/simulations/policy-version', { key: org, body: purchase(5000, 'Paper Co', { policyVersionId: draftId }) }, 400],
    ['the active version', '/v1/simulations/policy-version', { key: org, body: purchase(30000, 'Paper Co', { policyVersionId: main.activeVersionId }) }, 200],
    ['validate the active version', `/v1/policies/${main.id}/versions/${main.activeVersionId}/validate`, { key: org, method: 'POST' }, 200],
    ['validate a draft with a budget impact', `/v1/policies/${shop.policies.allow.id}/versions/${draftId}/validate`, { key: org, body: {} }, 200],
    ['validate with a field', `/v1/policies/${main.id}/versions/${main.activeVersionId}/validate`, { key: org, body: { dryRun: true } }, 400],
    ['validate, suspended', `/v1/policies/${suspended.policies.main.id}/versions/${suspended.policies.main.activeVersionId}/validate`, { key: suspended.keys['org-key'], method: 'POST' }, 403],
    ['replay the day', '/v1/simulations/replay', { key: org, body: { policyVersionId: draftId, from: '2026-11-18T00:00:00Z', to: '2026-11-19T00:00:00Z' } }, 200],
    ['replay the day for one agent, a page', '/v1/simulations/replay?limit=1', { key: org, body: { policyVersionId: main.activeVersionId, from: '2026-11-18T00:00:00Z', to: '2026-11-19T00:00:00Z', agentId: shop.agents.a.id } }, 200],
    ['replay a reversed range', '/v1/simulations/replay', { key: org, body: { policyVersionId: draftId, from: '2026-11-19T00:00:00Z', to: '2026-11-18T00:00:00Z' } }, 400],
    ['replay, suspended', '/v1/simulations/replay', { key: suspended.keys['org-key'], body: { policyVersionId: suspended.policies.main.activeVersionId, from: '2026-11-18T00:00:00Z', to: '2026-11-19T00:00:00Z' } }, 403],
  ];
  const before = await snapshot();
  const counted = await decisionsCounted();
  const answered: Record<string, unknown> = {};
  for (const [label, path, options, status] of calls) {
    const res = await app.request(path, options);
    t.is(res.status, status, `${label}: ${res.text}`);
    answered[label] = res.body;
  }
  // The battery reaches what it says it does.
  const decision = (label: string) => (answered[label] as any).simulatedDecision;
  t.is(decision('would cross 80% of the day').outcome, 'APPROVED');
  t.is(decision('would hold the rest of the day').outcome, 'REQUIRES_APPROVAL');
  t.deepEqual(decision('would exceed the day').reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  t.is((answered['a month window never opened'] as any).budgets[0].budgetCounterId, null);
  t.deepEqual(decision('a disabled agent, named').reasonCodes, ['AGENT_DISABLED']);
  t.is((answered['a draft opening a window'] as any).budgets[0].budgetCounterId, null);
  t.not((answered['validate a draft with a budget impact'] as any).budgetImpact.length, 0);
  t.deepEqual(decision('a draft over its budget').reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  t.is((answered['replay the day'] as any).summary.evaluated, 4);
  // One reading of a window not yet opened: the draft's simulation opens it at the balance validate announces.
  const impact = (answered['validate a draft with a budget impact'] as any).budgetImpact.find((i: any) => i.currency === 'EUR' && i.periodKind === 'DAY');
  t.is((answered['a draft over its budget'] as any).budgets[0].current.openingBalanceMinor, impact.openingBalanceMinor);
  t.is(impact.openingBalanceMinor, '15000');

  t.deepEqual(await snapshot(), before);
  t.deepEqual(await decisionsCounted(), counted);

  // The same snapshot sees a decision: its purchase, decision, window, receipt and event.
  t.is((await app.request('/v1/purchase-requests', { key: shop.keys['m-key'], body: purchase(100) })).status, 201);
  const after = await snapshot();
  for (const name of ['purchases', 'decisions', 'budget_windows', 'receipts', 'events']) t.notDeepEqual(after[name], before[name], name);
  t.notDeepEqual(await decisionsCounted(), counted);
});
