// Property tests of decide() and reevaluate() against a naive reference reading of docs/internals/design.md §4.
import test from 'ava';
import { ISO_4217_MINOR_UNITS } from '../../src/engine/iso-4217.ts';
import fc from 'fast-check';
import { DateTime } from 'luxon';
import { decide, decideWithBudgets } from '../../src/engine/decide.ts';
import { merchantKey } from '../../src/engine/merchant-key.ts';
import { reevaluate } from '../../src/engine/reevaluate.ts';
import {
  REASON_CODES,
  type Decision,
  type EngineInput,
  type MerchantEntry,
  type PolicyCandidate,
  type ReasonCode,
  type Rule,
  type WindowState,
} from '../../src/engine/types.ts';

const LABELS = ['Acme Supplies', 'ACME supplies!', 'Shady Goods', 'Paper Co', 'Airline'];
const CURRENCIES = ['EUR', 'USD', 'JPY'];
const ZONES = ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'UTC'];
const REFUSALS: ReasonCode[] = ['AGENT_DISABLED', 'NO_APPLICABLE_POLICY', 'CURRENCY_NOT_COVERED'];
const AGENT_ID = 'agent-1';

// Half of the amounts come from a coarse grid so that totals land exactly on limits often.
const grid = (max: bigint) => fc.bigInt({ min: 0n, max: max / 500n }).map((n) => n * 500n);
const amount = fc.oneof(grid(3_000n), fc.bigInt({ min: 0n, max: 3_000n }));

const ruleArb = fc.oneof(
  fc.record({
    ruleType: fc.constant('AMOUNT_LIMIT' as const),
    effect: fc.constantFrom('BLOCK' as const, 'REQUIRE_APPROVAL' as const),
    periodKind: fc.constant('PER_REQUEST' as const),
    amountMinor: amount,
    currency: fc.constantFrom(null, null, 'EUR', 'USD'),
  }),
  fc.record({
    ruleType: fc.constant('SPEND_LIMIT' as const),
    effect: fc.constantFrom('BLOCK' as const, 'REQUIRE_APPROVAL' as const),
    periodKind: fc.constantFrom('DAY' as const, 'MONTH' as const, 'DAY' as const, 'PER_REQUEST' as const),
    amountMinor: amount,
    currency: fc.constantFrom(null, null, 'EUR', 'USD'),
  }),
);

// A REQUIRE_APPROVAL rule may ask for a quorum (absent: 1); a BLOCK rule never carries one.
const quorumArb = fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined, freq: 2 });

const mostly = <T, U>(usual: T, ...rare: U[]) =>
  fc.oneof({ arbitrary: fc.constant<T | U>(usual), weight: 6 }, { arbitrary: fc.constantFrom<T | U>(...rare), weight: 1 });

const merchantArb = fc.record({ listType: fc.constantFrom('ALLOW' as const, 'BLOCK' as const), label: fc.constantFrom(...LABELS) });

const policyArb = fc.record({
  status: mostly('ACTIVE' as const, 'DISABLED' as const, 'ARCHIVED' as const),
  versionStatus: mostly('ACTIVE' as const, 'DRAFT' as const, 'ARCHIVED' as const),
  scopeType: fc.constantFrom('ORGANIZATION' as const, 'ORGANIZATION' as const, 'AGENT' as const),
  listsAgent: fc.boolean(),
  currencies: fc.oneof({ arbitrary: fc.constant(['EUR']), weight: 3 }, { arbitrary: fc.subarray(CURRENCIES), weight: 2 }),
  rules: fc.array(
    fc.tuple(ruleArb, quorumArb).map(([r, approvalsRequired]) => (r.effect === 'REQUIRE_APPROVAL' && approvalsRequired !== undefined ? { ...r, approvalsRequired } : r)),
    { maxLength: 4 },
  ),
  merchants: fc.oneof({ arbitrary: fc.array(merchantArb, { maxLength: 0 }), weight: 2 }, { arbitrary: fc.array(merchantArb, { maxLength: 4 }), weight: 1 }),
});

const windowArb = fc.record({ committedMinor: amount, heldMinor: amount, openingBalanceMinor: fc.oneof(grid(1_000n), fc.bigInt({ min: 0n, max: 1_000n })) });

