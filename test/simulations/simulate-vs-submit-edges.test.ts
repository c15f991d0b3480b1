// The simulation and the submission agree exactly (docs/reference/contract.md §4.3, §2.7) where
// simulate-vs-submit.test.ts does not go: amounts and budgets up to 2^53-1 (what a window can count), the
// minor-unit exponents 0, 3 and 4, amounts written as JSON integers or as strings with leading zeros, and
// merchant names that differ from a list entry only in case, spacing or width. Every amount comes back as
// the exact decimal string of its minor units, and no window passes a BLOCK limit or 2^53-1.
import assert from 'node:assert/strict';
import test from 'ava';
import fc from 'fast-check';
import { activatable } from '../helpers/arbitraries.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';

const MAX = 2n ** 53n - 1n;
let clock = Date.parse('2026-11-18T10:00:00.000Z');
let app: TestApp;
test.before(async () => {
  app = await startApp({ now: () => new Date(clock) });
});
test.after.always(() => app?.close());

const CURRENCIES = ['JPY', 'BHD', 'CLF'];
const big = fc.oneof(fc.bigInt(1n, 1_000n), fc.bigInt(MAX - 1_000n, MAX), fc.bigInt(MAX / 2n - 500n, MAX / 2n + 500n));
const rule = fc
  .tuple(
    fc.oneof(
      fc.record({ ruleType: fc.constant('AMOUNT_LIMIT'), effect: fc.constantFrom('BLOCK', 'REQUIRE_APPROVAL'), periodKind: fc.constant('PER_REQUEST'), amountMinor: big.map(String) }),
      fc.record({ ruleType: fc.constant('SPEND_LIMIT'), effect: fc.constantFrom('BLOCK', 'REQUIRE_APPROVAL'), periodKind: fc.constantFrom('DAY', 'MONTH'), amountMinor: big.map(String) }),
    ),
    fc.integer({ min: 1, max: 3 }),
  )
  .map(([r, approvalsRequired]) => (r.effect === 'REQUIRE_APPROVAL' ? { ...r, approvalsRequired } : r));
const policy = fc
  .record({
    rules: fc.uniqueArray(rule, { maxLength: 3, selector: (r) => `${r.ruleType}:${r.effect}:${r.periodKind}` }),
    merchants: fc.constantFrom([], [{ listType: 'BLOCK', label: 'Straße Nord' }], [{ listType: 'ALLOW', label: 'Paper Co' }]),
  })
  .filter((p) => activatable({ ...p, currencies: CURRENCIES }));
const purchase = fc.record({
  amount: big,
  written: fc.constantFrom('string', 'padded', 'number'),
  currency: fc.constantFrom(...CURRENCIES),
  merchant: fc.constantFrom('Paper Co', 'PAPER  co.', 'ＰＡＰＥＲ ＣＯ', 'STRASSE NORD', 'straße-nord', 'Coffee'),
  advanceMinutes: fc.integer({ min: 0, max: 600 }),
});
const scenario = fc.record({ policies: fc.array(policy, { minLength: 1, maxLength: 2 }), purchases: fc.array(purchase, { minLength: 3, maxLength: 8 }) });

let orgs = 0;
const seen = new Set<string>();

test('a simulation decides as the submission at 2^53-1, in every exponent and for every spelling of a merchant', async (t) => {
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      const org = await applyManifest(app, {
        organization: { handle: `edges-${++orgs}`, name: 'Edges', currency: 'BHD', timezone: 'Asia/Kolkata', approvalTtl: 'PT12H' },
        people: [{ handle: 'ana', name: 'Ana', email: `ana@edges-${orgs}.example` }],
        agents: [{ handle: 'a', name: 'Agent', status: 'ENABLED' }],
        policies: s.policies.map((p, i) => ({ handle: `p${i}`, name: `Policy ${i}`, status: 'ACTIVE', scope: 'ORGANIZATION', currencies: CURRENCIES, rules: p.rules, merchants: p.merchants })),
        apiKeys: [{ handle: 'k', agent: 'a' }],
      });
      const key = org.keys.k;
      for (const p of s.purchases) {
        clock += p.advanceMinutes * 60_000;
        const amountMinor = p.written === 'number' ? Number(p.amount) : p.written === 'padded' ? `000${p.amount}` : String(p.amount);
        const body = { merchant: p.merchant, amountMinor, currency: p.currency, reason: 'edges' };
        const sim = await app.request('/v1/simulations/current-policies', { key, body });
        const real = await app.request('/v1/purchase-requests', { key, body });
        if (sim.status !== 200 || real.status !== 201) throw new Error(`simulation ${sim.status} ${sim.text}; submission ${real.status} ${real.text}`);
        const simulated = { outcome: sim.body.simulatedDecision.outcome, reasonCodes: sim.body.simulatedDecision.reasonCodes, explanation: sim.body.simulatedDecision.explanation, ruleEvaluations: sim.body.ruleEvaluations };
        const decided = { outcome: real.body.decision.outcome, reasonCodes: real.body.decision.reasonCodes, explanation: real.body.decision.explanation, ruleEvaluations: real.body.ruleEvaluations };
        assert.deepEqual(simulated, decided);
        // Amounts are the exact decimal strings of the minor units sent (a number at 2^53-1 or below is exact).
        assert.equal(sim.body.purchase.amountMinor, String(p.amount));
        assert.equal(real.body.purchaseRequest.amountMinor, String(p.amount));
        for (const e of real.body.ruleEvaluations) if (e.observedMinor !== null && e.rule === 'AMOUNT_LIMIT') assert.equal(e.observedMinor, String(p.amount));
        // What the decision left in each window: the projection when it approved or held, nothing otherwise;
        // never past a BLOCK limit that reads it, never past what a window can count.
        const after = await app.request('/v1/simulations/current-policies', { key, body });
        const windowOf = (b: any) => `${b.policyId}:${b.currency}:${b.periodKind}:${b.periodKey}`;
        for (const b of sim.body.budgets) {
          const now = after.body.budgets.find((x: any) => windowOf(x) === windowOf(b));
          const used = BigInt(now.current.openingBalanceMinor) + BigInt(now.current.reservedMinor);
          const before = BigInt(b.current.openingBalanceMinor) + BigInt(b.current.reservedMinor);
          assert.equal(used, decided.outcome === 'REJECTED' ? before : BigInt(b.simulated.projectedMinor));
          assert.ok(used <= MAX);
          for (const l of b.limits) if (l.effect === 'BLOCK' && used > before) assert.ok(used <= BigInt(l.limitMinor));
        }
        // As many approvers are asked as the simulation said (0 when nobody is).
        const read = await app.request(`/v1/purchase-requests/${real.body.purchaseRequest.id}`, { key });
        assert.equal(read.body.purchase.approval?.approvalsRequired ?? 0, sim.body.simulatedDecision.approvalsRequired);
        seen.add(`${decided.outcome}:${decided.reasonCodes.join('+')}`);
        if (sim.body.simulatedDecision.approvalsRequired > 1) seen.add('QUORUM');
      }
    }),
    { numRuns: Number(process.env.FC_RUNS ?? 12), seed: Number(process.env.FC_SEED ?? 1), includeErrorInReport: true },
  );
  for (const reached of [/^APPROVED/, /MERCHANT_BLOCKED/, /MERCHANT_NOT_ALLOW_LISTED/, /^REJECTED:.*LIMIT_EXCEEDED/, /^REQUIRES_APPROVAL/, /QUORUM/]) {
    t.true([...seen].some((k) => reached.test(k)), `${reached} in ${[...seen]}`);
  }
});
