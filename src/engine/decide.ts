// The decision engine: a pure decider (DESIGN.md 1 and 6a). No I/O, no clock, no randomness:
// the same input always gives the same decision. Semantics: DESIGN.md section 4.
import { selectPolicies, type ApplicablePolicy } from './applicability.ts';
import { crossingsFor, refusalExhaustion, spentMinor, toSimulatedBudget, usedMinor, ZERO_WINDOW, type WindowTouch } from './budgets.ts';
import { currencyExponent, formatMajor } from './currency.ts';
import { amountPredicate, explain, explainRefusal, spendPredicate } from './explain.ts';
import { isWindowRule, periodFor, ruleAppliesTo, windowId } from './periods.ts';
import {
  REASON_CODES,
  type BudgetCrossing,
  type BudgetEffect,
  type Decision,
  type EngineInput,
  type EvaluationOutcome,
  type EvaluationRole,
  type Outcome,
  type PolicyCandidate,
  type PolicyConsidered,
  type PolicyExcludedByCurrency,
  type Period,
  type ReasonCode,
  type Rule,
  type RuleEvaluation,
  type WindowPeriodKind,
} from './types.ts';
import { ENGINE_VERSION } from './version.ts';

const RANK = new Map<ReasonCode, number>(REASON_CODES.map((code, index) => [code, index]));

/** Deduplicated, in SPEC.md 2.1 order. */
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
  primaryBlock: Highlight | null;
  primaryEscalation: Highlight | null;
  touches: Map<string, WindowTouch>;
  periods: Partial<Record<WindowPeriodKind, Period>>;
}

// Limits repeat from request to request: their formatted text is cached per currency (bounded).
const formatted = new Map<string, Map<bigint, string>>();
function money(run: Run, amount: bigint): string {
  let cache = formatted.get(run.currency);
  if (cache === undefined) formatted.set(run.currency, (cache = new Map()));
  let text = cache.get(amount);
  if (text === undefined) {
    if (cache.size >= 4_096) cache.clear();
    text = `${formatMajor(amount, run.exponent)} ${run.currency}`;
    cache.set(amount, text);
  }
  return text;
}

function record(
  run: Run,
  candidate: PolicyCandidate,
  fields: {
    rule: string;
    outcome: EvaluationOutcome;
    role: EvaluationRole;
    currency: string | null;
    limitMinor: bigint | null;
    observedMinor: bigint | null;
    message: string;
    reasonCode: ReasonCode | null;
    policyMerchantEntryId: string | null;
    policyRuleId: string | null;
  },
  predicate?: () => string,
): void {
  const evaluation: RuleEvaluation = {
    rule: fields.rule,
    outcome: fields.outcome,
    role: fields.role,
    currency: fields.currency,
    headroomMinor: fields.limitMinor !== null && fields.observedMinor !== null ? fields.limitMinor - fields.observedMinor : null,
    limitMinor: fields.limitMinor,
    observedMinor: fields.observedMinor,
    message: fields.message,
    reasonCode: fields.reasonCode,
    policyMerchantEntryId: fields.policyMerchantEntryId,
    policyRuleId: fields.policyRuleId,
    policyVersionId: candidate.version.id,
    policyId: candidate.policyId,
    policyName: candidate.policyName,
  };
  run.evaluations.push(evaluation);
  if (fields.outcome !== 'BLOCK' && fields.outcome !== 'ESCALATE') return;
  const reason = fields.reasonCode!;
  const block = fields.outcome === 'BLOCK';
  (block ? run.blocking : run.escalating).push(reason);
  // The evaluation the explanation names: the first by reason order, then policy name, policy id and
  // rule/entry id, so that the sentence does not depend on the order the inputs arrive in.
  const sortKey = `${String(RANK.get(reason)).padStart(2, '0')}\u0000${candidate.policyName}\u0000${candidate.policyId}\u0000${fields.policyRuleId ?? fields.policyMerchantEntryId}`;
  const current = block ? run.primaryBlock : run.primaryEscalation;
  if (current === null || sortKey < current.sortKey) {
    const chosen: Highlight = { evaluation, predicate: predicate!(), sortKey };
    if (block) run.primaryBlock = chosen;
    else run.primaryEscalation = chosen;
  }
}

