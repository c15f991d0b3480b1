// A policy version's rules compiled for purchases in one currency: what each rule checks, the texts
// that depend only on the rule, and the budget windows it resolved for the latest periods. Built once
// per rules list and currency (the service hands the engine the same cached, read-only versions on
// every request), so a decision does no lookup, no formatting and no string building per rule beyond
// the amounts of its own purchase.
import { formatMajor } from './currency.ts';
import { amountTail, spendTail } from './explain.ts';
import { isWindowRule, ruleAppliesTo, windowIn, type PeriodWindows, type ResolvedWindow } from './periods.ts';
import type { EvaluationOutcome, EvaluationRole, MerchantEntry, PolicyCandidate, ReasonCode, Rule, WindowPeriodKind } from './types.ts';

/**
 * NOT_APPLICABLE: a rule for another currency. PER_PURCHASE: AMOUNT_LIMIT, or SPEND_LIMIT over
 * PER_REQUEST (the purchase alone against the limit). DAY, MONTH: a budget window's limit.
 */
export type Check = 'NOT_APPLICABLE' | 'PER_PURCHASE' | WindowPeriodKind;

/** One rule as a decision applies it. Every step has the same shape (one hidden class for V8). */
export interface Step {
  rule: Rule;
  check: Check;
  role: EvaluationRole;
  /** What an amount above the limit gives. */
  overOutcome: EvaluationOutcome;
  overReason: ReasonCode | null;
  /** '500.00 EUR': the limit in the plan's currency. */
  limit: string;
  /** The message after the amount (per purchase) or the projection (window); the whole message when NOT_APPLICABLE. */
  within: string;
  above: string;
}

export interface Plan {
  currency: string;
  /** The length of the rules list when compiled: inputs are read-only, the check is cheap. */
  ruleCount: number;
  steps: Step[];
  /** The windows of the last DAY and MONTH periods asked for, with the policy and version they belong to. */
  day: ResolvedWindow | null;
  dayPeriod: PeriodWindows | null;
  month: ResolvedWindow | null;
  monthPeriod: PeriodWindows | null;
}

const plans = new WeakMap<readonly Rule[], Plan[]>();

function roleOf(rule: Rule): EvaluationRole {
  const block = rule.effect === 'BLOCK';
  if (isWindowRule(rule)) return block ? 'SPENDING_BUDGET' : 'SPENDING_ESCALATION';
  return block ? 'PER_PURCHASE_MAXIMUM' : 'APPROVAL_THRESHOLD';
}

function stepOf(rule: Rule, currency: string, exponent: number): Step {
  const role = roleOf(rule);
  const block = rule.effect === 'BLOCK';
  if (!ruleAppliesTo(rule, currency)) {
    const message = `Applies only to purchases in ${rule.currency}.`;
    return { rule, check: 'NOT_APPLICABLE', role, overOutcome: 'NOT_APPLICABLE', overReason: null, limit: '', within: message, above: message };
  }
  const limit = `${formatMajor(rule.amountMinor, exponent)} ${currency}`;
  const overOutcome = block ? 'BLOCK' : 'ESCALATE';
  if (isWindowRule(rule)) {
    return {
      rule,
      check: rule.periodKind,
      role,
      overOutcome,
      overReason: rule.periodKind === 'DAY' ? 'DAILY_LIMIT_EXCEEDED' : 'MONTHLY_LIMIT_EXCEEDED',
      limit,
      within: spendTail(role, rule.periodKind, false, limit),
      above: spendTail(role, rule.periodKind, true, limit),
    };
  }
  // AMOUNT_LIMIT caps a single purchase whatever its periodKind says; a SPEND_LIMIT over PER_REQUEST
  // totals one request, which is the same thing.
  return {
    rule,
    check: 'PER_PURCHASE',
    role,
    overOutcome,
    overReason: block ? 'AMOUNT_EXCEEDS_MAX' : 'APPROVAL_THRESHOLD_EXCEEDED',
    limit,
    within: amountTail(role, false, limit),
    above: amountTail(role, true, limit),
  };
}

/** The plan of `rules` for purchases in `currency` (of minor-unit `exponent`). Shared: never change it. */
export function planFor(rules: readonly Rule[], currency: string, exponent: number): Plan {
  let list = plans.get(rules);
  if (list !== undefined) {
    for (const plan of list) if (plan.currency === currency && plan.ruleCount === rules.length) return plan;
  } else plans.set(rules, (list = []));
  const plan: Plan = {
    currency,
    ruleCount: rules.length,
    steps: rules.map((rule) => stepOf(rule, currency, exponent)),
    day: null,
    dayPeriod: null,
    month: null,
    monthPeriod: null,
  };
  // A handful of currencies per version at most; a list that changed length is stale.
  if (list.length >= 8 || list.some((p) => p.ruleCount !== rules.length)) list.length = 0;
  list.push(plan);
  return plan;
}

/** The window of `candidate`'s limit rules of `kind` over `period`, remembered by the plan until the period changes. */
export function planWindow(plan: Plan, candidate: PolicyCandidate, kind: WindowPeriodKind, period: PeriodWindows): ResolvedWindow {
  const day = kind === 'DAY';
  const known = day ? plan.day : plan.month;
  if (
    known !== null &&
    (day ? plan.dayPeriod : plan.monthPeriod) === period &&
    known.key.policyId === candidate.policyId &&
    known.key.policyVersionId === candidate.version.id
  ) {
    return known;
  }
  const window = windowIn(period, kind, candidate.policyId, candidate.version.id, plan.currency);
  if (day) {
    plan.day = window;
    plan.dayPeriod = period;
  } else {
    plan.month = window;
    plan.monthPeriod = period;
  }
  return window;
}

export interface MerchantIndex {
  /** The list it was built from, and its length then. */
  length: number;
  blockEntries: number;
  allowEntries: number;
  /** Entries by merchantKey, in list order, each with its message when it matches. */
  byKey: Map<string, Array<{ entry: MerchantEntry; message: string }>>;
}

// A version's merchant list is matched on every decision; indexing it once per list turns a scan of
// every entry into one lookup. Keyed by the list itself, so it lives as long as the version does.
const merchantIndexes = new WeakMap<readonly MerchantEntry[], MerchantIndex>();

export function merchantIndex(merchants: readonly MerchantEntry[]): MerchantIndex {
  let index = merchantIndexes.get(merchants);
  if (index === undefined || index.length !== merchants.length) {
    index = { length: merchants.length, blockEntries: 0, allowEntries: 0, byKey: new Map() };
    for (const entry of merchants) {
      if (entry.listType === 'BLOCK') index.blockEntries++;
      else index.allowEntries++;
      const message = `${entry.label} is on the merchant ${entry.listType === 'BLOCK' ? 'block' : 'allow'} list.`;
      const same = index.byKey.get(entry.merchantKey);
      if (same) same.push({ entry, message });
      else index.byKey.set(entry.merchantKey, [{ entry, message }]);
    }
    merchantIndexes.set(merchants, index);
  }
  return index;
}
