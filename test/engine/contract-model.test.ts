// decide() against a small model of the contract's rules written apart from the engine (docs/reference/contract.md
// §1, §2.1, §2.6; docs/internals/design.md §4), where the other property suite (properties.test.ts) does not reach:
// amounts and window totals up to 2^53-1, every minor-unit exponent (0, 2, 3, 4), and merchant names that differ
// from a list entry only as the key documents (case, spacing and punctuation, full-width forms, invisible
// characters). Checked per rule evaluation: which rules fire with which reason code, outcome precedence
// (REJECTED > REQUIRES_APPROVAL > APPROVED), the budget effects, that no window passes a BLOCK limit or what a
// window can count, and that every amount a message prints is the exact amount in major units.
import assert from 'node:assert/strict';
import test from 'ava';
import fc from 'fast-check';
import { decide } from '../../src/engine/decide.ts';
import { merchantKey } from '../../src/engine/merchant-key.ts';
import { REASON_CODES, type Decision, type EngineInput, type PolicyCandidate, type ReasonCode, type RuleEvaluation, type WindowState } from '../../src/engine/types.ts';

const MAX = 2n ** 53n - 1n;
const NOW = '2026-11-18T10:00:00.000Z';
const DAY_KEY = '2026-11-18';
const MONTH_KEY = '2026-11';
// One currency of each minor-unit exponent ISO 4217 has, and their exponents as the model knows them.
const EXPONENTS: Record<string, number> = { JPY: 0, EUR: 2, BHD: 3, CLF: 4 };
const CURRENCIES = Object.keys(EXPONENTS);

// Merchant names pairwise different under the key; a variant of one is the same merchant as documented.
const NAMES = ['Paper Co', 'Shady Goods', 'Coffee Beans', 'Straße Nord', 'ΟΔΟΣ Shop'];
const variant = fc.record({
  name: fc.nat(NAMES.length - 1),
  caseOf: fc.array(fc.constantFrom('keep', 'upper', 'lower'), { minLength: 12, maxLength: 12 }),
  separator: fc.constantFrom(' ', '  ', ' - ', '.', '\t', '_'),
  around: fc.constantFrom('', ' ', '...', ' !'),
  fullWidth: fc.boolean(),
  invisible: fc.option(fc.tuple(fc.nat(11), fc.constantFrom('\u200B', '\u00AD', '\u2060', '\uFE0F')), { nil: null }),
});
type Variant = typeof variant extends fc.Arbitrary<infer T> ? T : never;

function spell(v: Variant): string {
  let chars = [...NAMES[v.name]].flatMap((c, i) => [...(v.caseOf[i % 12] === 'upper' ? c.toUpperCase() : v.caseOf[i % 12] === 'lower' ? c.toLowerCase() : c)]);
  if (v.fullWidth) chars = chars.map((c) => (c >= '!' && c <= '~' ? String.fromCharCode(c.charCodeAt(0) + 0xfee0) : c));
  if (v.invisible) chars.splice(v.invisible[0] % chars.length, 0, v.invisible[1]);
  return v.around + chars.join('').replaceAll(' ', v.separator).replaceAll('\u3000', v.separator) + v.around;
}