const inputArb = fc
  .record({
    mode: fc.constantFrom('CURRENT_POLICIES' as const, 'CURRENT_POLICIES' as const, 'CURRENT_POLICIES' as const, 'DRAFT_POLICY' as const, 'POLICY_VERSION' as const),
    agentStatus: mostly('ENABLED' as const, 'DISABLED' as const, 'ARCHIVED' as const),
    policies: fc.oneof({ arbitrary: fc.array(policyArb, { minLength: 1, maxLength: 4 }), weight: 9 }, { arbitrary: fc.array(policyArb, { maxLength: 0 }), weight: 1 }),
    amount: fc.oneof(grid(3_000n), fc.bigInt({ min: 0n, max: 3_000n })).map((n) => (n === 0n ? 500n : n)),
    currency: mostly('EUR', 'USD', 'JPY'),
    merchant: fc.constantFrom(...LABELS, 'Somebody Else'),
    windows: fc.array(fc.option(windowArb, { freq: 3 }), { minLength: 24, maxLength: 24 }),
    now: fc.date({ min: new Date('2025-01-01T00:00:00Z'), max: new Date('2027-12-31T00:00:00Z'), noInvalidDate: true }),
    timeZone: fc.constantFrom(...ZONES),
  })
  .map((g): EngineInput => {
    const now = g.now.toISOString();
    const policies: PolicyCandidate[] = g.policies.map((p, i) => ({
      policyId: `policy-${i}`,
      policyName: `Policy ${i}`,
      policyStatus: p.status,
      scopeType: p.scopeType,
      agentIds: p.listsAgent ? ['agent-0', AGENT_ID] : ['agent-0'],
      version: {
        id: `policy-${i}-v1`,
        versionNumber: 1,
        status: p.versionStatus,
        currencies: p.currencies,
        currencyScope: 'EXPLICIT',
        rules: p.rules.map((r, j): Rule => ({ id: `rule-${i}-${j}`, ...r })),
        merchants: p.merchants.map((m, j): MerchantEntry => ({ id: `entry-${i}-${j}`, listType: m.listType, label: m.label, merchantKey: merchantKey(m.label) })),
      },
    }));
    // Give some of the windows the purchase may touch a state; the others are missing (all zero).
    const windows = new Map<string, WindowState>();
    const local = DateTime.fromISO(now, { zone: g.timeZone });
    policies.forEach((p, i) => {
      const periods = [`${g.currency}:DAY:${local.toFormat('yyyy-MM-dd')}`, `${g.currency}:MONTH:${local.toFormat('yyyy-MM')}`];
      periods.forEach((period, k) => {
        const state = g.windows[(i * 2 + k) % g.windows.length];
        if (state) windows.set(`${p.policyId}:${period}`, { budgetCounterId: `counter-${i}-${k}`, ...state });
      });
    });
    const single = g.mode !== 'CURRENT_POLICIES';
    return {
      mode: g.mode,
      purchase: { merchant: g.merchant, merchantKey: merchantKey(g.merchant), amountMinor: g.amount, currency: g.currency, category: null },
      agent: single ? null : { id: AGENT_ID, status: g.agentStatus },
      policies: single ? policies.slice(0, 1) : policies,
      windows,
      now,
      timeZone: g.timeZone,
    };
  });

