// Budget-window arithmetic shared by decide() and reevaluate(). Exact integer maths only.
import type { BudgetCrossing, BudgetLimit, SimulatedBudget, WindowKey, WindowState } from './types.ts';

export const ZERO_WINDOW: WindowState = Object.freeze({
  budgetCounterId: null,
  committedMinor: 0n,
  heldMinor: 0n,
  openingBalanceMinor: 0n,
});

/** What counts against a limit before this purchase: opening balance + committed + held. */
export const usedMinor = (state: WindowState): bigint => state.openingBalanceMinor + state.committedMinor + state.heldMinor;

/** One window being touched by the purchase, with the limit rules that read it. */
export interface WindowTouch {
  id: string;
  key: WindowKey;
  state: WindowState;
  /** usedMinor(state), computed once. */
  used: bigint;
  /** used + the purchase amount, and its text, computed once. */
  projected: bigint;
  projectedText?: string;
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
    limits: touch.limits,
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

/**
 * Limits this increase crosses: THRESHOLD_REACHED when usage first passes 80% (before <= 80% < after),
 * EXHAUSTED when it reaches 100% (before < limit <= after). Usage includes the opening balance, because
 * that is spend the limit is judged against too.
 */
export function crossingsFor(touch: WindowTouch, before: bigint, after: bigint, into: BudgetCrossing[] = []): BudgetCrossing[] {
  if (after <= before) return into;
  const before100 = before * 100n;
  const after100 = after * 100n;
  for (const limit of touch.limits) {
    const eighty = limit.limitMinor * 80n;
    const threshold = before100 <= eighty && after100 > eighty;
    const exhausted = before < limit.limitMinor && after >= limit.limitMinor;
    if (!threshold && !exhausted) continue;
    const base = {
      windowId: touch.id,
      window: touch.key,
      budgetCounterId: touch.state.budgetCounterId,
      policyRuleId: limit.policyRuleId,
      effect: limit.effect,
      limitMinor: limit.limitMinor,
      usedBeforeMinor: before,
      usedAfterMinor: after,
    };
    if (threshold) into.push({ kind: 'THRESHOLD_REACHED', ...base });
    if (exhausted) into.push({ kind: 'EXHAUSTED', ...base });
  }
  return into;
}