// Amounts: small ones, ones near 2^53-1, anything in between.
const anyAmount = fc.oneof(fc.bigInt(1n, 10_000n), fc.bigInt(MAX - 10_000n, MAX), fc.bigInt(1n, MAX));
/** A limit: absolute, or relative to what it will be compared with (so totals land on it, one under or one over). */
const limitSpec = fc.oneof(
  { weight: 2, arbitrary: anyAmount.map((v) => ({ absolute: v })) },
  { weight: 2, arbitrary: fc.integer({ min: -2, max: 2 }).map((delta) => ({ delta: BigInt(delta) })) },
);
const ruleArb = fc.record({
  kind: fc.constantFrom('AMOUNT', 'PER_REQUEST_SPEND', 'DAY', 'MONTH', 'DAY', 'MONTH'),
  effect: fc.constantFrom('BLOCK' as const, 'REQUIRE_APPROVAL' as const),
  limit: limitSpec,
  currency: fc.option(fc.constantFrom(...CURRENCIES), { nil: null, freq: 2 }),
  approvalsRequired: fc.integer({ min: 1, max: 5 }),
});
/** A window's usage before the purchase: up to 2^53-1 in all, split between opening balance, committed and held. */
const windowArb = fc.record({
  total: fc.oneof(fc.constant(0n), fc.bigInt(0n, 10_000n), fc.bigInt(MAX - 20_000n, MAX), fc.bigInt(0n, MAX)),
  // Percentages: of the total, the opening balance; of the rest, what was committed (100: nothing held).
  split: fc.tuple(fc.oneof(fc.nat(100), fc.constantFrom(0, 100)), fc.oneof(fc.nat(100), fc.constant(100))),
});
const policyArb = fc.record({
  inForce: fc.constantFrom(true, true, true, false),
  currencies: fc.subarray(CURRENCIES, { minLength: 1 }),
  rules: fc.array(ruleArb, { maxLength: 4 }),
  merchants: fc.array(fc.record({ listType: fc.constantFrom('ALLOW' as const, 'BLOCK' as const), label: variant }), { maxLength: 3 }),
  day: windowArb,
  month: windowArb,
});
const scenario = fc.record({
  agentEnabled: fc.constantFrom(true, true, true, true, false),
  policies: fc.array(policyArb, { maxLength: 3 }),
  amount: anyAmount,
  currency: fc.constantFrom(...CURRENCIES),
  merchant: variant,
});
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

const splitOf = ({ total, split: [a, b] }: { total: bigint; split: [number, number] }): WindowState => {
  const opening = (total * BigInt(Math.min(a, 100))) / 100n;
  const committed = ((total - opening) * BigInt(Math.min(b, 100))) / 100n;
  return { budgetCounterId: null, openingBalanceMinor: opening, committedMinor: committed, heldMinor: total - opening - committed };
};
const clamp = (v: bigint) => (v < 1n ? 1n : v > MAX ? MAX : v);

function build(s: Scenario): EngineInput {
  const windows = new Map<string, WindowState>();
  const policies: PolicyCandidate[] = s.policies.map((p, i) => {
    const id = `policy-${i}`;
    const used = { DAY: p.day.total, MONTH: p.month.total };
    for (const c of CURRENCIES) {
      windows.set(`${id}:${c}:DAY:${DAY_KEY}`, splitOf(p.day));
      windows.set(`${id}:${c}:MONTH:${MONTH_KEY}`, splitOf(p.month));
    }
    return {
      policyId: id,
      policyName: `Policy ${i}`,
      policyStatus: p.inForce ? 'ACTIVE' : 'DISABLED',
      scopeType: 'ORGANIZATION',
      agentIds: [],
      version: {
        id: `${id}-v1`,
        versionNumber: 1,
        status: 'ACTIVE',
        currencies: p.currencies,
        currencyScope: 'EXPLICIT',
        rules: p.rules.map((r, j) => {
          const window = r.kind === 'DAY' || r.kind === 'MONTH';
          const compared = window ? used[r.kind as 'DAY' | 'MONTH'] + s.amount : s.amount;
          return {
            id: `rule-${i}-${j}`,
            ruleType: r.kind === 'AMOUNT' ? ('AMOUNT_LIMIT' as const) : ('SPEND_LIMIT' as const),
            effect: r.effect,
            periodKind: window ? (r.kind as 'DAY' | 'MONTH') : ('PER_REQUEST' as const),
            amountMinor: 'absolute' in r.limit ? r.limit.absolute : clamp(compared + r.limit.delta),
            currency: r.currency,
            ...(r.effect === 'REQUIRE_APPROVAL' ? { approvalsRequired: r.approvalsRequired } : {}),
          };
        }),
        merchants: p.merchants.map((m, j) => {
          const label = spell(m.label);
          return { id: `entry-${i}-${j}`, listType: m.listType, label, merchantKey: merchantKey(label) };
        }),
      },
    };
  });
  const merchant = spell(s.merchant);
  return {
    mode: 'CURRENT_POLICIES',
    purchase: { merchant, merchantKey: merchantKey(merchant), amountMinor: s.amount, currency: s.currency, category: null },
    agent: { id: 'agent-1', status: s.agentEnabled ? 'ENABLED' : 'DISABLED' },
    policies,
    windows,
    now: NOW,
    timeZone: 'UTC',
  };
}