/** The reference: docs/internals/design.md §4 read as plainly as possible. */
function reference(input: EngineInput): { outcome: Decision['outcome']; reasons: ReasonCode[]; blockLimitsOk: (extra: bigint) => boolean; approvalsRequired: number } {
  const ordered = (codes: Set<ReasonCode>) => REASON_CODES.filter((code) => codes.has(code));
  const refuse = (code: ReasonCode) => ({ outcome: 'REJECTED' as const, reasons: [code], blockLimitsOk: () => true, approvalsRequired: 0 });
  const current = input.mode === 'CURRENT_POLICIES';
  if (current && input.agent?.status !== 'ENABLED') return refuse('AGENT_DISABLED');
  const applicable = input.policies.filter(
    (p) =>
      !current ||
      (p.policyStatus === 'ACTIVE' &&
        p.version.status === 'ACTIVE' &&
        (p.scopeType === 'ORGANIZATION' || p.agentIds.includes(input.agent!.id))),
  );
  if (applicable.length === 0) return refuse('NO_APPLICABLE_POLICY');
  const { currency, amountMinor, merchantKey: key } = input.purchase;
  const covering = applicable.filter((p) => p.version.currencies.includes(currency));
  if (covering.length === 0) return refuse('CURRENCY_NOT_COVERED');
  const blocks = new Set<ReasonCode>();
  const escalations = new Set<ReasonCode>();
  const spendBlocks: Array<{ used: bigint; limit: bigint }> = [];
  // The quorum asked for by each REQUIRE_APPROVAL rule the purchase goes over.
  const quorums: number[] = [];
  const local = DateTime.fromISO(input.now, { zone: input.timeZone });
  for (const p of covering) {
    const { merchants, rules } = p.version;
    if (merchants.some((m) => m.listType === 'BLOCK' && m.merchantKey === key)) blocks.add('MERCHANT_BLOCKED');
    const allows = merchants.filter((m) => m.listType === 'ALLOW');
    if (allows.length > 0 && !allows.some((m) => m.merchantKey === key)) blocks.add('MERCHANT_NOT_ALLOW_LISTED');
    for (const r of rules) {
      if (r.currency !== null && r.currency !== currency) continue;
      const target = r.effect === 'BLOCK' ? blocks : escalations;
      if (r.ruleType === 'SPEND_LIMIT' && r.periodKind !== 'PER_REQUEST') {
        const periodKey = local.toFormat(r.periodKind === 'DAY' ? 'yyyy-MM-dd' : 'yyyy-MM');
        const state = input.windows.get(`${p.policyId}:${currency}:${r.periodKind}:${periodKey}`);
        const used = state ? state.committedMinor + state.heldMinor + state.openingBalanceMinor : 0n;
        if (r.effect === 'BLOCK') spendBlocks.push({ used, limit: r.amountMinor });
        if (used + amountMinor > r.amountMinor) {
          target.add(r.periodKind === 'DAY' ? 'DAILY_LIMIT_EXCEEDED' : 'MONTHLY_LIMIT_EXCEEDED');
          if (r.effect === 'REQUIRE_APPROVAL') quorums.push(r.approvalsRequired ?? 1);
        }
      } else if (amountMinor > r.amountMinor) {
        target.add(r.effect === 'BLOCK' ? 'AMOUNT_EXCEEDS_MAX' : 'APPROVAL_THRESHOLD_EXCEEDED');
        if (r.effect === 'REQUIRE_APPROVAL') quorums.push(r.approvalsRequired ?? 1);
      }
    }
  }
  const blockLimitsOk = (extra: bigint) => spendBlocks.every(({ used, limit }) => used + extra <= limit);
  if (blocks.size > 0) return { outcome: 'REJECTED', reasons: ordered(blocks), blockLimitsOk, approvalsRequired: 0 };
  if (escalations.size > 0) return { outcome: 'REQUIRES_APPROVAL', reasons: ordered(escalations), blockLimitsOk, approvalsRequired: Math.max(...quorums) };
  return { outcome: 'APPROVED', reasons: ['WITHIN_POLICY'], blockLimitsOk, approvalsRequired: 0 };
}

const RUNS = { numRuns: 600 };

test('property: decide agrees with the reference reading of docs/internals/design.md §4', (t) => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const decision = decide(input);
      const expected = reference(input);
      return decision.outcome === expected.outcome && JSON.stringify(decision.reasonCodes) === JSON.stringify(expected.reasons);
    }),
    RUNS,
  );
  t.pass();
});

test('property: a purchase needs the largest approvalsRequired of the escalating rules (0 when nobody is asked)', (t) => {
  let asked = 0;
  let quorum = 0;
  fc.assert(
    fc.property(inputArb, (input) => {
      const decision = decide(input);
      const expected = reference(input).approvalsRequired;
      if (decision.outcome === 'REQUIRES_APPROVAL') asked++;
      if (decision.approvalsRequired > 1) quorum++;
      // What escalated, read from the decision's own evidence: each ESCALATE evaluation names its rule.
      const rules = new Map(input.policies.flatMap((p) => p.version.rules.map((r) => [r.id, r] as const)));
      const escalating = decision.ruleEvaluations.filter((e) => e.outcome === 'ESCALATE').map((e) => rules.get(e.policyRuleId!)!.approvalsRequired ?? 1);
      const largest = decision.outcome === 'REQUIRES_APPROVAL' ? Math.max(...escalating) : 0;
      return decision.approvalsRequired === expected && decision.approvalsRequired === largest;
    }),
    RUNS,
  );
  // The generator reaches the cases the property is about.
  t.true(asked > 30, `${asked} escalations`);
  t.true(quorum > 10, `${quorum} quorums`);
});