function checkMerchants(run: Run, candidate: PolicyCandidate): void {
  const key = run.input.purchase.merchantKey;
  let blockEntries = 0;
  let blockHit = false;
  let allowEntries = 0;
  let allowHit = false;
  const base = { rule: 'MERCHANT_LIST', currency: null, limitMinor: null, observedMinor: null, policyRuleId: null };
  for (const entry of candidate.version.merchants) {
    const hit = entry.merchantKey === key;
    if (entry.listType === 'BLOCK') {
      blockEntries++;
      if (!hit) continue;
      blockHit = true;
      record(
        run,
        candidate,
        {
          ...base,
          outcome: 'BLOCK',
          role: 'MERCHANT_BLOCK_LIST',
          message: `${entry.label} is on the merchant block list.`,
          reasonCode: 'MERCHANT_BLOCKED',
          policyMerchantEntryId: entry.id,
        },
        () => `${run.merchantName} is on the merchant block list`,
      );
    } else {
      allowEntries++;
      if (!hit) continue;
      allowHit = true;
      record(run, candidate, {
        ...base,
        outcome: 'PASS',
        role: 'MERCHANT_ALLOW_LIST',
        message: `${entry.label} is on the merchant allow list.`,
        reasonCode: null,
        policyMerchantEntryId: entry.id,
      });
    }
  }
  if (blockEntries > 0 && !blockHit) {
    record(run, candidate, {
      ...base,
      outcome: 'PASS',
      role: 'MERCHANT_BLOCK_LIST',
      message: `${run.merchantName} is not on the merchant block list.`,
      reasonCode: null,
      policyMerchantEntryId: null,
    });
  }
  if (allowEntries > 0 && !allowHit) {
    record(
      run,
      candidate,
      {
        ...base,
        outcome: 'BLOCK',
        role: 'MERCHANT_ALLOW_LIST',
        message: `${run.merchantName} is not on the merchant allow list.`,
        reasonCode: 'MERCHANT_NOT_ALLOW_LISTED',
        policyMerchantEntryId: null,
      },
      () => `${run.merchantName} is not on the merchant allow list`,
    );
  }
}

function checkPerPurchase(run: Run, candidate: PolicyCandidate, rule: Rule): void {
  const block = rule.effect === 'BLOCK';
  const role: EvaluationRole = block ? 'PER_PURCHASE_MAXIMUM' : 'APPROVAL_THRESHOLD';
  const over = run.amount > rule.amountMinor;
  const limit = money(run, rule.amountMinor);
  record(
    run,
    candidate,
    {
      rule: rule.ruleType,
      outcome: over ? (block ? 'BLOCK' : 'ESCALATE') : 'PASS',
      role,
      currency: run.currency,
      limitMinor: rule.amountMinor,
      observedMinor: run.amount,
      message: `${run.amountText} ${amountPredicate(role, over, limit)}.`,
      reasonCode: over ? (block ? 'AMOUNT_EXCEEDS_MAX' : 'APPROVAL_THRESHOLD_EXCEEDED') : null,
      policyMerchantEntryId: null,
      policyRuleId: rule.id,
    },
    () => `${run.subject} ${amountPredicate(role, true, limit)}`,
  );
}

function checkWindow(run: Run, candidate: PolicyCandidate, rule: Rule & { periodKind: WindowPeriodKind }): void {
  const kind = rule.periodKind;
  const input = run.input;
  const period = (run.periods[kind] ??= periodFor(kind, input.periodInstant ?? input.now, input.timeZone));
  const id = windowId({ policyId: candidate.policyId, currency: run.currency, periodKind: kind, periodKey: period.periodKey });
  let touch = run.touches.get(id);
  if (touch === undefined) {
    const state = input.windows.get(id) ?? ZERO_WINDOW;
    touch = {
      id,
      key: {
        policyId: candidate.policyId,
        policyVersionId: candidate.version.id,
        currency: run.currency,
        periodKind: kind,
        periodKey: period.periodKey,
        periodStart: period.periodStart,
        periodEnd: period.periodEnd,
      },
      state,
      used: usedMinor(state),
      policyName: candidate.policyName,
      limits: [],
    };
    run.touches.set(id, touch);
  }
  const before = touch.used;
  const projected = before + run.amount;
  const over = projected > rule.amountMinor;
  const block = rule.effect === 'BLOCK';
  touch.limits.push({
    effect: rule.effect,
    limitMinor: rule.amountMinor,
    policyRuleId: rule.id,
    remainingBeforeMinor: rule.amountMinor - before,
    remainingAfterMinor: rule.amountMinor - projected,
    wouldExceed: over,
  });
  const role: EvaluationRole = block ? 'SPENDING_BUDGET' : 'SPENDING_ESCALATION';
  const limit = money(run, rule.amountMinor);
  const projectedText = money(run, projected);
  record(
    run,
    candidate,
    {
      rule: rule.ruleType,
      outcome: over ? (block ? 'BLOCK' : 'ESCALATE') : 'PASS',
      role,
      currency: run.currency,
      limitMinor: rule.amountMinor,
      observedMinor: projected,
      message: `This purchase ${spendPredicate(role, kind, over, projectedText, limit)}.`,
      reasonCode: over ? (kind === 'DAY' ? 'DAILY_LIMIT_EXCEEDED' : 'MONTHLY_LIMIT_EXCEEDED') : null,
      policyMerchantEntryId: null,
      policyRuleId: rule.id,
    },
    () => `${run.subject} ${spendPredicate(role, kind, true, projectedText, limit)}`,
  );
}