/** Exact major units, by division: the model's own formatting. */
const major = (minor: bigint, exponent: number): string => {
  const sign = minor < 0n ? '-' : '';
  const abs = minor < 0n ? -minor : minor;
  if (exponent === 0) return `${sign}${abs}`;
  const unit = 10n ** BigInt(exponent);
  return `${sign}${abs / unit}.${(abs % unit).toString().padStart(exponent, '0')}`;
};

interface Expected {
  key: string;
  outcome: RuleEvaluation['outcome'];
  reasonCode: ReasonCode | null;
  observed: bigint | null;
  limit: bigint | null;
  /** Where the amount counts, and what it takes the window to. */
  window: string | null;
  projected: bigint | null;
  /** Spending in the window before the purchase: opening balance and committed, not held. */
  spent: bigint | null;
  blockLimit: boolean;
}

interface Model {
  outcome: Decision['outcome'];
  reasons: ReasonCode[];
  evaluations: Expected[];
  approvals: number;
  windows: Map<string, bigint>;
}

/** The contract's rules, read plainly: the model the engine must agree with. */
function model(s: Scenario, input: EngineInput): Model {
  const ordered = (codes: ReasonCode[]) => REASON_CODES.filter((c) => codes.includes(c));
  const refused = (code: ReasonCode): Model => ({ outcome: 'REJECTED', reasons: [code], evaluations: [], approvals: 0, windows: new Map() });
  if (!s.agentEnabled) return refused('AGENT_DISABLED');
  const inForce = input.policies.filter((p, i) => s.policies[i].inForce);
  if (inForce.length === 0) return refused('NO_APPLICABLE_POLICY');
  const covering = inForce.filter((p) => p.version.currencies.includes(s.currency));
  if (covering.length === 0) return refused('CURRENCY_NOT_COVERED');

  const evaluations: Expected[] = [];
  const windows = new Map<string, bigint>();
  for (const p of covering) {
    const i = Number(p.policyId.slice('policy-'.length));
    const blocks = s.policies[i].merchants.filter((m) => m.listType === 'BLOCK');
    const allows = s.policies[i].merchants.filter((m) => m.listType === 'ALLOW');
    s.policies[i].merchants.forEach((m, j) => {
      if (m.label.name !== s.merchant.name) return;
      const blocked = m.listType === 'BLOCK';
      evaluations.push({ key: `entry-${i}-${j}`, outcome: blocked ? 'BLOCK' : 'PASS', reasonCode: blocked ? 'MERCHANT_BLOCKED' : null, observed: null, limit: null, window: null, projected: null, spent: null, blockLimit: false });
    });
    const none = { observed: null, limit: null, window: null, projected: null, spent: null, blockLimit: false };
    if (blocks.length > 0 && !blocks.some((m) => m.label.name === s.merchant.name)) evaluations.push({ key: `${p.policyId}:MERCHANT_BLOCK_LIST`, outcome: 'PASS', reasonCode: null, ...none });
    if (allows.length > 0 && !allows.some((m) => m.label.name === s.merchant.name)) {
      evaluations.push({ key: `${p.policyId}:MERCHANT_ALLOW_LIST`, outcome: 'BLOCK', reasonCode: 'MERCHANT_NOT_ALLOW_LISTED', ...none });
    }
    for (const r of p.version.rules) {
      const key = r.id;
      if (r.currency !== null && r.currency !== s.currency) {
        evaluations.push({ key, outcome: 'NOT_APPLICABLE', reasonCode: null, ...none, limit: r.amountMinor });
        continue;
      }
      const escalates = r.effect === 'REQUIRE_APPROVAL';
      if (r.periodKind === 'PER_REQUEST') {
        const over = s.amount > r.amountMinor;
        evaluations.push({ key, outcome: over ? (escalates ? 'ESCALATE' : 'BLOCK') : 'PASS', reasonCode: over ? (escalates ? 'APPROVAL_THRESHOLD_EXCEEDED' : 'AMOUNT_EXCEEDS_MAX') : null, observed: s.amount, limit: r.amountMinor, window: null, projected: null, spent: null, blockLimit: false });
        continue;
      }
      const day = r.periodKind === 'DAY';
      const window = `${p.policyId}:${s.currency}:${r.periodKind}:${day ? DAY_KEY : MONTH_KEY}`;
      const state = splitOf(day ? s.policies[i].day : s.policies[i].month);
      const projected = (day ? s.policies[i].day.total : s.policies[i].month.total) + s.amount;
      windows.set(window, projected);
      const over = projected > r.amountMinor;
      // Past what a window can count, a limit that would ask a person refuses (decisions.md).
      const outcome = over ? (escalates && projected <= MAX ? 'ESCALATE' : 'BLOCK') : 'PASS';
      evaluations.push({ key, outcome, reasonCode: over ? (day ? 'DAILY_LIMIT_EXCEEDED' : 'MONTHLY_LIMIT_EXCEEDED') : null, observed: projected, limit: r.amountMinor, window, projected, spent: state.openingBalanceMinor + state.committedMinor, blockLimit: !escalates });
    }
  }
  const blocking = evaluations.filter((e) => e.outcome === 'BLOCK');
  const escalating = evaluations.filter((e) => e.outcome === 'ESCALATE');
  const rules = new Map(covering.flatMap((p) => p.version.rules.map((r) => [r.id, r] as const)));
  if (blocking.length > 0) return { outcome: 'REJECTED', reasons: ordered(blocking.map((e) => e.reasonCode!)), evaluations, approvals: 0, windows };
  if (escalating.length > 0) {
    const approvals = Math.max(...escalating.map((e) => rules.get(e.key)!.approvalsRequired ?? 1));
    return { outcome: 'REQUIRES_APPROVAL', reasons: ordered(escalating.map((e) => e.reasonCode!)), evaluations, approvals, windows };
  }
  return { outcome: 'APPROVED', reasons: ['WITHIN_POLICY'], evaluations, approvals: 0, windows };
}