test('property: decide is decideWithBudgets without the budgets', (t) => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const { budgets, ...decision } = decideWithBudgets(input);
      t.deepEqual(decide(input), decision);
      return budgets.length === decision.effects.budget.length || decision.outcome === 'REJECTED';
    }),
    RUNS,
  );
});

test('property: never APPROVED when a BLOCK rule is exceeded, and an approval never takes a window past a BLOCK limit', (t) => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const decision = decideWithBudgets(input);
      if (decision.outcome === 'REJECTED') return true;
      const noBlock = decision.ruleEvaluations.every((e) => e.outcome !== 'BLOCK');
      // Every window the purchase is committed or held in stays within each of its BLOCK limits.
      const withinBudgets = decision.budgets.every((b) =>
        b.limits.every((l) => l.effect !== 'BLOCK' || b.current.reservedMinor + b.current.openingBalanceMinor + input.purchase.amountMinor <= l.limitMinor),
      );
      return noBlock && withinBudgets && reference(input).blockLimitsOk(input.purchase.amountMinor);
    }),
    RUNS,
  );
  t.pass();
});

test('property: REJECTED iff there is a blocking reason; REJECTED has no budget effects', (t) => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const decision = decideWithBudgets(input);
      const refused = decision.reasonCodes.some((code) => REFUSALS.includes(code));
      const blocked = decision.ruleEvaluations.filter((e) => e.outcome === 'BLOCK');
      const rejected = decision.outcome === 'REJECTED';
      if (rejected !== (refused || blocked.length > 0)) return false;
      if (!rejected) return decision.effects.budget.length === decision.budgets.length;
      const explained = decision.reasonCodes.every((code) => REFUSALS.includes(code) || blocked.some((e) => e.reasonCode === code));
      // A refusal writes nothing; it may report that a BLOCK limit past 80% is now refusing purchases.
      const refusalsOnly = decision.effects.crossings.every((c) => c.kind === 'EXHAUSTED' && c.cause === 'PURCHASE_REFUSED' && c.effect === 'BLOCK' && c.usedBeforeMinor * 100n > c.limitMinor * 80n);
      return explained && decision.effects.budget.length === 0 && refusalsOnly && decision.escalationReasonCodes.length === 0;
    }),
    RUNS,
  );
  t.pass();
});

const shuffled = <T>(items: readonly T[], keys: number[]): T[] =>
  items
    .map((item, i) => ({ item, key: keys[i % Math.max(keys.length, 1)] ?? 0, i }))
    .sort((a, b) => a.key - b.key || b.i - a.i)
    .map(({ item }) => item);

const canonical = (decision: Decision) => ({
  outcome: decision.outcome,
  reasonCodes: decision.reasonCodes,
  escalationReasonCodes: decision.escalationReasonCodes,
  explanation: decision.explanation,
  policiesConsidered: decision.policiesConsidered,
  excluded: decision.policiesExcludedByCurrencyScope,
  evaluations: decision.ruleEvaluations.map((e) => JSON.stringify(e, (_, v) => (typeof v === 'bigint' ? `${v}` : v))).sort(),
  effects: decision.effects.budget.map((e) => `${e.operation} ${e.windowId} ${e.amountMinor}`).sort(),
  crossings: decision.effects.crossings.map((c) => `${c.kind} ${c.windowId} ${c.policyRuleId}`).sort(),
});

test('property: the decision does not depend on the order of policies, rules or merchant entries', (t) => {
  fc.assert(
    fc.property(inputArb, fc.array(fc.integer(), { minLength: 1, maxLength: 8 }), (input, keys) => {
      const reordered: EngineInput = {
        ...input,
        policies: shuffled(input.policies, keys).map((p) => ({
          ...p,
          version: { ...p.version, rules: shuffled(p.version.rules, keys.slice(1)), merchants: shuffled(p.version.merchants, [...keys].reverse()) },
        })),
      };
      t.deepEqual(canonical(decide(reordered)), canonical(decide(input)));
    }),
    { numRuns: 300 },
  );
});

