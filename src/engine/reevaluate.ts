// A person's answer to a pending purchase re-evaluates it against the policies then in force
// (docs/internals/design.md §4 item 7; decision kind APPROVAL_REEVALUATION, docs/reference/contract.md §2.5).
//
// What "the versions in force changed so that the purchase would no longer be approved" means here:
// the person's approval covers the escalations of the versions that were in force at escalation
// (escalatedVersionIds). Evaluated now, with the purchase's own hold taken out of the windows:
//   - anything blocks                                  -> REJECTED, POLICY_CHANGED_SINCE_ESCALATION + the blocking reasons
//   - nothing blocks, nothing escalates                -> APPROVED (whatever changed, it would be approved outright)
//   - every rule that escalates belongs to a version
//     in escalatedVersionIds                           -> APPROVED (the person approved exactly those)
//   - some rule escalates in a version that was not in
//     force at escalation (a new policy or version)    -> REJECTED, POLICY_CHANGED_SINCE_ESCALATION
// A version that changed or appeared but passes, or one that left force, does not matter. A version that
// was in force and now escalates for another reason as well (its budget filled meanwhile) is still the
// version the person approved, so the approval stands; a BLOCK limit that filled meanwhile blocks.
import { formatMinor } from './currency.ts';
import { decideWithBudgets, orderReasons } from './decide.ts';
import type { BudgetCrossing, BudgetEffect, EngineInput, PolicyCandidate, ReasonCode, SimulatedDecision, WindowState } from './types.ts';
import { crossingsFor, spentMinor, ZERO_WINDOW, type LimitedWindow } from './budgets.ts';
import { isWindowRule, periodWindows, ruleAppliesTo, windowIn, windowSeries } from './periods.ts';

export interface ReevaluationRequest {
  answer: 'APPROVE' | 'REJECT';
  /** policyVersionIds the purchase was evaluated against when it was escalated (policiesConsidered then). */
  escalatedVersionIds: readonly string[];
  /** windowIds the purchase's HOLD effects went to. Their heldMinor in input.windows still include the hold. */
  heldWindowIds: readonly string[];
  /** The escalation's reasons (approval.escalationReasonCodes); reported when a person rejects a purchase that no longer needs approval. */
  escalationReasonCodes: readonly ReasonCode[];
  /**
   * Policies in force whose windows hold the purchase but that no longer govern its agent (a change of
   * scope): their limits still read those windows for other agents, so an approval spending there can
   * cross them.
   */
  heldPolicies?: readonly PolicyCandidate[];
}

export interface Reevaluation extends Omit<SimulatedDecision, 'outcome'> {
  /** A person's answer always settles the purchase. */
  outcome: 'APPROVED' | 'REJECTED';
  kind: 'APPROVAL_REEVALUATION';
  answer: 'APPROVE' | 'REJECT';
  /** Whether the set of versions in force differs from escalatedVersionIds. */
  versionsChanged: boolean;
  /** The plain evaluation now, own hold excluded, before the person's answer is applied. */
  evaluation: SimulatedDecision;
}

/**
 * Input must describe the purchase as submitted, the policies in force now, and the windows as stored.
 * Pass `periodInstant` = the time the purchase was held, so that it is evaluated in the windows holding it.
 */
