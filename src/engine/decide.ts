// The decision engine: a pure decider (docs/internals/design.md §1 and §6a). No I/O, no clock, no randomness:
// the same input always gives the same decision. Semantics: docs/internals/design.md §4.
import { selectPolicies, type ApplicablePolicy } from './applicability.ts';
import { crossingsFor, MAX_WINDOW_MINOR, refusalExhaustion, spentMinor, toSimulatedBudget, ZERO_WINDOW, type WindowTouch } from './budgets.ts';
import { currencyExponent, formatMajor } from './currency.ts';
import { amountPredicate, explain, explainRefusal, spendLead, spendPredicate, UNCOUNTABLE_TAIL, uncountablePredicate } from './explain.ts';
import { periodWindows, type PeriodWindows } from './periods.ts';
import { merchantIndex, planFor, planWindow, type Plan, type Step } from './plan.ts';
import {
  REASON_CODES,
  type BudgetCrossing,
  type BudgetLimit,
  type BudgetEffect,
  type Decision,
  type EngineInput,
  type EvaluationOutcome,
  type EvaluationRole,
  type Outcome,
  type PolicyCandidate,
  type PolicyConsidered,
  type PolicyExcludedByCurrency,
  type ReasonCode,
  type Rule,
  type RuleEvaluation,
  type SimulatedDecision,
  type WindowPeriodKind,
} from './types.ts';
import { ENGINE_VERSION } from './version.ts';

const RANK = new Map<ReasonCode, number>(REASON_CODES.map((code, index) => [code, index]));

/** Deduplicated, in docs/reference/contract.md §2.1 order. */
export function orderReasons(codes: Iterable<ReasonCode>): ReasonCode[] {
  const present = new Array<boolean>(REASON_CODES.length).fill(false);
  for (const code of codes) present[RANK.get(code)!] = true;
  const ordered: ReasonCode[] = [];
  for (let i = 0; i < present.length; i++) if (present[i]) ordered.push(REASON_CODES[i]);
  return ordered;
}

interface Highlight {
  evaluation: RuleEvaluation;
  predicate: string;
  sortKey: string;
}

/** The state of one evaluation pass. */
interface Run {
  input: EngineInput;
  amount: bigint;
  currency: string;
  exponent: number;
  amountText: string;
  subject: string;
  merchantName: string;
  evaluations: RuleEvaluation[];
  blocking: ReasonCode[];
  escalating: ReasonCode[];
  /** The largest approvalsRequired of the rules that escalated so far (1 when none did). */
  approvals: number;
  primaryBlock: Highlight | null;
  primaryEscalation: Highlight | null;
  /** The windows touched, in the order first touched. */
  touches: WindowTouch[];
  /**
   * The DAY and MONTH windows of the policy being evaluated. Candidates come sorted by policyId, and a
   * window belongs to the policy (not the version), so two versions of one policy share these.
   */
  policyId: string | null;
  dayTouch: WindowTouch | null;
  monthTouch: WindowTouch | null;
  /** The DAY and MONTH periods of this evaluation, resolved on first use. */
  day: PeriodWindows | null;
  month: PeriodWindows | null;
  /** The merchant-list messages that name the purchase's merchant, built on first use. */
  notOnBlockList: string | null;
  notOnAllowList: string | null;
}

const money = (run: Run, amount: bigint): string => `${formatMajor(amount, run.exponent)} ${run.currency}`;

/** A RuleEvaluation of `candidate`, built in one allocation (this runs tens of times per decision). */
function evaluationOf(
  candidate: PolicyCandidate,
  rule: string,
  outcome: EvaluationOutcome,
  role: EvaluationRole,
  currency: string | null,
  limitMinor: bigint | null,
  observedMinor: bigint | null,
  headroomMinor: bigint | null,
  message: string,
  reasonCode: ReasonCode | null,
  policyMerchantEntryId: string | null,
  policyRuleId: string | null,
): RuleEvaluation {
  return {
    rule,
    outcome,
    role,
    currency,
    headroomMinor,
    limitMinor,
    observedMinor,
    message,
    reasonCode,
    policyMerchantEntryId,
    policyRuleId,
    policyVersionId: candidate.version.id,
    policyId: candidate.policyId,
    policyName: candidate.policyName,
  };
}

/** Records a PASS or NOT_APPLICABLE evaluation. */
const pass = (run: Run, evaluation: RuleEvaluation): void => void run.evaluations.push(evaluation);

