// validate's budgetImpact (docs/reference/contract.md §4.9) tells what the version's budget windows would
// count once it is active: a purchase submitted right after activating the validated draft, at the same
// instant, is judged against exactly that spending. Property-based, through the real HTTP surface: random
// organisations and purchases (held, answered, in several currencies and zones, across midnights and
// DST changes), policies whose limits change mid-period, then a draft with day and month budgets that is
// validated, simulated, activated and tried: the draft simulation reads the same windows too.
import test from 'ava';
import fc from 'fast-check';
import { activatable, ruleArbitrary } from '../helpers/arbitraries.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { periodFor } from '../../src/engine/periods.ts';

let clock = Date.parse('2026-10-24T18:00:00.000Z'); // the steps cross the European and American ends of summer time
let app: TestApp;
test.before(async () => {
  app = await startApp({ now: () => new Date(clock) });
});
test.after.always(() => app?.close());

const ZONES = ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'UTC'];
const CURRENCIES = ['EUR', 'USD', 'JPY'];

const rule = ruleArbitrary(CURRENCIES, { min: 1, max: 60000 }, { min: 1, max: 120000 });
const windowRule = fc.record(
  {
    ruleType: fc.constant('SPEND_LIMIT'),
    effect: fc.constantFrom('BLOCK', 'REQUIRE_APPROVAL'),
    periodKind: fc.constantFrom('DAY', 'MONTH'),
    amountMinor: fc.integer({ min: 1, max: 120000 }).map(String),
    currency: fc.constantFrom(...CURRENCIES),
  },
  { requiredKeys: ['ruleType', 'effect', 'periodKind', 'amountMinor'] },
);

const purchaseStep = fc.record({
  kind: fc.constant('purchase' as const),
  agent: fc.nat(1),
  amount: fc.integer({ min: 1, max: 40000 }),
  currency: fc.option(fc.constantFrom(...CURRENCIES), { nil: undefined, freq: 3 }),
  advanceMinutes: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 120 }) }, fc.integer({ min: 0, max: 30 * 60 })),
});
const step = fc.oneof(
  { weight: 4, arbitrary: purchaseStep },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('answer' as const), answer: fc.constantFrom('APPROVE', 'REJECT') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rules' as const), rules: fc.array(rule, { maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('check' as const), draft: fc.array(windowRule, { minLength: 1, maxLength: 3 }), purchase: purchaseStep }) },
);

const scenario = fc.record({
  timezone: fc.constantFrom(...ZONES),
  currency: fc.constantFrom(...CURRENCIES),
  currencies: fc.subarray(CURRENCIES, { minLength: 1 }),
  agentScoped: fc.boolean(),
  rules: fc.array(rule, { maxLength: 3 }),
  other: fc.array(rule, { maxLength: 2 }),
  steps: fc.array(step, { minLength: 6, maxLength: 24 }),
})
  // Every set of rules is activated, so only what activation accepts.
  .filter((s) => {
    const currencies = [...new Set([s.currency, ...s.currencies])];
    const versions = [s.rules, ...s.steps.flatMap((st) => (st.kind === 'rules' ? [st.rules] : st.kind === 'check' ? [st.draft] : []))];
    return versions.every((rules) => activatable({ currencies, rules })) && activatable({ currencies: CURRENCIES, rules: s.other });
  });

type PurchaseStep = { agent: number; amount: number; currency?: string; advanceMinutes: number };

let orgs = 0;
let checked = 0;

