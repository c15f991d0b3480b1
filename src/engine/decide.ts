// The decision engine: a pure decider (DESIGN.md 1 and 6a). No I/O, no clock, no randomness:
// the same input always gives the same decision. Semantics: DESIGN.md section 4.
import { selectPolicies, type ApplicablePolicy } from './applicability.ts';
import { crossingsFor, refusalExhaustion, spentMinor, toSimulatedBudget, usedMinor, ZERO_WINDOW, type LimitedWindow, type WindowTouch } from './budgets.ts';
import { currencyExponent, formatMajor } from './currency.ts';
import { amountPredicate, amountTail, explain, explainRefusal, spendLead, spendPredicate, spendTail } from './explain.ts';
import { isWindowRule, periodWindows, ruleAppliesTo, windowIn, type PeriodWindows } from './periods.ts';
import {
  REASON_CODES,
  type BudgetCrossing,
  type BudgetEffect,
  type Decision,
  type EngineInput,
  type EvaluationOutcome,
  type EvaluationRole,
  type MerchantEntry,
  type Outcome,
  type PolicyCandidate,
  type PolicyConsidered,
  type PolicyExcludedByCurrency,
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
  /** The DAY and MONTH periods of this evaluation, resolved on first use. */
  day: PeriodWindows | null;
  month: PeriodWindows | null;
}

// Limits repeat from decision to decision: a rule's limit text and the end of its message are kept
// with the rule, per currency (a rule without a currency applies to several). Other amounts (the
// purchase, a projection) change every time.
interface RuleTexts {
  currency: string;
  limit: string;
  /** The message after the amount (per-purchase) or the projection (spend limit), within and above. */
  within: string;
  above: string;
}
const ruleTexts = new WeakMap<Rule, RuleTexts>();
function textsOf(run: Run, rule: Rule): RuleTexts {
  const cached = ruleTexts.get(rule);
  if (cached !== undefined && cached.currency === run.currency) return cached;
  const limit = money(run, rule.amountMinor);
  const role = roleOf(rule);
  const tail = (over: boolean) => (isWindowRule(rule) ? spendTail(role, rule.periodKind, over, limit) : amountTail(role, over, limit));
  const texts = { currency: run.currency, limit, within: tail(false), above: tail(true) };
  ruleTexts.set(rule, texts);
  return texts;
}

const money = (run: Run, amount: bigint): string => `${formatMajor(amount, run.exponent)} ${run.currency}`;

/** A RuleEvaluation of `candidate`, built in one allocation (this runs 25 times per decision). */
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

function record(run: Run, candidate: PolicyCandidate, evaluation: RuleEvaluation, predicate?: () => string): void {
  run.evaluations.push(evaluation);
  if (evaluation.outcome !== 'BLOCK' && evaluation.outcome !== 'ESCALATE') return;
  const reason = evaluation.reasonCode!;
  const block = evaluation.outcome === 'BLOCK';
  (block ? run.blocking : run.escalating).push(reason);
  // The evaluation the explanation names: the first by reason order, then policy name, policy id and
  // rule/entry id, so that the sentence does not depend on the order the inputs arrive in.
  const sortKey = `${String(RANK.get(reason)).padStart(2, '0')}\u0000${candidate.policyName}\u0000${candidate.policyId}\u0000${evaluation.policyRuleId ?? evaluation.policyMerchantEntryId}`;
  const current = block ? run.primaryBlock : run.primaryEscalation;
  if (current === null || sortKey < current.sortKey) {
    const chosen: Highlight = { evaluation, predicate: predicate!(), sortKey };
    if (block) run.primaryBlock = chosen;
    else run.primaryEscalation = chosen;
  }
}

interface MerchantIndex {
  /** The list it was built from, and its length then: inputs are read-only, the check is cheap. */
  length: number;
  blockEntries: number;
  allowEntries: number;
  /** Entries by merchantKey, in list order. */
  byKey: Map<string, MerchantEntry[]>;
}

// A version's merchant list is matched on every decision; indexing it once per list turns a scan of
// every entry into one lookup. Keyed by the list itself, so it lives as long as the version does.
const merchantIndexes = new WeakMap<readonly MerchantEntry[], MerchantIndex>();

function merchantIndex(merchants: readonly MerchantEntry[]): MerchantIndex {
  let index = merchantIndexes.get(merchants);
  if (index === undefined || index.length !== merchants.length) {
    index = { length: merchants.length, blockEntries: 0, allowEntries: 0, byKey: new Map() };
    for (const entry of merchants) {
      if (entry.listType === 'BLOCK') index.blockEntries++;
      else index.allowEntries++;
      const same = index.byKey.get(entry.merchantKey);
      if (same) same.push(entry);
      else index.byKey.set(entry.merchantKey, [entry]);
    }
    merchantIndexes.set(merchants, index);
  }
  return index;
}

