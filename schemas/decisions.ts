// Decisions and purchase read-backs on the wire (docs/reference/contract.md §2.3-2.5, §2.7, §4.1, §4.2).
import Type from 'typebox';
import { AgentStatus, Currency, MinorAmount, Nullable, Timestamp, Uuid } from './common.ts';
import { REASON_CODES } from '../src/engine/types.ts';

export const Outcome = Type.Enum(['APPROVED', 'REJECTED', 'REQUIRES_APPROVAL']);
export const ReasonCode = Type.Enum([...REASON_CODES]);
export const PurchaseStatus = Type.Enum(['EVALUATING', 'PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']);
export const ApplicabilityReason = Type.Enum(['ORGANIZATION_SCOPE', 'AGENT_SCOPE', 'SIMULATED_VERSION']);
const EngineVersion = Type.String({ description: '<engine_name>@<semver>; evidence, not a contract.' });

export const RuleEvaluation = Type.Object({
  rule: Type.Enum(['AMOUNT_LIMIT', 'SPEND_LIMIT', 'MERCHANT_LIST']),
  outcome: Type.Enum(['PASS', 'BLOCK', 'ESCALATE', 'NOT_APPLICABLE']),
  role: Type.Enum(['PER_PURCHASE_MAXIMUM', 'APPROVAL_THRESHOLD', 'SPENDING_BUDGET', 'SPENDING_ESCALATION', 'MERCHANT_BLOCK_LIST', 'MERCHANT_ALLOW_LIST']),
  currency: Nullable(Currency),
  headroomMinor: Nullable(MinorAmount),
  limitMinor: Nullable(MinorAmount),
  observedMinor: Nullable(MinorAmount),
  message: Nullable(Type.String()),
  reasonCode: Nullable(ReasonCode),
  policyMerchantEntryId: Nullable(Uuid),
  policyRuleId: Nullable(Uuid),
  policyVersionId: Nullable(Uuid),
  policyId: Nullable(Uuid),
  policyName: Nullable(Type.String()),
});

export const Decision = Type.Object({
  id: Uuid,
  outcome: Outcome,
  reasonCodes: Type.Array(ReasonCode),
  explanation: Type.String({ description: 'A sentence for people, not a stable contract.' }),
  evaluatedAt: Timestamp,
  engineVersion: EngineVersion,
});

export const PurchaseDecisionResponse = Type.Object({
  purchaseRequest: Type.Object({ id: Uuid, status: PurchaseStatus, amountMinor: MinorAmount, currency: Currency }),
  decision: Decision,
  approval: Type.Object({ required: Type.Boolean(), expiresAt: Nullable(Timestamp) }),
  policyVersions: Type.Array(Type.Object({ policyVersionId: Uuid, applicabilityReason: ApplicabilityReason })),
  ruleEvaluations: Type.Array(RuleEvaluation),
  replayed: Type.Boolean({ description: 'True when an Idempotency-Key replayed the stored decision (status 200).' }),
});

const Person = Type.Object({ name: Type.String() });

export const SubmittedVia = Type.Union([
  Type.Object({ type: Type.Literal('API_KEY'), apiKeyPrefix: Type.String() }),
  Type.Object({ type: Type.Literal('CONNECTION'), connectionId: Uuid, application: Type.String(), grantedBy: Person }),
]);

export const Approval = Type.Object({
  state: Type.Enum(['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']),
  isPending: Type.Boolean({ description: 'Authoritative for "is a person still deciding".' }),
  escalationReasonCodes: Type.Array(ReasonCode),
  expiresAt: Timestamp,
  resolvedAt: Nullable(Timestamp),
  resolvedBy: Nullable(Person),
  comment: Nullable(Type.String()),
  approvalsRequired: Type.Integer({ minimum: 1, maximum: 5, description: 'How many distinct approvers must approve (a quorum); one rejection ends the approval.' }),
  answers: Type.Array(
    Type.Object({ name: Type.String(), answer: Type.Enum(['APPROVE', 'REJECT']), comment: Nullable(Type.String()), answeredAt: Timestamp }),
    { description: 'The answers so far, in order, the resolving one included.' },
  ),
});

export const PurchaseReadback = Type.Object({
  id: Uuid,
  status: PurchaseStatus,
  merchant: Type.String(),
  reason: Type.String(),
  amountMinor: MinorAmount,
  currency: Currency,
  requestedAt: Timestamp,
  agent: Type.Object({ id: Uuid, name: Type.String(), status: AgentStatus }),
  category: Nullable(Type.String()),
  merchantDomain: Nullable(Type.String()),
  resolvedAt: Nullable(Timestamp),
  origin: Nullable(Type.Enum(['DASHBOARD', 'API', 'MCP'])),
  initiatedBy: Nullable(Person),
  submittedVia: Nullable(SubmittedVia),
  decision: Nullable(
    Type.Object({
      ...Decision.properties,
      kind: Type.Enum(['INITIAL', 'APPROVAL_REEVALUATION', 'APPROVAL_EXPIRED', 'APPROVAL_CANCELLED']),
    }),
  ),
  approval: Nullable(Approval),
});

export const PurchaseReadbackResponse = Type.Object({ purchase: PurchaseReadback });