test('a purchase right after activation counts what validate said the windows hold', async (t) => {
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      const handle = `impact-prop-${++orgs}`;
      const currencies = [...new Set([s.currency, ...s.currencies])];
      const manifest = (rules: unknown[], activate = true) => ({
        organization: { handle, name: 'Impact Co', currency: s.currency, timezone: s.timezone, approvalTtl: 'PT48H' },
        people: [{ handle: 'ana', name: 'Ana', email: `ana@${handle}.example` }],
        agents: [{ handle: 'a0', name: 'Agent 0' }, { handle: 'a1', name: 'Agent 1' }],
        policies: [
          { handle: 'p', name: 'P', scope: s.agentScoped ? 'AGENT' : 'ORGANIZATION', ...(s.agentScoped ? { agents: ['a0'] } : {}), currencies, rules, merchants: [], activate },
          { handle: 'q', name: 'Q', scope: 'ORGANIZATION', currencies: CURRENCIES, rules: s.other, merchants: [] },
        ],
        apiKeys: [{ handle: 'k0', agent: 'a0' }, { handle: 'k1', agent: 'a1' }, { handle: 'org' }],
      });
      let rules: unknown[] = s.rules;
      const org = await applyManifest(app, manifest(rules));
      const policyId = org.policies.p.id;
      const pending: string[] = [];
      const submit = async (p: PurchaseStep) => {
        clock += p.advanceMinutes * 60_000;
        const body = { merchant: 'Paper Co', amountMinor: String(p.amount), reason: 'property', ...(p.currency ? { currency: p.currency } : {}) };
        const res = await app.request('/v1/purchase-requests', { key: org.keys[`k${p.agent}`], body });
        if (res.status !== 201) throw new Error(`submission ${res.status} ${res.text}`);
        if (res.body.decision.outcome === 'REQUIRES_APPROVAL') pending.push(res.body.purchaseRequest.id);
        return res.body;
      };
      for (const st of s.steps) {
        if (st.kind === 'purchase') await submit(st);
        else if (st.kind === 'answer') {
          const id = pending.shift();
          if (id) await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: st.answer, person: 'ana' } });
        } else if (st.kind === 'rules') {
          rules = st.rules;
          await applyManifest(app, manifest(rules));
        } else {
          // Whatever the windows hold before the draft exists: a window the impact leaves out must count just that.
          const stored = new Map<string, bigint>();
          for (const w of await app.store.db.collection('budget_windows').find({ policyId }).toArray()) {
            stored.set(`${w.currency}:${w.periodKind}:${w.periodKey}`, BigInt(w.openingBalanceMinor) + BigInt(w.committedMinor) + BigInt(w.heldMinor));
          }
          const draftId = (await applyManifest(app, manifest(st.draft, false))).policies.p.draftVersionId;
          if (draftId === null) continue; // the draft is the active version already
          const validated = await app.request(`/v1/policies/${policyId}/versions/${draftId}/validate`, { method: 'POST', key: org.keys.org });
          if (validated.status !== 200) throw new Error(`validate ${validated.status} ${validated.text}`);
          const purchaseCurrency = st.purchase.currency ?? s.currency;
          const simulated = await app.request('/v1/simulations/draft-policy', {
            key: org.keys.org,
            body: { policyVersionId: draftId, merchant: 'Paper Co', amountMinor: String(st.purchase.amount), reason: 'property', currency: purchaseCurrency },
          });
          if (simulated.status !== 200) throw new Error(`draft simulation ${simulated.status} ${simulated.text}`);
          rules = st.draft;
          const activated = await applyManifest(app, manifest(rules));
          if (activated.policies.p.activeVersionId !== draftId) throw new Error('activation made another version than the one validated');
          const amount = BigInt(st.purchase.amount);
          const answer = await submit({ ...st.purchase, advanceMinutes: 0 });
          const currency = purchaseCurrency;
          const versionRules: any[] = validated.body.version.rules;
          for (const evaluation of answer.ruleEvaluations) {
            if (evaluation.policyId !== policyId || evaluation.outcome === 'NOT_APPLICABLE') continue;
            const r = versionRules.find((x) => x.id === evaluation.policyRuleId);
            if (r?.ruleType !== 'SPEND_LIMIT') continue;
            const impact = validated.body.budgetImpact.find((i: any) => i.currency === currency && i.periodKind === r.periodKind);
            const before = impact
              ? BigInt(impact.openingBalanceMinor) + BigInt(impact.reservedMinor)
              : stored.get(`${currency}:${r.periodKind}:${periodFor(r.periodKind, new Date(clock).toISOString(), s.timezone).periodKey}`) ?? 0n;
            const said = { usedBefore: String(before), headroom: impact ? String(BigInt(impact.limits.find((l: any) => l.limitMinor === r.amountMinor).remainingMinor) - amount) : undefined };
            const got = { usedBefore: String(BigInt(evaluation.observedMinor) - amount), headroom: impact ? evaluation.headroomMinor : undefined };
            if (JSON.stringify(said) !== JSON.stringify(got)) {
              throw new Error(`at ${new Date(clock).toISOString()} in ${s.timezone}, ${r.periodKind} ${currency}: validate said ${JSON.stringify(said)} (${JSON.stringify(validated.body.budgetImpact)}), the submission counted ${JSON.stringify(got)}`);
            }
            if (impact) checked++;
            // The draft simulation, made before activation, read the same windows.
            const window = simulated.body.budgets.find((b: any) => b.currency === currency && b.periodKind === r.periodKind);
            const current = window && BigInt(window.current.openingBalanceMinor) + BigInt(window.current.reservedMinor);
            if (current !== before) {
              throw new Error(`at ${new Date(clock).toISOString()} in ${s.timezone}, ${r.periodKind} ${currency}: the draft simulation counted ${current}, the submission ${before}`);
            }
          }
        }
      }
    }),
    { numRuns: Number(process.env.FC_RUNS ?? 30), seed: Number(process.env.FC_SEED ?? 1), includeErrorInReport: true },
  );
  // The sample reaches windows that the impact reports (a generator that stopped doing so would prove little).
  t.log(`${checked} reported windows checked`);
  t.true(checked > 0, `${checked} reported windows checked`);
});