function checkMerchants(run: Run, candidate: PolicyCandidate): void {
  const merchants = candidate.version.merchants;
  if (merchants.length === 0) return;
  const { blockEntries, allowEntries, byKey } = merchantIndex(merchants);
  let blockHit = false;
  let allowHit = false;
  const merchant = (outcome: EvaluationOutcome, role: EvaluationRole, message: string, reasonCode: ReasonCode | null, entryId: string | null) =>
    evaluationOf(candidate, 'MERCHANT_LIST', outcome, role, null, null, null, null, message, reasonCode, entryId, null);
  for (const entry of byKey.get(run.input.purchase.merchantKey) ?? []) {
    if (entry.listType === 'BLOCK') {
      blockHit = true;
      record(
        run,
        candidate,
        merchant('BLOCK', 'MERCHANT_BLOCK_LIST', `${entry.label} is on the merchant block list.`, 'MERCHANT_BLOCKED', entry.id),
        () => `${run.merchantName} is on the merchant block list`,
      );
    } else {
      allowHit = true;
      record(run, candidate, merchant('PASS', 'MERCHANT_ALLOW_LIST', `${entry.label} is on the merchant allow list.`, null, entry.id));
    }
  }
  if (blockEntries > 0 && !blockHit) {
    record(run, candidate, merchant('PASS', 'MERCHANT_BLOCK_LIST', `${run.merchantName} is not on the merchant block list.`, null, null));
  }
  if (allowEntries > 0 && !allowHit) {
    record(
      run,
      candidate,
      merchant('BLOCK', 'MERCHANT_ALLOW_LIST', `${run.merchantName} is not on the merchant allow list.`, 'MERCHANT_NOT_ALLOW_LISTED', null),
      () => `${run.merchantName} is not on the merchant allow list`,
    );
  }
}

function checkPerPurchase(run: Run, candidate: PolicyCandidate, rule: Rule): void {
  const block = rule.effect === 'BLOCK';
  const role: EvaluationRole = block ? 'PER_PURCHASE_MAXIMUM' : 'APPROVAL_THRESHOLD';
  const over = run.amount > rule.amountMinor;
  const texts = textsOf(run, rule);
  const limit = texts.limit;
  record(
    run,
    candidate,
    evaluationOf(
      candidate,
      rule.ruleType,
      over ? (block ? 'BLOCK' : 'ESCALATE') : 'PASS',
      role,
      run.currency,
      rule.amountMinor,
      run.amount,
      rule.amountMinor - run.amount,
      run.amountText + (over ? texts.above : texts.within),
      over ? (block ? 'AMOUNT_EXCEEDS_MAX' : 'APPROVAL_THRESHOLD_EXCEEDED') : null,
      null,
      rule.id,
    ),
    over ? () => `${run.subject} ${amountPredicate(role, true, limit)}` : undefined,
  );
}

function checkWindow(run: Run, candidate: PolicyCandidate, rule: Rule & { periodKind: WindowPeriodKind }): void {
  const kind = rule.periodKind;
  const input = run.input;
  const period =
    kind === 'DAY'
      ? (run.day ??= periodWindows(kind, input.periodInstant ?? input.now, input.timeZone))
      : (run.month ??= periodWindows(kind, input.periodInstant ?? input.now, input.timeZone));
  const window = windowIn(period, kind, candidate.policyId, candidate.version.id, run.currency);
  let touch = run.touches.get(window.id);
  if (touch === undefined) {
    const state = input.windows.get(window.id) ?? ZERO_WINDOW;
    const used = usedMinor(state);
    touch = { id: window.id, key: window.key, state, used, projected: used + run.amount, projectedText: undefined, policyName: candidate.policyName, limits: [] };
    run.touches.set(window.id, touch);
  }
  const before = touch.used;
  const projected = touch.projected;
  const over = projected > rule.amountMinor;
  const block = rule.effect === 'BLOCK';
  const remainingAfterMinor = rule.amountMinor - projected;
  touch.limits.push({
    effect: rule.effect,
    limitMinor: rule.amountMinor,
    policyRuleId: rule.id,
    remainingBeforeMinor: rule.amountMinor - before,
    remainingAfterMinor,
    wouldExceed: over,
  });
  const role: EvaluationRole = block ? 'SPENDING_BUDGET' : 'SPENDING_ESCALATION';
  const texts = textsOf(run, rule);
  const limit = texts.limit;
  const projectedText = (touch.projectedText ??= money(run, projected));
  record(
    run,
    candidate,
    evaluationOf(
      candidate,
      rule.ruleType,
      over ? (block ? 'BLOCK' : 'ESCALATE') : 'PASS',
      role,
      run.currency,
      rule.amountMinor,
      projected,
      remainingAfterMinor,
      spendLead(kind) + projectedText + (over ? texts.above : texts.within),
      over ? (kind === 'DAY' ? 'DAILY_LIMIT_EXCEEDED' : 'MONTHLY_LIMIT_EXCEEDED') : null,
      null,
      rule.id,
    ),
    over ? () => `${run.subject} ${spendPredicate(role, kind, true, projectedText, limit)}` : undefined,
  );
}

function checkRule(run: Run, candidate: PolicyCandidate, rule: Rule): void {
  if (!ruleAppliesTo(rule, run.currency)) {
    const message = `Applies only to purchases in ${rule.currency}.`;
    record(run, candidate, evaluationOf(candidate, rule.ruleType, 'NOT_APPLICABLE', roleOf(rule), rule.currency, rule.amountMinor, null, null, message, null, null, rule.id));
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
/** What the budget events read of a window: built only for the outcomes that report crossings. */
const limitedWindow = (touch: WindowTouch): LimitedWindow => ({ id: touch.id, key: touch.key, limits: touch.limits, budgetCounterId: touch.state.budgetCounterId });

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
    day: null,
    month: null,
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
    if (outcome === 'REJECTED') {
      crossings.push(...refusalExhaustion(limitedWindow(touch), touch.state));
      continue;
    }
    budget.push({
      operation: outcome === 'APPROVED' ? 'COMMIT' : 'HOLD',
      windowId: touch.id,
      window: touch.key,
      budgetCounterId: touch.state.budgetCounterId,
      amountMinor: run.amount,
    });
    if (outcome === 'APPROVED') {
      const spent = spentMinor(touch.state);
      crossings.push(...crossingsFor(limitedWindow(touch), spent, spent + run.amount));
    }
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
