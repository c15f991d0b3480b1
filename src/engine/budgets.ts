// Budget-window arithmetic shared by decide() and reevaluate(). Exact integer maths only.
import type { BudgetCrossing, BudgetLimit, SimulatedBudget, WindowKey, WindowState } from './types.ts';

/**
 * The most a budget window counts (spent plus held): 2^53-1 minor units, what storage holds as an exact
 * integer (src/money.ts). A purchase that would take a window past it is refused, even under a limit
 * that would ask a person: holds pile up past such a limit while people decide.
 */
export const MAX_WINDOW_MINOR = 9_007_199_254_740_991n;

export const ZERO_WINDOW: WindowState = Object.freeze({
  budgetCounterId: null,
  committedMinor: 0n,
  heldMinor: 0n,
  openingBalanceMinor: 0n,
});

/** One window being touched by the purchase, with the limit rules that read it. */
export interface WindowTouch {
  id: string;
  key: WindowKey;
  state: WindowState;
  budgetCounterId: string | null;
  /** spentMinor(state), computed once. */
  spent: bigint;
  /** What counts against a limit before this purchase: spent + held. */
  used: bigint;
  /** used + the purchase amount, and its text, computed once. */
  projected: bigint;
  projectedText: string;
  /** 'This purchase would bring spending this day to 10500.00 EUR': the start of each limit's message. */
  lead: string;
  policyName: string;
  limits: BudgetLimit[];
}

export function toSimulatedBudget(touch: WindowTouch, amount: bigint): SimulatedBudget {
  const { state, key } = touch;
  return {
    windowId: touch.id,
    budgetCounterId: state.budgetCounterId,
    currency: key.currency,
    current: {
      committedMinor: state.committedMinor,
      heldMinor: state.heldMinor,
      openingBalanceMinor: state.openingBalanceMinor,
      reservedMinor: state.heldMinor + state.committedMinor,
    },
    limits: touch.limits.map((limit) => ({ ...limit, remainingBeforeMinor: limit.limitMinor - touch.used })),
    periodStart: key.periodStart,
    periodEnd: key.periodEnd,
    periodKey: key.periodKey,
    periodKind: key.periodKind,
    policyId: key.policyId,
    policyVersionId: key.policyVersionId,
    policyName: touch.policyName,
    simulated: { requestedMinor: amount, projectedMinor: touch.projected },
    wouldExceed: touch.limits.some((limit) => limit.wouldExceed),
  };
}

/** Spending under a limit (docs/reference/contract.md §6.2): reconciled spend and approved purchases; holds are not spending. */
export const spentMinor = (state: WindowState): bigint => state.openingBalanceMinor + state.committedMinor;

/** A window with the limit rules that read it: all budget events need. */
export type LimitedWindow = Pick<WindowTouch, 'id' | 'key' | 'limits'> & { budgetCounterId: string | null };

const crossing = (w: LimitedWindow, limit: BudgetLimit, before: bigint, after: bigint, kind: BudgetCrossing['kind'], cause: BudgetCrossing['cause']): BudgetCrossing => ({
  kind,
  cause,
  windowId: w.id,
  window: w.key,
  budgetCounterId: w.budgetCounterId,
  policyRuleId: limit.policyRuleId,
  effect: limit.effect,
  limitMinor: limit.limitMinor,
  usedBeforeMinor: before,
  usedAfterMinor: after,
});

/**
 * Limits that spending crosses when it goes from `before` to `after` (docs/approve/approvals.md):
 * THRESHOLD_REACHED when it passes 80% (before <= 80% < after), EXHAUSTED when it reaches the limit
 * (before < limit <= after). Judged against each limit in force, on every change, so every real
 * crossing is reported, and a hold (not spending) never is. Appended to `crossings`, which is returned.
 */
export function crossingsFor(w: LimitedWindow, before: bigint, after: bigint, crossings: BudgetCrossing[] = []): BudgetCrossing[] {
  if (after <= before) return crossings;
  const before100 = before * 100n;
  const after100 = after * 100n;
  for (const limit of w.limits) {
    const eighty = limit.limitMinor * 80n;
    if (before100 <= eighty && after100 > eighty) crossings.push(crossing(w, limit, before, after, 'THRESHOLD_REACHED', 'SPENDING'));
    if (before < limit.limitMinor && after >= limit.limitMinor) crossings.push(crossing(w, limit, before, after, 'EXHAUSTED', 'SPENDING'));
  }
  return crossings;
}

/**
 * A BLOCK limit refusing a purchase once spending under it has passed 80%: the limit is used up and
 * purchases under it are being refused (docs/reference/contract.md §6.2 budget.exhausted). The command reports it once
 * per window and limit rule. A purchase refused only for being large, in a window still below 80%,
 * reports nothing. Appended to `crossings`, which is returned.
 */
export function refusalExhaustion(w: LimitedWindow, state: WindowState, crossings: BudgetCrossing[] = []): BudgetCrossing[] {
  const spent = spentMinor(state);
  for (const limit of w.limits) {
    if (limit.effect === 'BLOCK' && limit.wouldExceed && spent * 100n > limit.limitMinor * 80n) {
      crossings.push(crossing(w, limit, spent, spent, 'EXHAUSTED', 'PURCHASE_REFUSED'));
    }
  }
  return crossings;
}