export function reevaluate(input: EngineInput, request: ReevaluationRequest): Reevaluation {
  const amount = input.purchase.amountMinor;
  const held = new Set(request.heldWindowIds);
  const windows = new Map<string, WindowState>(input.windows);
  for (const id of held) {
    const state = windows.get(id);
    if (state === undefined) continue;
    const heldMinor = state.heldMinor - amount;
    windows.set(id, { ...state, heldMinor: heldMinor < 0n ? 0n : heldMinor });
  }
  const evaluation = decideWithBudgets({ ...input, windows });

  const escalated = new Set(request.escalatedVersionIds);
  const now = evaluation.policiesConsidered.map((policy) => policy.policyVersionId);
  const versionsChanged = now.length !== escalated.size || now.some((id) => !escalated.has(id));
  const subject = `${formatMinor(amount, input.purchase.currency)} at ${input.purchase.merchant || input.purchase.merchantKey}`;

  let outcome: 'APPROVED' | 'REJECTED';
  let reasonCodes: ReasonCode[];
  let explanation: string;
  if (request.answer === 'REJECT') {
    outcome = 'REJECTED';
    reasonCodes =
      evaluation.outcome === 'APPROVED' ? orderReasons(request.escalationReasonCodes) : evaluation.reasonCodes;
    explanation = `Rejected: a person declined ${subject}.`;
  } else if (evaluation.outcome === 'REJECTED') {
    outcome = 'REJECTED';
    reasonCodes = orderReasons(['POLICY_CHANGED_SINCE_ESCALATION', ...evaluation.reasonCodes]);
    explanation = `Rejected although a person approved it, because a block applies now: ${evaluation.explanation.replace(/^Rejected: /, '')}`;
  } else if (evaluation.outcome === 'APPROVED') {
    outcome = 'APPROVED';
    reasonCodes = evaluation.reasonCodes;
    explanation = `Approved: a person approved ${subject}, and it is within the rules in force.`;
  } else {
    const unapproved = new Set<string>();
    for (const rule of evaluation.ruleEvaluations) {
      if (rule.outcome === 'ESCALATE' && !escalated.has(rule.policyVersionId!)) unapproved.add(rule.policyName!);
    }
    if (unapproved.size === 0) {
      outcome = 'APPROVED';
      reasonCodes = evaluation.escalationReasonCodes;
      explanation = `Approved: a person approved ${subject}.`;
    } else {
      outcome = 'REJECTED';
      reasonCodes = ['POLICY_CHANGED_SINCE_ESCALATION'];
      const names = [...unapproved].sort().join(', ');
      explanation = `Rejected: the policies changed after a person was asked, and ${names} now ${unapproved.size === 1 ? 'asks' : 'ask'} for an approval the person did not give for ${subject}.`;
    }
  }

  const keys = new Map(evaluation.budgets.map((budget) => [budget.windowId, budget]));
  // A held window whose policy, currency and period kind now count the purchase in another period: the
  // organisation changed zone since the hold, and the request falls in another day or month there. The
  // amount is committed where it counts now and released where it was held, so that it is spent once.
  const movedSeries = new Set(evaluation.budgets.filter((b) => !held.has(b.windowId)).map((b) => windowSeries(b.windowId)));
  const budget: BudgetEffect[] = [];
  for (const id of held) {
    const current = keys.get(id);
    budget.push({
      // Approval turns the hold into spend even in a window the policies no longer read: the money is spent.
      operation: outcome === 'APPROVED' && !movedSeries.has(windowSeries(id)) ? 'CONVERT_HOLD' : 'RELEASE_HOLD',
      windowId: id,
      window: current
        ? {
            policyId: current.policyId,
            policyVersionId: current.policyVersionId,
            currency: current.currency,
            periodKind: current.periodKind,
            periodKey: current.periodKey,
            periodStart: current.periodStart,
            periodEnd: current.periodEnd,
          }
        : null,
      budgetCounterId: input.windows.get(id)?.budgetCounterId ?? null,
      amountMinor: amount,
    });
  }
  const crossings: BudgetCrossing[] = [];
  if (outcome === 'APPROVED') {
    // Windows the purchase counts toward now but that never held it (a policy that came into force since).
    for (const effect of evaluation.effects.budget) {
      if (!held.has(effect.windowId)) budget.push({ ...effect, operation: 'COMMIT' });
    }
    // The amount becomes spending: the limits that read each window judge the crossings now.
    const elsewhere = limitedElsewhere(input, request.heldPolicies ?? [], held);
    for (const effect of budget) {
      const current = keys.get(effect.windowId);
      const state = input.windows.get(effect.windowId) ?? ZERO_WINDOW;
      const before = spentMinor(state);
      if (current && effect.window) {
        crossings.push(...crossingsFor({ id: effect.windowId, key: effect.window, limits: current.limits, budgetCounterId: state.budgetCounterId }, before, before + amount));
      } else if (effect.operation === 'CONVERT_HOLD') {
        const other = elsewhere.get(effect.windowId);
        if (other) crossingsFor({ ...other, budgetCounterId: state.budgetCounterId }, before, before + amount, crossings);
      }
    }
  }

  return {
    ...evaluation,
    kind: 'APPROVAL_REEVALUATION',
    answer: request.answer,
    versionsChanged,
    evaluation,
    outcome,
    reasonCodes,
    explanation,
    escalationReasonCodes: [],
    approvalsRequired: 0,
    effects: { budget, crossings },
  };
}

/** The windows among `ids` that `policies` (in force, not governing this agent) limit, with those limits. */
function limitedElsewhere(input: EngineInput, policies: readonly PolicyCandidate[], ids: ReadonlySet<string>): Map<string, Omit<LimitedWindow, 'budgetCounterId'>> {
  const found = new Map<string, Omit<LimitedWindow, 'budgetCounterId'>>();
  const currency = input.purchase.currency;
  for (const candidate of policies) {
    if (!candidate.version.currencies.includes(currency)) continue;
    for (const rule of candidate.version.rules) {
      if (!isWindowRule(rule) || !ruleAppliesTo(rule, currency)) continue;
      const period = periodWindows(rule.periodKind, input.periodInstant ?? input.now, input.timeZone);
      const window = windowIn(period, rule.periodKind, candidate.policyId, candidate.version.id, currency);
      if (!ids.has(window.id)) continue;
      const entry = found.get(window.id) ?? { id: window.id, key: window.key, limits: [] };
      entry.limits.push({ effect: rule.effect, limitMinor: rule.amountMinor, policyRuleId: rule.id, remainingAfterMinor: 0n, wouldExceed: false });
      found.set(window.id, entry);
    }
  }
  return found;
}