/**
 * Records a BLOCK or ESCALATE evaluation; `predicate` tells what it says about the purchase, if the
 * explanation names it; `approvals` is the escalating rule's approvalsRequired.
 */
function fail(run: Run, candidate: PolicyCandidate, evaluation: RuleEvaluation, predicate: () => string, approvals = 1): void {
  run.evaluations.push(evaluation);
  const reason = evaluation.reasonCode!;
  const block = evaluation.outcome === 'BLOCK';
  (block ? run.blocking : run.escalating).push(reason);
  if (!block && approvals > run.approvals) run.approvals = approvals;
  // The evaluation the explanation names: the first by reason order, then policy name, policy id and
  // rule/entry id, so that the sentence does not depend on the order the inputs arrive in.
  const sortKey = `${String(RANK.get(reason)).padStart(2, '0')}\u0000${candidate.policyName}\u0000${candidate.policyId}\u0000${evaluation.policyRuleId ?? evaluation.policyMerchantEntryId}`;
  const current = block ? run.primaryBlock : run.primaryEscalation;
  if (current === null || sortKey < current.sortKey) {
    const chosen: Highlight = { evaluation, predicate: predicate(), sortKey };
    if (block) run.primaryBlock = chosen;
    else run.primaryEscalation = chosen;
  }
}

const merchantEvaluation = (candidate: PolicyCandidate, outcome: EvaluationOutcome, role: EvaluationRole, message: string, reasonCode: ReasonCode | null, entryId: string | null) =>
  evaluationOf(candidate, 'MERCHANT_LIST', outcome, role, null, null, null, null, message, reasonCode, entryId, null);

function checkMerchants(run: Run, candidate: PolicyCandidate): void {
  const merchants = candidate.version.merchants;
  if (merchants.length === 0) return;
  const { blockEntries, allowEntries, byKey } = merchantIndex(merchants);
  let blockHit = false;
  let allowHit = false;
  const matches = byKey.get(run.input.purchase.merchantKey);
  if (matches !== undefined) {
    for (const { entry, message } of matches) {
      if (entry.listType === 'BLOCK') {
        blockHit = true;
        fail(
          run,
          candidate,
          merchantEvaluation(candidate, 'BLOCK', 'MERCHANT_BLOCK_LIST', message, 'MERCHANT_BLOCKED', entry.id),
          () => `${run.merchantName} is on the merchant block list`,
        );
      } else {
        allowHit = true;
        pass(run, merchantEvaluation(candidate, 'PASS', 'MERCHANT_ALLOW_LIST', message, null, entry.id));
      }
    }
  }
  if (blockEntries > 0 && !blockHit) {
    const message = (run.notOnBlockList ??= `${run.merchantName} is not on the merchant block list.`);
    pass(run, merchantEvaluation(candidate, 'PASS', 'MERCHANT_BLOCK_LIST', message, null, null));
  }
  if (allowEntries > 0 && !allowHit) {
    const message = (run.notOnAllowList ??= `${run.merchantName} is not on the merchant allow list.`);
    fail(
      run,
      candidate,
      merchantEvaluation(candidate, 'BLOCK', 'MERCHANT_ALLOW_LIST', message, 'MERCHANT_NOT_ALLOW_LISTED', null),
      () => `${run.merchantName} is not on the merchant allow list`,
    );
  }
}

function checkPerPurchase(run: Run, candidate: PolicyCandidate, step: Step): void {
  const rule = step.rule;
  const limitMinor = rule.amountMinor;
  const over = run.amount > limitMinor;
  const evaluation = evaluationOf(
    candidate,
    rule.ruleType,
    over ? step.overOutcome : 'PASS',
    step.role,
    run.currency,
    limitMinor,
    run.amount,
    limitMinor - run.amount,
    run.amountText + (over ? step.above : step.within),
    over ? step.overReason : null,
    null,
    rule.id,
  );
  if (over) fail(run, candidate, evaluation, () => `${run.subject} ${amountPredicate(step.role, true, step.limit)}`, rule.approvalsRequired);
  else pass(run, evaluation);
}

/** How a limit rule stands on a window: built once, read by the rule's evaluation, the crossings and the simulated budget. */
const limitOf = (rule: Rule, projected: bigint): BudgetLimit => ({
  effect: rule.effect,
  limitMinor: rule.amountMinor,
  policyRuleId: rule.id,
  remainingAfterMinor: rule.amountMinor - projected,
  wouldExceed: projected > rule.amountMinor,
});

