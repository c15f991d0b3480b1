// The decision engine's own input and output types (docs/internals/design.md §4).
// They are structural: the storage layer maps its documents into them. Every amount is a bigint
// of minor units, in the input and in the output alike; the API layer writes them as strings.

export type Outcome = 'APPROVED' | 'REJECTED' | 'REQUIRES_APPROVAL';

// docs/reference/contract.md §2.1, in the order docs/reference/contract.md lists them; reasonCodes are always reported in this order.
export const REASON_CODES = [
  'WITHIN_POLICY',
  'MERCHANT_BLOCKED',
  'MERCHANT_NOT_ALLOW_LISTED',
  'AMOUNT_EXCEEDS_MAX',
  'APPROVAL_THRESHOLD_EXCEEDED',
  'DAILY_LIMIT_EXCEEDED',
  'MONTHLY_LIMIT_EXCEEDED',
  'AGENT_DISABLED',
  'NO_APPLICABLE_POLICY',
  'CURRENCY_NOT_COVERED',
  'POLICY_CHANGED_SINCE_ESCALATION',
] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

export type EvaluationMode = 'CURRENT_POLICIES' | 'DRAFT_POLICY' | 'POLICY_VERSION';
export type AgentStatus = 'ENABLED' | 'DISABLED' | 'ARCHIVED';
export type PolicyStatus = 'ACTIVE' | 'DISABLED' | 'ARCHIVED';
export type VersionStatus = 'DRAFT' | 'ACTIVE' | 'ARCHIVED';
export type ScopeType = 'ORGANIZATION' | 'AGENT';
export type RuleType = 'AMOUNT_LIMIT' | 'SPEND_LIMIT';
export type RuleEffect = 'BLOCK' | 'REQUIRE_APPROVAL';
export type PeriodKind = 'PER_REQUEST' | 'DAY' | 'MONTH';
export type WindowPeriodKind = 'DAY' | 'MONTH';

export interface Rule {
  id: string;
  ruleType: RuleType;
  effect: RuleEffect;
  periodKind: PeriodKind;
  amountMinor: bigint;
  /** Set: the rule applies only to purchases in this currency. Null: to every covered currency. */
  currency: string | null;
  /** A REQUIRE_APPROVAL rule: how many distinct approvers must approve (1..5; absent means 1). */
  approvalsRequired?: number;
}

export interface MerchantEntry {
  id: string;
  listType: 'ALLOW' | 'BLOCK';
  /** merchantKey(label), computed by the service when the entry was written. */
  merchantKey: string;
  label: string;
}

export interface PolicyVersionInput {
  id: string;
  versionNumber: number;
  status: VersionStatus;
  currencies: readonly string[];
  currencyScope: string | null;
  rules: readonly Rule[];
  merchants: readonly MerchantEntry[];
}

export interface PolicyCandidate {
  policyId: string;
  policyName: string;
  policyStatus: PolicyStatus;
  scopeType: ScopeType;
  agentIds: readonly string[];
  version: PolicyVersionInput;
}

export interface Period {
  /** '2026-11-21' for DAY, '2026-11' for MONTH, in the organisation's zone. */
  periodKey: string;
  /** ISO instants in UTC with milliseconds; periodEnd is exclusive. */
  periodStart: string;
  periodEnd: string;
}

/** A budget window belongs to the policy, not the version (docs/internals/design.md §4 item 6). */
export interface WindowKey extends Period {
  policyId: string;
  /** The version whose rules define the limits now; not part of the window's identity. */
  policyVersionId: string;
  currency: string;
  periodKind: WindowPeriodKind;
}

export interface WindowState {
  budgetCounterId: string | null;
  committedMinor: bigint;
  heldMinor: bigint;
  openingBalanceMinor: bigint;
}

export interface Purchase {
  /** merchantKey(merchant): what merchant lists are matched on. */
  merchantKey: string;
  amountMinor: bigint;
  currency: string;
  category: string | null;
  /** The merchant as the caller named it; used only in explanations (falls back to merchantKey). */
  merchant?: string | null;
}

export interface AgentInput {
  id: string;
  status: AgentStatus;
}

export interface EngineInput {
  mode: EvaluationMode;
  purchase: Purchase;
  /** Null in the two version modes (no agent check there). */
  agent: AgentInput | null;
  /**
   * CURRENT_POLICIES: every candidate that might govern the agent; the engine picks the applicable ones.
   * DRAFT_POLICY / POLICY_VERSION: the one version to simulate, evaluated as written whatever its status.
   */
  policies: readonly PolicyCandidate[];
  /** By windowId(key). A missing window is all zero. */
  windows: ReadonlyMap<string, WindowState>;
  /** The evaluation instant (ISO). The engine has no clock of its own. */
  now: string;
  /** The organisation's IANA time zone; DAY and MONTH windows are resolved in it. */
  timeZone: string;
  /**
   * The instant whose DAY/MONTH periods the purchase counts toward; defaults to `now`.
   * A re-evaluation passes the time the purchase was held so that it lands in the windows holding it.
   */
  periodInstant?: string;
}

export type ApplicabilityReason = 'ORGANIZATION_SCOPE' | 'AGENT_SCOPE' | 'SIMULATED_VERSION';

export interface PolicyConsidered {
  policyId: string;
  policyName: string;
  policyStatus: PolicyStatus;
  policyVersionId: string;
  versionNumber: number;
  versionStatus: VersionStatus;
  scopeType: ScopeType;
  applicabilityReason: ApplicabilityReason;
  currencies: string[];
  currencyScope: string | null;
}

