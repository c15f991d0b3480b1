import test from 'ava';
import { decide, decideWithBudgets } from '../../src/engine/decide.ts';
import type { ReasonCode, SimulatedDecision } from '../../src/engine/types.ts';
import { ENGINE_VERSION } from '../../src/engine/version.ts';
import {
  AGENT,
  allow,
  approvalThreshold,
  block,
  dailyBudget,
  dayWindow,
  input,
  maxPerPurchase,
  monthlyBudget,
  monthWindow,
  policy,
  windowState,
  type InputOptions,
} from './fixtures.ts';

interface Row {
  title: string;
  given: InputOptions;
  outcome: SimulatedDecision['outcome'];
  reasons: ReasonCode[];
  explanation?: RegExp | string;
  check?: (decision: SimulatedDecision, t: import('ava').ExecutionContext) => void;
}

const office = (options: Parameters<typeof policy>[0] = {}) => policy({ id: 'office', name: 'Office supplies', ...options });
const travel = (options: Parameters<typeof policy>[0] = {}) => policy({ id: 'travel', name: 'Travel', ...options });

const rows: Row[] = [
  {
    title: 'within policy',
    given: { policies: [office({ rules: [maxPerPurchase(50_000n)] })], amount: 12_000n },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    explanation: 'Approved: 120.00 EUR at Acme Supplies is within the rules of Office supplies.',
    check: (d, t) => {
      t.deepEqual(d.effects, { budget: [], crossings: [] });
      t.is(d.ruleEvaluations[0].outcome, 'PASS');
      t.is(d.ruleEvaluations[0].headroomMinor, 38_000n);
    },
  },
  {
    title: 'a policy with no rules approves what it covers',
    given: { policies: [office()] },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => t.deepEqual(d.ruleEvaluations, []),
  },
  {
    title: 'per-purchase maximum exceeded',
    given: { policies: [office({ rules: [maxPerPurchase(50_000n)] })], amount: 60_000n, merchant: 'Shady Goods Ltd' },
    outcome: 'REJECTED',
    reasons: ['AMOUNT_EXCEEDS_MAX'],
    explanation: 'Rejected: 600.00 EUR at Shady Goods Ltd is above the per-purchase maximum of 500.00 EUR set by Office supplies.',
    check: (d, t) => {
      const [evaluation] = d.ruleEvaluations;
      t.like(evaluation, { rule: 'AMOUNT_LIMIT', outcome: 'BLOCK', role: 'PER_PURCHASE_MAXIMUM', reasonCode: 'AMOUNT_EXCEEDS_MAX' });
      t.is(evaluation.headroomMinor, -10_000n);
      t.is(evaluation.policyName, 'Office supplies');
      t.is(evaluation.policyVersionId, 'office-v1');
    },
  },
  {
    title: 'an amount equal to the maximum passes',
    given: { policies: [office({ rules: [maxPerPurchase(50_000n)] })], amount: 50_000n },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
  },
  {
    title: 'approval threshold exceeded',
    given: { policies: [office({ rules: [approvalThreshold(20_000n)] })], amount: 25_000n },
    outcome: 'REQUIRES_APPROVAL',
    reasons: ['APPROVAL_THRESHOLD_EXCEEDED'],
    explanation: 'Needs approval: 250.00 EUR at Acme Supplies is above the approval threshold of 200.00 EUR set by Office supplies.',
    check: (d, t) => {
      t.deepEqual(d.escalationReasonCodes, ['APPROVAL_THRESHOLD_EXCEEDED']);
      t.like(d.ruleEvaluations[0], { outcome: 'ESCALATE', role: 'APPROVAL_THRESHOLD' });
    },
  },
  {
    title: 'an amount equal to the approval threshold passes',
    given: { policies: [office({ rules: [approvalThreshold(20_000n)] })], amount: 20_000n },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
  },
  {
    title: 'merchant on the block list, matched case- and punctuation-insensitively',
    given: { policies: [office({ merchants: [block('Shady Goods Ltd', 'entry-shady')] })], merchant: 'SHADY goods, ltd.' },
    outcome: 'REJECTED',
    reasons: ['MERCHANT_BLOCKED'],
    explanation: 'Rejected: SHADY goods, ltd. is on the merchant block list set by Office supplies.',
    check: (d, t) =>
      t.like(d.ruleEvaluations[0], { rule: 'MERCHANT_LIST', role: 'MERCHANT_BLOCK_LIST', outcome: 'BLOCK', policyMerchantEntryId: 'entry-shady' }),
  },
  {
    title: 'merchant not on the block list',
    given: { policies: [office({ merchants: [block('Shady Goods Ltd')] })] },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => t.like(d.ruleEvaluations[0], { role: 'MERCHANT_BLOCK_LIST', outcome: 'PASS', policyMerchantEntryId: null }),
  },
  {
    title: 'merchant missing from a non-empty allow list',
    given: { policies: [office({ merchants: [allow('Acme Supplies'), allow('Paper Co')] })], merchant: 'Other Shop' },
    outcome: 'REJECTED',
    reasons: ['MERCHANT_NOT_ALLOW_LISTED'],
    explanation: 'Rejected: Other Shop is not on the merchant allow list set by Office supplies.',
  },
  {
    title: 'merchant on the allow list',
    given: { policies: [office({ merchants: [allow('Paper Co'), allow('ACME supplies', 'entry-acme')] })] },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => {
      t.is(d.ruleEvaluations.length, 1);
      t.like(d.ruleEvaluations[0], { role: 'MERCHANT_ALLOW_LIST', outcome: 'PASS', policyMerchantEntryId: 'entry-acme' });
    },
  },
  {
    title: 'allow and block list both naming the merchant: the block wins',
    given: { policies: [office({ merchants: [allow('Acme Supplies'), block('acme supplies')] })] },
    outcome: 'REJECTED',
    reasons: ['MERCHANT_BLOCKED'],
  },
  {
    title: 'one policy allow-lists the merchant, another has an allow list without it',
    given: { policies: [office({ merchants: [allow('Acme Supplies')] }), travel({ merchants: [allow('Airline')] })] },
    outcome: 'REJECTED',
    reasons: ['MERCHANT_NOT_ALLOW_LISTED'],
    check: (d, t) => t.is(d.ruleEvaluations.find((e) => e.outcome === 'BLOCK')?.policyId, 'travel'),
  },
  {
    title: 'daily budget exceeded',
    given: { policies: [office({ rules: [dailyBudget(100_000n)] })], amount: 20_000n, windows: { [dayWindow('office')]: windowState(90_000n) } },
    outcome: 'REJECTED',
    reasons: ['DAILY_LIMIT_EXCEEDED'],
    explanation:
      'Rejected: 200.00 EUR at Acme Supplies would bring spending this day to 1100.00 EUR, above the daily budget of 1000.00 EUR set by Office supplies.',
    check: (d, t) => {
      // 90% spent and the budget refuses: it is exhausted (reported once per window by the command).
      t.deepEqual(d.effects.crossings.map((c) => [c.kind, c.cause, c.usedBeforeMinor, c.limitMinor]), [['EXHAUSTED', 'PURCHASE_REFUSED', 90_000n, 100_000n]]);
      t.like(d.ruleEvaluations[0], { role: 'SPENDING_BUDGET', outcome: 'BLOCK', observedMinor: 110_000n, headroomMinor: -10_000n });
      t.is(d.budgets.length, 1);
      t.true(d.budgets[0].wouldExceed);
      t.deepEqual(d.effects.budget, []);
    },
  },
  {
    title: 'daily budget reached exactly: approved, committed, 80% and 100% crossed',
    given: {
      policies: [office({ rules: [dailyBudget(100_000n, 'BLOCK', { id: 'daily' })] })],
      amount: 20_000n,
      windows: { [dayWindow('office')]: windowState(80_000n, 0n, 0n, 'counter-1') },
    },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => {
      t.is(d.effects.budget.length, 1);
      t.like(d.effects.budget[0], { operation: 'COMMIT', windowId: dayWindow('office'), amountMinor: 20_000n, budgetCounterId: 'counter-1' });
      t.like(d.effects.budget[0].window, { periodKey: '2026-11-21', periodKind: 'DAY', policyId: 'office', policyVersionId: 'office-v1' });
      t.deepEqual(
        d.effects.crossings.map((c) => [c.kind, c.policyRuleId, c.usedBeforeMinor, c.usedAfterMinor]),
        [
          ['THRESHOLD_REACHED', 'daily', 80_000n, 100_000n],
          ['EXHAUSTED', 'daily', 80_000n, 100_000n],
        ],
      );
    },
  },
  {
    title: 'opening balance counts against the budget',
    given: { policies: [office({ rules: [dailyBudget(100_000n)] })], amount: 20_000n, windows: { [dayWindow('office')]: windowState(0n, 0n, 90_000n) } },
    outcome: 'REJECTED',
    reasons: ['DAILY_LIMIT_EXCEEDED'],
  },
  {
    title: 'held amounts count against the budget (but are not spending: no budget event)',
    given: { policies: [office({ rules: [dailyBudget(100_000n)] })], amount: 20_000n, windows: { [dayWindow('office')]: windowState(0n, 90_000n) } },
    outcome: 'REJECTED',
    reasons: ['DAILY_LIMIT_EXCEEDED'],
    check: (d, t) => t.deepEqual(d.effects.crossings, []),
  },
  {
    title: 'a purchase refused for its size alone, in a window below 80%, reports no exhaustion',
    given: { policies: [office({ rules: [dailyBudget(100_000n)] })], amount: 150_000n, windows: { [dayWindow('office')]: windowState(80_000n) } },
    outcome: 'REJECTED',
    reasons: ['DAILY_LIMIT_EXCEEDED'],
    check: (d, t) => t.deepEqual(d.effects.crossings, []),
  },
  {
    title: 'monthly budget exceeded',
    given: { policies: [office({ rules: [monthlyBudget(500_000n)] })], amount: 20_000n, windows: { [monthWindow('office')]: windowState(490_000n) } },
    outcome: 'REJECTED',
    reasons: ['MONTHLY_LIMIT_EXCEEDED'],
    explanation: /would bring spending this month to 5100\.00 EUR, above the monthly budget of 5000\.00 EUR set by Office supplies\.$/,
  },
  {
    title: 'daily escalation limit crossed: held, not refused',
    given: { policies: [office({ rules: [dailyBudget(100_000n, 'REQUIRE_APPROVAL')] })], amount: 20_000n, windows: { [dayWindow('office')]: windowState(90_000n) } },
    outcome: 'REQUIRES_APPROVAL',
    reasons: ['DAILY_LIMIT_EXCEEDED'],
    explanation: /^Needs approval: .* above the daily approval limit of 1000\.00 EUR set by Office supplies\.$/,
    check: (d, t) => {
      t.like(d.ruleEvaluations[0], { role: 'SPENDING_ESCALATION', outcome: 'ESCALATE' });
      t.deepEqual(d.effects.budget.map((e) => [e.operation, e.windowId, e.amountMinor]), [['HOLD', dayWindow('office'), 20_000n]]);
      t.deepEqual(d.effects.crossings, [], 'a hold is not spending: nothing is crossed until a person approves');
    },
  },
  {
    title: 'monthly escalation limit crossed',
    given: { policies: [office({ rules: [monthlyBudget(100_000n, 'REQUIRE_APPROVAL')] })], amount: 120_000n },
    outcome: 'REQUIRES_APPROVAL',
    reasons: ['MONTHLY_LIMIT_EXCEEDED'],
  },
  {
    title: 'a rule for another currency does not apply',
    given: { policies: [office({ currencies: ['EUR', 'GBP'], rules: [maxPerPurchase(50_000n, { currency: 'GBP' })] })], amount: 60_000n },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => t.like(d.ruleEvaluations[0], { outcome: 'NOT_APPLICABLE', currency: 'GBP', observedMinor: null, headroomMinor: null }),
  },
  {
    title: 'a rule for the purchase currency applies',
    given: { policies: [office({ currencies: ['EUR', 'GBP'], rules: [maxPerPurchase(50_000n, { currency: 'GBP' })] })], amount: 60_000n, currency: 'GBP' },
    outcome: 'REJECTED',
    reasons: ['AMOUNT_EXCEEDS_MAX'],
    explanation: /600\.00 GBP .* 500\.00 GBP/,
  },
  {
    title: 'a spend limit for another currency opens no window',
    given: { policies: [office({ currencies: ['EUR', 'USD'], rules: [dailyBudget(100n, 'BLOCK', { currency: 'EUR' })] })], currency: 'USD' },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => {
      t.deepEqual(d.budgets, []);
      t.deepEqual(d.effects.budget, []);
    },
  },
  {
    title: 'currency covered by no applicable policy',
    given: { policies: [office({ currencies: ['EUR'] }), travel({ currencies: ['EUR', 'GBP'] })], currency: 'USD' },
    outcome: 'REJECTED',
    reasons: ['CURRENCY_NOT_COVERED'],
    explanation: 'Rejected: no policy in force covers purchases in USD, and currencies are never converted.',
    check: (d, t) => {
      t.deepEqual(d.policiesExcludedByCurrencyScope.map((p) => [p.policyId, p.currencies, p.requestCurrency]), [
        ['office', ['EUR'], 'USD'],
        ['travel', ['EUR', 'GBP'], 'USD'],
      ]);
      t.deepEqual(d.policiesConsidered, []);
    },
  },
  {
    title: 'policies not covering the currency are reported as excluded while another decides',
    given: { policies: [office({ currencies: ['USD'] }), travel({ currencies: ['EUR'], rules: [maxPerPurchase(1n)] })] },
    outcome: 'REJECTED',
    reasons: ['AMOUNT_EXCEEDS_MAX'],
    check: (d, t) => {
      t.deepEqual(d.policiesExcludedByCurrencyScope.map((p) => p.policyId), ['office']);
      t.deepEqual(d.policiesConsidered.map((p) => p.policyId), ['travel']);
    },
  },
  { title: 'no policy at all', given: { policies: [] }, outcome: 'REJECTED', reasons: ['NO_APPLICABLE_POLICY'], explanation: /denied by default/ },
  { title: 'only a disabled policy', given: { policies: [office({ status: 'DISABLED' })] }, outcome: 'REJECTED', reasons: ['NO_APPLICABLE_POLICY'] },
  { title: 'only an archived policy', given: { policies: [office({ status: 'ARCHIVED', versionStatus: 'ARCHIVED' })] }, outcome: 'REJECTED', reasons: ['NO_APPLICABLE_POLICY'] },
  { title: 'only a draft version', given: { policies: [office({ versionStatus: 'DRAFT' })] }, outcome: 'REJECTED', reasons: ['NO_APPLICABLE_POLICY'] },
  {
    title: 'an agent policy for another agent',
    given: { policies: [office({ scopeType: 'AGENT', agentIds: ['agent-2'] })] },
    outcome: 'REJECTED',
    reasons: ['NO_APPLICABLE_POLICY'],
  },
  {
    title: 'an agent policy listing the agent',
    given: { policies: [office({ scopeType: 'AGENT', agentIds: ['agent-2', AGENT.id] })] },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => t.like(d.policiesConsidered[0], { applicabilityReason: 'AGENT_SCOPE', scopeType: 'AGENT', versionNumber: 1, versionStatus: 'ACTIVE' }),
  },
  {
    title: 'disabled agent',
    given: { agent: { id: AGENT.id, status: 'DISABLED' }, policies: [office()] },
    outcome: 'REJECTED',
    reasons: ['AGENT_DISABLED'],
    explanation: 'Rejected: the agent is disabled, so it may not make purchases.',
    check: (d, t) => t.deepEqual(d.ruleEvaluations, []),
  },
  { title: 'archived agent', given: { agent: { id: AGENT.id, status: 'ARCHIVED' }, policies: [office()] }, outcome: 'REJECTED', reasons: ['AGENT_DISABLED'] },
  { title: 'no agent in current-policies mode', given: { agent: null, policies: [office()] }, outcome: 'REJECTED', reasons: ['AGENT_DISABLED'] },
  {
    title: 'one policy approves and another blocks',
    given: { policies: [office({ rules: [maxPerPurchase(100_000n)] }), travel({ rules: [maxPerPurchase(5_000n)] })] },
    outcome: 'REJECTED',
    reasons: ['AMOUNT_EXCEEDS_MAX'],
    explanation: /set by Travel\.$/,
  },
  {
    title: 'a block wins over an escalation, and every blocking reason is reported',
    given: {
      policies: [
        office({ rules: [approvalThreshold(1_000n), dailyBudget(5_000n)], merchants: [block('Acme Supplies')] }),
        travel({ rules: [maxPerPurchase(5_000n), monthlyBudget(1_000n, 'REQUIRE_APPROVAL')] }),
      ],
    },
    outcome: 'REJECTED',
    reasons: ['MERCHANT_BLOCKED', 'AMOUNT_EXCEEDS_MAX', 'DAILY_LIMIT_EXCEEDED'],
    explanation: 'Rejected: Acme Supplies is on the merchant block list set by Office supplies, and 2 other rules also block it.',
    check: (d, t) => {
      t.deepEqual(d.escalationReasonCodes, []);
      t.is(d.ruleEvaluations.length, 5);
    },
  },
  {
    title: 'escalations from several policies are all reported',
    given: {
      policies: [travel({ rules: [dailyBudget(5_000n, 'REQUIRE_APPROVAL')] }), office({ rules: [approvalThreshold(1_000n)] })],
    },
    outcome: 'REQUIRES_APPROVAL',
    reasons: ['APPROVAL_THRESHOLD_EXCEEDED', 'DAILY_LIMIT_EXCEEDED'],
    explanation: /^Needs approval: 100\.00 EUR at Acme Supplies is above the approval threshold of 10\.00 EUR set by Office supplies, and 1 other rule also asks for approval\.$/,
    check: (d, t) => {
      t.deepEqual(d.escalationReasonCodes, ['APPROVAL_THRESHOLD_EXCEEDED', 'DAILY_LIMIT_EXCEEDED']);
      t.deepEqual(d.policiesConsidered.map((p) => p.policyId), ['office', 'travel']);
      t.deepEqual(d.effects.budget.map((e) => [e.operation, e.windowId]), [['HOLD', dayWindow('travel')]]);
    },
  },
  {
    title: 'the same reason from two rules is reported once',
    given: { policies: [office({ rules: [maxPerPurchase(10n), maxPerPurchase(20n)] }), travel({ rules: [maxPerPurchase(30n)] })] },
    outcome: 'REJECTED',
    reasons: ['AMOUNT_EXCEEDS_MAX'],
    explanation: /set by Office supplies, and 2 other rules also block it\.$/,
  },
  {
    title: 'two limits on one window: one budget with both limits, one hold',
    given: {
      policies: [office({ rules: [dailyBudget(100_000n, 'BLOCK', { id: 'cap' }), dailyBudget(50_000n, 'REQUIRE_APPROVAL', { id: 'ask' })] })],
      amount: 20_000n,
      windows: { [dayWindow('office')]: windowState(30_000n, 5_000n, 1_000n) },
    },
    outcome: 'REQUIRES_APPROVAL',
    reasons: ['DAILY_LIMIT_EXCEEDED'],
    check: (d, t) => {
      t.is(d.budgets.length, 1);
      const [budget] = d.budgets;
      t.deepEqual(budget.current, { committedMinor: 30_000n, heldMinor: 5_000n, openingBalanceMinor: 1_000n, reservedMinor: 35_000n });
      t.deepEqual(budget.simulated, { requestedMinor: 20_000n, projectedMinor: 56_000n });
      t.deepEqual(budget.limits, [
        { effect: 'BLOCK', limitMinor: 100_000n, policyRuleId: 'cap', remainingBeforeMinor: 64_000n, remainingAfterMinor: 44_000n, wouldExceed: false },
        { effect: 'REQUIRE_APPROVAL', limitMinor: 50_000n, policyRuleId: 'ask', remainingBeforeMinor: 14_000n, remainingAfterMinor: -6_000n, wouldExceed: true },
      ]);
      t.true(budget.wouldExceed);
      t.like(budget, { periodKind: 'DAY', periodKey: '2026-11-21', periodStart: '2026-11-20T23:00:00.000Z', periodEnd: '2026-11-21T23:00:00.000Z', policyName: 'Office supplies' });
      t.is(d.effects.budget.length, 1);
      // Held, not spent: 56 000 would pass 80% of the approval limit and reach it, but only an approval reports that.
      t.deepEqual(d.effects.crossings, []);
    },
  },
  {
    title: 'daily and monthly budgets of two policies: a commit to each of the four windows',
    given: {
      policies: [office({ rules: [dailyBudget(100_000n), monthlyBudget(1_000_000n)] }), travel({ rules: [dailyBudget(100_000n), monthlyBudget(1_000_000n)] })],
    },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => {
      t.deepEqual(d.effects.budget.map((e) => e.windowId), [dayWindow('office'), monthWindow('office'), dayWindow('travel'), monthWindow('travel')]);
      t.true(d.effects.budget.every((e) => e.operation === 'COMMIT' && e.amountMinor === 10_000n));
      t.deepEqual(d.effects.crossings, []);
    },
  },
  {
    title: 'only 80% crossed',
    given: { policies: [office({ rules: [dailyBudget(1_000n)] })], amount: 150n, windows: { [dayWindow('office')]: windowState(700n) } },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => t.deepEqual(d.effects.crossings.map((c) => c.kind), ['THRESHOLD_REACHED']),
  },
  {
    title: 'already past 80% and not reaching 100%: nothing crossed',
    given: { policies: [office({ rules: [dailyBudget(1_000n)] })], amount: 100n, windows: { [dayWindow('office')]: windowState(850n) } },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => t.deepEqual(d.effects.crossings, []),
  },
  {
    title: 'exactly 80% is not past 80%',
    given: { policies: [office({ rules: [dailyBudget(1_000n)] })], amount: 800n },
    outcome: 'APPROVED',
    reasons: ['WITHIN_POLICY'],
    check: (d, t) => t.deepEqual(d.effects.crossings, []),
  },
  {
    title: 'zero-exponent currency',
    given: { policies: [office({ currencies: ['JPY'], rules: [maxPerPurchase(1_000n)] })], amount: 1_500n, currency: 'JPY' },
    outcome: 'REJECTED',
    reasons: ['AMOUNT_EXCEEDS_MAX'],
    explanation: 'Rejected: 1500 JPY at Acme Supplies is above the per-purchase maximum of 1000 JPY set by Office supplies.',
  },
  {
    title: 'draft simulation: the version is evaluated as written, whatever its statuses and scope',
    given: {
      mode: 'DRAFT_POLICY',
      policies: [office({ status: 'DISABLED', versionStatus: 'DRAFT', scopeType: 'AGENT', agentIds: [], rules: [approvalThreshold(1n)] })],
    },
    outcome: 'REQUIRES_APPROVAL',
    reasons: ['APPROVAL_THRESHOLD_EXCEEDED'],
    check: (d, t) => {
      t.is(d.mode, 'DRAFT_POLICY');
      t.like(d.policiesConsidered[0], { applicabilityReason: 'SIMULATED_VERSION', versionStatus: 'DRAFT', policyStatus: 'DISABLED' });
    },
  },
  {
    title: 'policy-version simulation of an archived version',
    given: { mode: 'POLICY_VERSION', policies: [office({ status: 'ARCHIVED', versionStatus: 'ARCHIVED', rules: [dailyBudget(5_000n)] })] },
    outcome: 'REJECTED',
    reasons: ['DAILY_LIMIT_EXCEEDED'],
    check: (d, t) => t.is(d.budgets[0].windowId, dayWindow('office')),
  },
  {
    title: 'a simulated version that does not cover the currency',
    given: { mode: 'POLICY_VERSION', policies: [office({ currencies: ['GBP'] })] },
    outcome: 'REJECTED',
    reasons: ['CURRENCY_NOT_COVERED'],
    explanation: /no simulated policy version covers purchases in EUR/,
  },
];

