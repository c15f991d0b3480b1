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