test('property: an unchanged escalation approved by a person is approved, and its holds become spend', (t) => {
  fc.assert(
    fc.property(inputArb, (input) => {
      const submitted = decide(input);
      if (submitted.outcome !== 'REQUIRES_APPROVAL') return true;
      const windows = new Map(input.windows);
      for (const effect of submitted.effects.budget) {
        const state = windows.get(effect.windowId) ?? { budgetCounterId: null, committedMinor: 0n, heldMinor: 0n, openingBalanceMinor: 0n };
        windows.set(effect.windowId, { ...state, heldMinor: state.heldMinor + effect.amountMinor });
      }
      const request = {
        escalatedVersionIds: submitted.policiesConsidered.map((p) => p.policyVersionId),
        heldWindowIds: submitted.effects.budget.map((e) => e.windowId),
        escalationReasonCodes: submitted.escalationReasonCodes,
      };
      const later = { ...input, windows, now: new Date(Date.parse(input.now) + 86_400_000).toISOString(), periodInstant: input.now };
      const approved = reevaluate(later, { ...request, answer: 'APPROVE' });
      const rejected = reevaluate(later, { ...request, answer: 'REJECT' });
      return (
        approved.outcome === 'APPROVED' &&
        !approved.versionsChanged &&
        approved.effects.budget.every((e) => e.operation === 'CONVERT_HOLD') &&
        approved.effects.budget.length === request.heldWindowIds.length &&
        // Approval turns holds into spending: any budget event is reported now, for a held window.
        approved.effects.crossings.every((c) => c.cause === 'SPENDING' && request.heldWindowIds.includes(c.windowId) && c.usedAfterMinor - c.usedBeforeMinor === input.purchase.amountMinor) &&
        rejected.effects.crossings.length === 0 &&
        rejected.outcome === 'REJECTED' &&
        rejected.effects.budget.every((e) => e.operation === 'RELEASE_HOLD') &&
        JSON.stringify(rejected.reasonCodes) === JSON.stringify(submitted.escalationReasonCodes)
      );
    }),
    RUNS,
  );
  t.pass();
});

// Wider inputs: any amounts, zones, currencies, merchant text, empty lists, duplicate ids.
// Every currency the service accepts (inputs are checked against ISO 4217 before the engine runs).
const allCurrencies = Object.keys(ISO_4217_MINOR_UNITS);
const wideInputArb = fc
  .record({
    base: inputArb,
    amount: fc.bigInt({ min: 0n, max: 2n ** 62n }),
    limits: fc.array(fc.bigInt({ min: 0n, max: 2n ** 62n }), { minLength: 1, maxLength: 8 }),
    currency: fc.constantFrom(...allCurrencies),
    merchant: fc.string({ maxLength: 30 }),
    timeZone: fc.constantFrom(...ZONES, 'Pacific/Chatham', 'America/Santiago', 'Australia/Lord_Howe', 'Asia/Kathmandu'),
  })
  .map(({ base, amount, limits, currency, merchant, timeZone }): EngineInput => ({
    ...base,
    timeZone,
    purchase: { merchant, merchantKey: merchantKey(merchant), amountMinor: amount, currency, category: 'anything' },
    policies: base.policies.map((p, i) => ({
      ...p,
      version: {
        ...p.version,
        currencies: i % 2 === 0 ? [...p.version.currencies, currency] : p.version.currencies,
        rules: p.version.rules.map((r, j) => ({ ...r, amountMinor: limits[j % limits.length], currency: r.currency && j % 2 ? currency : r.currency })),
      },
    })),
  }));

test('property: decide never throws for a valid input, and always explains itself', (t) => {
  fc.assert(
    fc.property(wideInputArb, (input) => {
      const decision = decide(input);
      return decision.explanation.length > 0 && decision.reasonCodes.length > 0 && decision.explanation.endsWith('.');
    }),
    { numRuns: 500 },
  );
  t.pass();
});
