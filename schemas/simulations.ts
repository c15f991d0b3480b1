// SimulationResponse (docs/reference/contract.md §2.7, §4.3-4.5): every key present; none of a real decision's ids.
import Type from 'typebox';
import { AgentStatus, Currency, MinorAmount, Nullable, PolicyStatus, ScopeType, Timestamp, Uuid, VersionStatus } from './common.ts';
import { ApplicabilityReason, Outcome, ReasonCode, RuleEvaluation } from './decisions.ts';

export const SimulationMode = Type.Enum(['CURRENT_POLICIES', 'DRAFT_POLICY', 'POLICY_VERSION']);
const RuleEffect = Type.Enum(['BLOCK', 'REQUIRE_APPROVAL']);

export const SimulatedBudget = Type.Object({
  budgetCounterId: Nullable(Uuid),
  currency: Currency,
  current: Type.Object({ committedMinor: MinorAmount, heldMinor: MinorAmount, openingBalanceMinor: MinorAmount, reservedMinor: MinorAmount }),
  limits: Type.Array(
    Type.Object({
      effect: RuleEffect,
      limitMinor: MinorAmount,
      policyRuleId: Uuid,
      remainingBeforeMinor: MinorAmount,
      remainingAfterMinor: Type.String({ pattern: '^-?\\d+$', description: 'Negative means over by that much.' }),
      wouldExceed: Type.Boolean(),
    }),
  ),
  periodEnd: Timestamp,
  periodStart: Timestamp,
  periodKey: Type.String(),
  periodKind: Type.Enum(['DAY', 'MONTH']),
  policyId: Uuid,
  policyVersionId: Uuid,
  policyName: Type.String(),
  simulated: Type.Object({ projectedMinor: MinorAmount, requestedMinor: MinorAmount }),
  wouldExceed: Type.Boolean(),
});

export const SimulationResponse = Type.Object({
  simulation: Type.Object({
    isSimulation: Type.Literal(true),
    mode: SimulationMode,
    disclaimer: Type.String(),
    simulatedAt: Timestamp,
    engineVersion: Type.String(),
  }),
  purchase: Type.Object({
    amountMinor: MinorAmount,
    category: Nullable(Type.String()),
    currency: Currency,
    currencyExponent: Type.Integer({ minimum: 0 }),
    merchant: Type.String(),
    merchantDomain: Nullable(Type.String()),
    merchantKey: Type.String(),
  }),
  agent: Nullable(Type.Object({ id: Uuid, name: Type.String(), status: AgentStatus }, { description: 'Null in the two policy-version modes.' })),
  simulatedDecision: Type.Object({
    outcome: Outcome,
    wouldRequireApproval: Type.Boolean(),
    approvalsRequired: Type.Integer({
      minimum: 0,
      maximum: 5,
      description: 'How many distinct approvers would have to approve: the largest approvalsRequired of the rules that escalate; 0 unless wouldRequireApproval.',
    }),
    reasonCodes: Type.Array(ReasonCode),
    explanation: Type.String(),
  }),
  policiesConsidered: Type.Array(
    Type.Object({
      policyId: Uuid,
      policyName: Type.String(),
      policyStatus: PolicyStatus,
      policyVersionId: Uuid,
      versionNumber: Type.Integer({ minimum: 1 }),
      versionStatus: VersionStatus,
      scopeType: ScopeType,
      applicabilityReason: ApplicabilityReason,
      currencies: Type.Array(Currency),
      currencyScope: Nullable(Type.String()),
    }),
  ),
  policiesExcludedByCurrencyScope: Type.Array(
    Type.Object({
      policyId: Uuid,
      policyName: Type.String(),
      policyVersionId: Uuid,
      versionNumber: Type.Integer({ minimum: 1 }),
      currencies: Type.Array(Currency),
      currencyScope: Nullable(Type.String()),
      requestCurrency: Currency,
    }),
  ),
  ruleEvaluations: Type.Array(RuleEvaluation),
  budgets: Type.Array(SimulatedBudget),
});