/** Touches the window of `kind` of this candidate's policy, with the first limit rule that reads it. */
function touchOf(run: Run, candidate: PolicyCandidate, plan: Plan, kind: WindowPeriodKind, rule: Rule): WindowTouch {
  const input = run.input;
  const period =
    kind === 'DAY'
      ? (run.day ??= periodWindows(kind, input.periodInstant ?? input.now, input.timeZone))
      : (run.month ??= periodWindows(kind, input.periodInstant ?? input.now, input.timeZone));
  const window = planWindow(plan, candidate, kind, period);
  const state = input.windows.get(window.id) ?? ZERO_WINDOW;
  const spent = spentMinor(state);
  const used = spent + state.heldMinor;
  const projected = used + run.amount;
  const projectedText = money(run, projected);
  const touch: WindowTouch = {
    id: window.id,
    key: window.key,
    state,
    budgetCounterId: state.budgetCounterId,
    spent,
    used,
    projected,
    projectedText,
    lead: spendLead(kind) + projectedText,
    policyName: candidate.policyName,
    limits: [limitOf(rule, projected)],
  };
  run.touches.push(touch);
  if (kind === 'DAY') run.dayTouch = touch;
  else run.monthTouch = touch;
  return touch;
}

function checkWindow(run: Run, candidate: PolicyCandidate, plan: Plan, step: Step, kind: WindowPeriodKind): void {
  const rule = step.rule;
  let touch = kind === 'DAY' ? run.dayTouch : run.monthTouch;
  let limit: BudgetLimit;
  if (touch === null) {
    touch = touchOf(run, candidate, plan, kind, rule);
    limit = touch.limits[0];
  } else {
    limit = limitOf(rule, touch.projected);
    touch.limits.push(limit);
  }
  const over = limit.wouldExceed;
  const uncountable = over && touch.projected > MAX_WINDOW_MINOR;
  const evaluation = evaluationOf(
    candidate,
    rule.ruleType,
    uncountable ? 'BLOCK' : over ? step.overOutcome : 'PASS',
    step.role,
    run.currency,
    rule.amountMinor,
    touch.projected,
    limit.remainingAfterMinor,
    touch.lead + (uncountable ? UNCOUNTABLE_TAIL : over ? step.above : step.within),
    over ? step.overReason : null,
    null,
    rule.id,
  );
  if (!over) return pass(run, evaluation);
  const projectedText = touch.projectedText;
  if (uncountable) return fail(run, candidate, evaluation, () => `${run.subject} ${uncountablePredicate(kind, projectedText)}`);
  fail(run, candidate, evaluation, () => `${run.subject} ${spendPredicate(step.role, kind, true, projectedText, step.limit)}`, rule.approvalsRequired);
}

function checkPolicy(run: Run, candidate: PolicyCandidate): void {
  checkMerchants(run, candidate);
  if (candidate.policyId !== run.policyId) {
    run.policyId = candidate.policyId;
    run.dayTouch = null;
    run.monthTouch = null;
  }
  const plan = planFor(candidate.version.rules, run.currency, run.exponent);
  for (const step of plan.steps) {
    switch (step.check) {
      case 'PER_PURCHASE':
        checkPerPurchase(run, candidate, step);
        break;
      case 'NOT_APPLICABLE':
        pass(run, evaluationOf(candidate, step.rule.ruleType, 'NOT_APPLICABLE', step.role, step.rule.currency, step.rule.amountMinor, null, null, step.within, null, null, step.rule.id));
        break;
      default:
        checkWindow(run, candidate, plan, step, step.check);
    }
  }
}

function considered({ candidate, reason }: ApplicablePolicy): PolicyConsidered {
  const v = candidate.version;
  return {
    policyId: candidate.policyId,
    policyName: candidate.policyName,
    policyStatus: candidate.policyStatus,
    policyVersionId: v.id,
    versionNumber: v.versionNumber,
    versionStatus: v.status,
    scopeType: candidate.scopeType,
    applicabilityReason: reason,
    currencies: [...v.currencies],
    currencyScope: v.currencyScope,
  };
}

function excludedByCurrency({ candidate }: ApplicablePolicy, requestCurrency: string): PolicyExcludedByCurrency {
  const v = candidate.version;
  return {
    policyId: candidate.policyId,
    policyName: candidate.policyName,
    policyVersionId: v.id,
    versionNumber: v.versionNumber,
    currencies: [...v.currencies],
    currencyScope: v.currencyScope,
    requestCurrency,
  };
}

/** Evaluates a purchase against the policies (docs/internals/design.md §4). Never reads a clock. */
export function decide(input: EngineInput): Decision {
  return evaluate(input).decision;
}