export interface PolicyExcludedByCurrency {
  policyId: string;
  policyName: string;
  policyVersionId: string;
  versionNumber: number;
  currencies: string[];
  currencyScope: string | null;
  requestCurrency: string;
}

export type EvaluationOutcome = 'PASS' | 'BLOCK' | 'ESCALATE' | 'NOT_APPLICABLE';
export type EvaluationRole =
  | 'PER_PURCHASE_MAXIMUM'
  | 'APPROVAL_THRESHOLD'
  | 'SPENDING_BUDGET'
  | 'SPENDING_ESCALATION'
  | 'MERCHANT_BLOCK_LIST'
  | 'MERCHANT_ALLOW_LIST';

/** docs/reference/contract.md §2.7 RuleEvaluation plus policyId and policyName; amounts are bigint. */
export interface RuleEvaluation {
  /** The rule type ('AMOUNT_LIMIT', 'SPEND_LIMIT'), or 'MERCHANT_LIST' for a merchant-list check. */
  rule: string;
  outcome: EvaluationOutcome;
  role: EvaluationRole;
  currency: string | null;
  /** limitMinor - observedMinor; negative means over by that much. */
  headroomMinor: bigint | null;
  limitMinor: bigint | null;
  /** The amount compared with the limit: the purchase amount, or the window's projected total. */
  observedMinor: bigint | null;
  message: string | null;
  reasonCode: ReasonCode | null;
  policyMerchantEntryId: string | null;
  policyRuleId: string | null;
  policyVersionId: string | null;
  policyId: string | null;
  policyName: string | null;
}

/** A limit rule as it stands on a window a decision touches. */
export interface BudgetLimit {
  effect: RuleEffect;
  limitMinor: bigint;
  policyRuleId: string;
  /** Negative means over by that much. */
  remainingAfterMinor: bigint;
  wouldExceed: boolean;
}

/** docs/reference/contract.md §2.7 SimulatedBudget.limits[]: also what was left before this purchase. */
export interface SimulatedLimit extends BudgetLimit {
  remainingBeforeMinor: bigint;
}

/** docs/reference/contract.md §2.7 SimulatedBudget, amounts as bigint. */
export interface SimulatedBudget {
  windowId: string;
  budgetCounterId: string | null;
  currency: string;
  current: {
    committedMinor: bigint;
    heldMinor: bigint;
    openingBalanceMinor: bigint;
    /** heldMinor + committedMinor: what the window's own reservations account for. */
    reservedMinor: bigint;
  };
  limits: SimulatedLimit[];
  periodStart: string;
  periodEnd: string;
  periodKey: string;
  periodKind: WindowPeriodKind;
  policyId: string;
  policyVersionId: string;
  policyName: string;
  simulated: { requestedMinor: bigint; projectedMinor: bigint };
  wouldExceed: boolean;
}

export type BudgetOperation =
  /** committedMinor += amount */
  | 'COMMIT'
  /** heldMinor += amount */
  | 'HOLD'
  /** heldMinor -= amount; committedMinor += amount (a person approved a held purchase) */
  | 'CONVERT_HOLD'
  /** heldMinor -= amount (rejection, expiry, cancellation) */
  | 'RELEASE_HOLD';

export interface BudgetEffect {
  operation: BudgetOperation;
  windowId: string;
  /** Null only for RELEASE_HOLD/CONVERT_HOLD on a window the current policies no longer touch. */
  window: WindowKey | null;
  budgetCounterId: string | null;
  amountMinor: bigint;
}

export type CrossingKind = 'THRESHOLD_REACHED' | 'EXHAUSTED';

/**
 * Spending (opening balance + committed) passes 80% (THRESHOLD_REACHED) or reaches 100% (EXHAUSTED)
 * of a limit because of this effect (cause SPENDING), or a BLOCK limit past 80% refuses a purchase
 * (EXHAUSTED, cause PURCHASE_REFUSED; the command reports that once per window and limit rule).
 */
export interface BudgetCrossing {
  kind: CrossingKind;
  cause: 'SPENDING' | 'PURCHASE_REFUSED';
  windowId: string;
  window: WindowKey;
  budgetCounterId: string | null;
  policyRuleId: string;
  effect: RuleEffect;
  limitMinor: bigint;
  usedBeforeMinor: bigint;
  usedAfterMinor: bigint;
}

export interface DecisionEffects {
  budget: BudgetEffect[];
  crossings: BudgetCrossing[];
}

export interface Decision {
  engineVersion: string;
  mode: EvaluationMode;
  evaluatedAt: string;
  outcome: Outcome;
  reasonCodes: ReasonCode[];
  explanation: string;
  /** The reasons a person is asked about; empty unless outcome is REQUIRES_APPROVAL. */
  escalationReasonCodes: ReasonCode[];
  /**
   * How many distinct approvers must approve: the largest `approvalsRequired` of the rules that escalate
   * (1..5); 0 unless outcome is REQUIRES_APPROVAL.
   */
  approvalsRequired: number;
  policiesConsidered: PolicyConsidered[];
  policiesExcludedByCurrencyScope: PolicyExcludedByCurrency[];
  ruleEvaluations: RuleEvaluation[];
  effects: DecisionEffects;
}

/** A decision with what it would do to each budget window it reads (decideWithBudgets). */
export interface SimulatedDecision extends Decision {
  budgets: SimulatedBudget[];
}