for (const row of rows) {
  test(`decide: ${row.title}`, (t) => {
    const decision = decideWithBudgets(input(row.given));
    t.is(decision.outcome, row.outcome);
    t.deepEqual(decision.reasonCodes, row.reasons);
    t.is(decision.engineVersion, ENGINE_VERSION);
    if (typeof row.explanation === 'string') t.is(decision.explanation, row.explanation);
    else if (row.explanation) t.regex(decision.explanation, row.explanation);
    if (decision.outcome === 'REJECTED') {
      t.deepEqual(decision.effects.budget, []);
      t.true(decision.effects.crossings.every((c) => c.kind === 'EXHAUSTED' && c.cause === 'PURCHASE_REFUSED'));
    }
    row.check?.(decision, t);
  });
}

test('decide reports every rule and merchant check of every covering policy', (t) => {
  const decision = decide(
    input({
      currency: 'EUR',
      policies: [
        office({
          currencies: ['EUR', 'GBP'],
          rules: [maxPerPurchase(50_000n), approvalThreshold(20_000n), dailyBudget(100_000n), monthlyBudget(1n, 'BLOCK', { currency: 'GBP' })],
          merchants: [block('Shady'), allow('Acme Supplies')],
        }),
        travel({ rules: [monthlyBudget(1_000_000n, 'REQUIRE_APPROVAL')] }),
      ],
    }),
  );
  t.deepEqual(
    decision.ruleEvaluations.map((e) => [e.policyId, e.role, e.outcome]),
    [
      ['office', 'MERCHANT_ALLOW_LIST', 'PASS'],
      ['office', 'MERCHANT_BLOCK_LIST', 'PASS'],
      ['office', 'PER_PURCHASE_MAXIMUM', 'PASS'],
      ['office', 'APPROVAL_THRESHOLD', 'PASS'],
      ['office', 'SPENDING_BUDGET', 'PASS'],
      ['office', 'SPENDING_BUDGET', 'NOT_APPLICABLE'],
      ['travel', 'SPENDING_ESCALATION', 'PASS'],
    ],
  );
  t.true(decision.ruleEvaluations.every((e) => typeof e.message === 'string' && e.message.length > 0));
});

test('decide is deterministic and reads no clock', (t) => {
  const given = input({ policies: [office({ rules: [dailyBudget(100_000n), approvalThreshold(5_000n)] })] });
  t.deepEqual(decide(given), decide(given));
  t.is(decide(given).evaluatedAt, given.now);
});

test('windows of other periods are not read', (t) => {
  const decision = decide(
    input({
      policies: [office({ rules: [dailyBudget(100_000n)] })],
      windows: { 'office:EUR:DAY:2026-11-20': windowState(100_000n) },
    }),
  );
  t.is(decision.outcome, 'APPROVED');
});