// Replay (backtest) and shadow of a policy version (docs/integrate/simulations.md; additions to the contract:
// docs/integrate/rest-api.md#additions-to-the-contract).
/** An ISO 8601 instant with its offset (Z or ±hh:mm). */
const INSTANT = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})$';

export const ReplayBody = Type.Object(
  {
    policyVersionId: Uuid,
    from: Type.String({ pattern: INSTANT, description: 'Inclusive: purchases requested at or after this instant.' }),
    to: Type.String({ pattern: INSTANT, description: 'Exclusive; at most 92 days after `from`.' }),
    agentId: Type.Optional(Nullable(Uuid)),
  },
  { additionalProperties: false },
);

export const CHANGES_LIMIT = { default: 50, min: 1, max: 200 } as const;
export const ReplayPageQuery = {
  limit: Type.Integer({ minimum: CHANGES_LIMIT.min, maximum: CHANGES_LIMIT.max, default: CHANGES_LIMIT.default, description: 'Changes per page.' }),
  cursor: Type.String({ description: 'The `nextCursor` of the previous page.' }),
};

const ReplayedDecision = Type.Object({ outcome: Outcome, reasonCodes: Type.Array(ReasonCode) });

export const ReplaySummary = Type.Object({
  evaluated: Type.Integer({ minimum: 0 }),
  unchanged: Type.Integer({ minimum: 0 }),
  changed: Type.Integer({ minimum: 0, description: 'Purchases whose replayed outcome or reason codes differ from the recorded initial decision.' }),
  byTransition: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'Changed purchases by "RECORDED->REPLAYED" outcome.' }),
  byReasonCode: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'Changed purchases by each reason code of their replayed decision.' }),
});

export const ReplayChange = Type.Object({
  purchaseRequestId: Uuid,
  agentId: Uuid,
  merchant: Type.String(),
  amountMinor: MinorAmount,
  currency: Currency,
  requestedAt: Timestamp,
  recorded: ReplayedDecision,
  replayed: ReplayedDecision,
});

const ReplaySimulation = (mode: 'REPLAY' | 'SHADOW') =>
  Type.Object({ isSimulation: Type.Literal(true), mode: Type.Literal(mode), disclaimer: Type.String(), simulatedAt: Timestamp, engineVersion: Type.String() });

export const ReplayStatus = Type.Enum(['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED']);

export const ReplayResponse = Type.Object({
  simulation: ReplaySimulation('REPLAY'),
  replay: Type.Object({
    id: Nullable(Uuid),
    status: ReplayStatus,
    policyId: Uuid,
    policyVersionId: Uuid,
    versionNumber: Type.Integer({ minimum: 1 }),
    from: Timestamp,
    to: Timestamp,
    agentId: Nullable(Uuid),
    progress: Type.Object({ evaluated: Type.Integer({ minimum: 0 }), total: Type.Integer({ minimum: 0 }) }),
    error: Nullable(Type.String()),
  }),
  summary: Nullable(ReplaySummary),
  changes: Type.Array(ReplayChange),
  nextCursor: Nullable(Type.String()),
  hasMore: Type.Boolean(),
});

export const ShadowResponse = Type.Object({
  simulation: ReplaySimulation('SHADOW'),
  shadow: Type.Object({
    policyId: Uuid,
    policyVersionId: Uuid,
    versionNumber: Type.Integer({ minimum: 1 }),
    shadow: Type.Boolean({ description: 'Whether the version is in shadow now.' }),
    startedAt: Nullable(Timestamp),
    stoppedAt: Nullable(Timestamp),
    stopReason: Nullable(Type.Enum(['STOPPED', 'ACTIVATED'])),
    pending: Type.Integer({
      minimum: 0,
      description: "Decisions of the organisation committed after the shadow's last evaluation (its purchases, and answers' re-evaluations, which it passes over): how far behind live traffic it is.",
    }),
    pendingSince: Type.Union([Timestamp, Type.Null()], { description: 'When the first of those was made; null when none is pending.' }),
  }),
  summary: ReplaySummary,
  changes: Type.Array(ReplayChange),
  nextCursor: Nullable(Type.String()),
  hasMore: Type.Boolean(),
});
