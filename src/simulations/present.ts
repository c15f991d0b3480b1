// SimulationResponse (docs/reference/contract.md §2.7): every key present, amounts as MinorAmount strings, and none of a
// real decision's identifying fields.
import type { SimulatedBudget, SimulatedDecision } from '../engine/types.ts';
import { currencyExponent } from '../engine/currency.ts';
import { uuidForName } from '../ids.ts';
import type { AgentDoc } from '../store/collections.ts';
import type { PurchaseInput } from '../purchases/input.ts';
import { ruleEvaluationWire } from '../purchases/present.ts';
import type { Static } from 'typebox';
import type { SimulatedBudget as SimulatedBudgetWire, SimulationResponse } from '../../schemas/simulations.ts';

const DISCLAIMER = 'A simulation: nothing was recorded, no budget was reserved, and a real submission may be decided differently if policies or budgets change.';

export function budgetWire(b: SimulatedBudget): Static<typeof SimulatedBudgetWire> {
  return {
    // A window is kept under its name (policy:currency:period); the contract's counter id is a UUID.
    budgetCounterId: b.budgetCounterId === null ? null : uuidForName(b.budgetCounterId),
    currency: b.currency,
    current: {
      committedMinor: b.current.committedMinor.toString(),
      heldMinor: b.current.heldMinor.toString(),
      openingBalanceMinor: b.current.openingBalanceMinor.toString(),
      reservedMinor: b.current.reservedMinor.toString(),
    },
    limits: b.limits.map((l) => ({
      effect: l.effect,
      limitMinor: l.limitMinor.toString(),
      policyRuleId: l.policyRuleId,
      remainingBeforeMinor: l.remainingBeforeMinor.toString(),
      remainingAfterMinor: l.remainingAfterMinor.toString(),
      wouldExceed: l.wouldExceed,
    })),
    periodEnd: b.periodEnd,
    periodStart: b.periodStart,
    periodKey: b.periodKey,
    periodKind: b.periodKind,
    policyId: b.policyId,
    policyVersionId: b.policyVersionId,
    policyName: b.policyName,
    simulated: { projectedMinor: b.simulated.projectedMinor.toString(), requestedMinor: b.simulated.requestedMinor.toString() },
    wouldExceed: b.wouldExceed,
  };
}

export function simulationResponse(d: SimulatedDecision, purchase: PurchaseInput, agent: AgentDoc | null, now: Date): Static<typeof SimulationResponse> {
  return {
    simulation: { isSimulation: true, mode: d.mode, disclaimer: DISCLAIMER, simulatedAt: now.toISOString(), engineVersion: d.engineVersion },
    purchase: {
      amountMinor: purchase.amountMinor.toString(),
      category: purchase.category,
      currency: purchase.currency,
      currencyExponent: currencyExponent(purchase.currency),
      merchant: purchase.merchant,
      merchantDomain: purchase.merchantDomain,
      merchantKey: purchase.merchantKey,
    },
    agent: agent ? { id: agent._id, name: agent.name, status: agent.status } : null,
    simulatedDecision: {
      outcome: d.outcome,
      wouldRequireApproval: d.outcome === 'REQUIRES_APPROVAL',
      approvalsRequired: d.approvalsRequired,
      reasonCodes: d.reasonCodes,
      explanation: d.explanation,
    },
    policiesConsidered: d.policiesConsidered,
    policiesExcludedByCurrencyScope: d.policiesExcludedByCurrencyScope,
    ruleEvaluations: d.ruleEvaluations.map(ruleEvaluationWire),
    budgets: d.budgets.map(budgetWire),
  };
}