function checkRule(run: Run, candidate: PolicyCandidate, rule: Rule): void {
  if (!ruleAppliesTo(rule, run.currency)) {
    record(run, candidate, {
      rule: rule.ruleType,
      outcome: 'NOT_APPLICABLE',
      role: roleOf(rule),
      currency: rule.currency,
      limitMinor: rule.amountMinor,
      observedMinor: null,
      message: `Applies only to purchases in ${rule.currency}.`,
      reasonCode: null,
      policyMerchantEntryId: null,
      policyRuleId: rule.id,
    });
    return;
  }
  if (isWindowRule(rule)) checkWindow(run, candidate, rule);
  // AMOUNT_LIMIT caps a single purchase whatever its periodKind says; a SPEND_LIMIT over PER_REQUEST
  // totals one request, which is the same thing.
  else checkPerPurchase(run, candidate, rule);
}

function roleOf(rule: Rule): EvaluationRole {
  const block = rule.effect === 'BLOCK';
  if (isWindowRule(rule)) return block ? 'SPENDING_BUDGET' : 'SPENDING_ESCALATION';
  return block ? 'PER_PURCHASE_MAXIMUM' : 'APPROVAL_THRESHOLD';
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

/** Evaluates a purchase against the policies (DESIGN.md section 4). Never reads a clock. */
export function decide(input: EngineInput): Decision {
  const { purchase } = input;
  const selection = selectPolicies(input);
  const policiesExcludedByCurrencyScope = selection.excluded.map((policy) => excludedByCurrency(policy, purchase.currency));
  const base = {
    engineVersion: ENGINE_VERSION,
    mode: input.mode,
    evaluatedAt: input.now,
    policiesExcludedByCurrencyScope,
  };

  if (selection.rejection !== null) {
    return {
      ...base,
      outcome: 'REJECTED',
      reasonCodes: [selection.rejection],
      explanation: explainRefusal(selection.rejection, {
        agentStatus: input.agent?.status ?? null,
        currency: purchase.currency,
        simulated: input.mode !== 'CURRENT_POLICIES',
      }),
      escalationReasonCodes: [],
      policiesConsidered: [],
      ruleEvaluations: [],
      budgets: [],
      effects: { budget: [], crossings: [] },
    };
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
    primaryBlock: null,
    primaryEscalation: null,
    touches: new Map(),
    periods: {},
  };
  for (const { candidate } of selection.covering) {
    checkMerchants(run, candidate);
    for (const rule of candidate.version.rules) checkRule(run, candidate, rule);
  }

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

  const budgets = [];
  const budget: BudgetEffect[] = [];
  const crossings: BudgetCrossing[] = [];
  for (const touch of run.touches.values()) {
    budgets.push(toSimulatedBudget(touch, run.amount));
    const limited = { ...touch, budgetCounterId: touch.state.budgetCounterId };
    if (outcome === 'REJECTED') {
      crossings.push(...refusalExhaustion(limited, touch.state));
      continue;
    }
    budget.push({
      operation: outcome === 'APPROVED' ? 'COMMIT' : 'HOLD',
      windowId: touch.id,
      window: touch.key,
      budgetCounterId: touch.state.budgetCounterId,
      amountMinor: run.amount,
    });
    if (outcome === 'APPROVED') crossings.push(...crossingsFor(limited, spentMinor(touch.state), spentMinor(touch.state) + run.amount));
  }

  return {
    ...base,
    outcome,
    reasonCodes,
    explanation,
    escalationReasonCodes,
    policiesConsidered: selection.covering.map(considered),
    ruleEvaluations: run.evaluations,
    budgets,
    effects: { budget, crossings },
  };
}