const keyOf = (e: RuleEvaluation) => e.policyRuleId ?? e.policyMerchantEntryId ?? `${e.policyId}:${e.role}`;
// FC_SEED and FC_RUNS explore further; the suite runs a fixed sample (which reaches every case listed at the end).
const RUNS = { numRuns: Number(process.env.FC_RUNS ?? 500), seed: Number(process.env.FC_SEED ?? 1), includeErrorInReport: true };

test('property: decide agrees with the model rule by rule, up to 2^53-1 and in every exponent', (t) => {
  const seen = new Set<string>();
  fc.assert(
    fc.property(scenario, (s) => {
      const input = build(s);
      const decision = decide(input);
      const expected = model(s, input);
      assert.equal(decision.outcome, expected.outcome);
      assert.deepEqual(decision.reasonCodes, expected.reasons);
      assert.deepEqual(decision.escalationReasonCodes, expected.outcome === 'REQUIRES_APPROVAL' ? expected.reasons : []);
      assert.equal(decision.approvalsRequired, expected.approvals);
      const actual = new Map(decision.ruleEvaluations.map((e) => [keyOf(e), e]));
      assert.equal(actual.size, decision.ruleEvaluations.length, 'one evaluation per rule and entry');
      assert.deepEqual([...actual.keys()].sort(), expected.evaluations.map((e) => e.key).sort());
      const exponent = EXPONENTS[s.currency];
      for (const e of expected.evaluations) {
        const got = actual.get(e.key)!;
        assert.equal(got.outcome, e.outcome, e.key);
        assert.equal(got.reasonCode, e.reasonCode, e.key);
        if (e.outcome === 'NOT_APPLICABLE' || e.limit === null) continue;
        assert.equal(got.observedMinor, e.observed, e.key);
        assert.equal(got.limitMinor, e.limit, e.key);
        assert.equal(got.headroomMinor, e.limit - e.observed!, e.key);
        // The message prints the limit and the amount compared with it exactly, in major units (past what
        // a window can count, the limit is not the reason and goes unsaid).
        const pastMax = e.projected !== null && e.projected > MAX;
        if (!pastMax) assert.ok(got.message!.includes(`${major(e.limit, exponent)} ${s.currency}`), got.message!);
        assert.ok(got.message!.includes(`${major(e.observed!, exponent)} ${s.currency}`), got.message!);
        seen.add(`${got.rule}:${got.outcome}:${pastMax ? 'PAST_MAX' : ''}`);
      }
      // An approval's explanation names the purchase's amount exactly.
      if (decision.outcome === 'APPROVED') {
        assert.ok(decision.explanation.includes(`${major(s.amount, exponent)} ${s.currency}`), decision.explanation);
      }
      // Budget effects: the amount, once, in every window it counts toward; nothing when refused.
      const operation = expected.outcome === 'APPROVED' ? 'COMMIT' : 'HOLD';
      const effects = decision.effects.budget.map((b) => `${b.operation} ${b.windowId} ${b.amountMinor}`).sort();
      assert.deepEqual(effects, expected.outcome === 'REJECTED' ? [] : [...expected.windows.keys()].map((w) => `${operation} ${w} ${s.amount}`).sort());
      // Budget events (docs/approve/approvals.md#budget-events): spending is the opening balance and what was
      // committed, never a hold. An approval reports each limit its spending passes 80% of or reaches; a
      // refusal, each BLOCK limit it went over whose spending was already past 80%; a hold, nothing.
      const crossings: string[] = [];
      for (const e of expected.evaluations) {
        if (e.spent === null || e.limit === null || e.outcome === 'NOT_APPLICABLE') continue;
        const [before, after, limit] = [e.spent, e.spent + s.amount, e.limit];
        if (expected.outcome === 'APPROVED') {
          if (before * 100n <= limit * 80n && after * 100n > limit * 80n) crossings.push(`THRESHOLD_REACHED:SPENDING:${e.key}`);
          if (before < limit && after >= limit) crossings.push(`EXHAUSTED:SPENDING:${e.key}`);
        }
        if (expected.outcome === 'REJECTED' && e.blockLimit && e.projected! > limit && before * 100n > limit * 80n) crossings.push(`EXHAUSTED:PURCHASE_REFUSED:${e.key}`);
      }
      assert.deepEqual(decision.effects.crossings.map((c) => `${c.kind}:${c.cause}:${c.policyRuleId}`).sort(), crossings.sort());
      for (const c of crossings) seen.add(c.slice(0, c.lastIndexOf(':rule')));
      // No window the purchase counts in passes a BLOCK limit on it, nor what a window can count.
      if (expected.outcome !== 'REJECTED') {
        for (const e of expected.evaluations) if (e.blockLimit) assert.ok(e.projected! <= e.limit!, e.key);
        for (const projected of expected.windows.values()) assert.ok(projected <= MAX);
      }
      seen.add(decision.outcome);
    }),
    RUNS,
  );
  // The generator reaches what the property is about.
  const reachable = ['APPROVED', 'REQUIRES_APPROVAL', 'REJECTED', 'SPEND_LIMIT:BLOCK:PAST_MAX', 'SPEND_LIMIT:ESCALATE:', 'SPEND_LIMIT:PASS:', 'AMOUNT_LIMIT:ESCALATE:', 'THRESHOLD_REACHED:SPENDING', 'EXHAUSTED:SPENDING', 'EXHAUSTED:PURCHASE_REFUSED'];
  for (const reached of reachable) {
    t.true(seen.has(reached), reached);
  }
});