/**
 * decide(), and what the purchase would do to each budget window it reads: for simulations and
 * re-evaluations. A submission does not read them, and they are a tenth of a decision's work.
 */
export function decideWithBudgets(input: EngineInput): SimulatedDecision {
  const { decision, touches } = evaluate(input);
  return { ...decision, budgets: touches.map((touch) => toSimulatedBudget(touch, input.purchase.amountMinor)) };
}

function evaluate(input: EngineInput): { decision: Decision; touches: WindowTouch[] } {
  const { purchase } = input;
  const selection = selectPolicies(input);
  const policiesExcludedByCurrencyScope = selection.excluded.map((policy) => excludedByCurrency(policy, purchase.currency));

  if (selection.rejection !== null) {
    const decision: Decision = {
      engineVersion: ENGINE_VERSION,
      mode: input.mode,
      evaluatedAt: input.now,
      policiesExcludedByCurrencyScope,
      outcome: 'REJECTED',
      reasonCodes: [selection.rejection],
      explanation: explainRefusal(selection.rejection, {
        agentStatus: input.agent?.status ?? null,
        currency: purchase.currency,
        simulated: input.mode !== 'CURRENT_POLICIES',
      }),
      escalationReasonCodes: [],
      approvalsRequired: 0,
      policiesConsidered: [],
      ruleEvaluations: [],
      effects: { budget: [], crossings: [] },
    };
    return { decision, touches: [] };
  }

  const exponent = currencyExponent(purchase.currency);
  const amountText = `${formatMajor(purchase.amountMinor, exponent)} ${purchase.currency}`;
  const merchantName = purchase.merchant || purchase.merchantKey;
  const run: Run = {
    input,
    amount: purchase.amountMinor,
    currency: purchase.currency,
    exponent,
    amountText,
    subject: `${amountText} at ${merchantName}`,
    merchantName,
    evaluations: [],
    blocking: [],
    escalating: [],
    approvals: 1,
    primaryBlock: null,
    primaryEscalation: null,
    touches: [],
    policyId: null,
    dayTouch: null,
    monthTouch: null,
    day: null,
    month: null,
    notOnBlockList: null,
    notOnAllowList: null,
  };
  for (const { candidate } of selection.covering) checkPolicy(run, candidate);

  const outcome: Outcome = run.blocking.length > 0 ? 'REJECTED' : run.escalating.length > 0 ? 'REQUIRES_APPROVAL' : 'APPROVED';
  const escalationReasonCodes = outcome === 'REQUIRES_APPROVAL' ? orderReasons(run.escalating) : [];
  const reasonCodes: ReasonCode[] =
    outcome === 'REJECTED' ? orderReasons(run.blocking) : outcome === 'REQUIRES_APPROVAL' ? escalationReasonCodes : ['WITHIN_POLICY'];
  const primary = outcome === 'REJECTED' ? run.primaryBlock : outcome === 'REQUIRES_APPROVAL' ? run.primaryEscalation : null;
  const explanation = explain({
    outcome,
    subject: run.subject,
    primary: primary && { ...primary.evaluation, predicate: primary.predicate },
    otherCount: (outcome === 'REJECTED' ? run.blocking.length : run.escalating.length) - 1,
    policyNames: selection.covering.map(({ candidate }) => candidate.policyName),
  });

  const budget: BudgetEffect[] = [];
  const crossings: BudgetCrossing[] = [];
  for (const touch of run.touches) {
    if (outcome === 'REJECTED') {
      refusalExhaustion(touch, touch.state, crossings);
      continue;
    }
    budget.push({
      operation: outcome === 'APPROVED' ? 'COMMIT' : 'HOLD',
      windowId: touch.id,
      window: touch.key,
      budgetCounterId: touch.budgetCounterId,
      amountMinor: run.amount,
    });
    if (outcome === 'APPROVED') crossingsFor(touch, touch.spent, touch.spent + run.amount, crossings);
  }

  const decision: Decision = {
    engineVersion: ENGINE_VERSION,
    mode: input.mode,
    evaluatedAt: input.now,
    policiesExcludedByCurrencyScope,
    outcome,
    reasonCodes,
    explanation,
    escalationReasonCodes,
    approvalsRequired: outcome === 'REQUIRES_APPROVAL' ? run.approvals : 0,
    policiesConsidered: selection.covering.map(considered),
    ruleEvaluations: run.evaluations,
    effects: { budget, crossings },
  };
  return { decision, touches: run.touches };
}
