// The `data` of every event type (docs/reference/contract.md §6.2). Receivers must ignore fields they do not know.
import Type from 'typebox';
import { Timestamp } from './common.ts';

const Id = Type.String({ format: 'uuid' });
const Minor = Type.String({ pattern: '^-?\\d+$' });
/** UTC with milliseconds, as every timestamp of the contract (docs/reference/contract.md §2.1). */
const Instant = Timestamp;

const purchaseCommon = {
  purchaseRequestId: Id,
  agentId: Id,
  status: Type.String(),
  amountMinor: Minor,
  currency: Type.String({ pattern: '^[A-Z]{3}$' }),
  merchant: Type.String(),
};
const decided = { ...purchaseCommon, decisionId: Id, outcome: Type.String(), reasonCodes: Type.Array(Type.String()) };

const budgetEvent = (thresholdPercent: 80 | 100) =>
  Type.Object({
    budgetWindowId: Type.String(),
    policyId: Id,
    policyName: Type.Union([Type.String(), Type.Null()]),
    policyVersionId: Id,
    policyRuleId: Id,
    effect: Type.String(),
    currency: Type.String(),
    periodKind: Type.String(),
    periodKey: Type.String(),
    limitMinor: Minor,
    usedMinor: Minor,
    thresholdPercent: Type.Literal(thresholdPercent),
    /** SPENDING: approved spend crossed the mark; PURCHASE_REFUSED: the limit, past 80%, refused a purchase. */
    cause: thresholdPercent === 80 ? Type.Literal('SPENDING') : Type.Union([Type.Literal('SPENDING'), Type.Literal('PURCHASE_REFUSED')]),
  });

export const EventData = {
  'purchase.approval_required': Type.Object({ ...decided, approvalRequestId: Id, escalationReasonCodes: Type.Array(Type.String()), expiresAt: Instant }),
  'purchase.approved': Type.Object({ ...decided, resolvedBy: Type.Union([Type.Literal('ENGINE'), Type.Literal('HUMAN')]), approvalRequestId: Type.Union([Id, Type.Null()]) }),
  'purchase.rejected': Type.Object({ ...decided, resolvedBy: Type.Union([Type.Literal('ENGINE'), Type.Literal('HUMAN')]), approvalRequestId: Type.Union([Id, Type.Null()]) }),
  'purchase.approval_expired': Type.Object({ ...purchaseCommon, approvalRequestId: Id, expiresAt: Instant }),
  'budget.threshold_reached': budgetEvent(80),
  'budget.exhausted': budgetEvent(100),
  'agent.disabled': Type.Object({ agentId: Id, agentName: Type.String(), previousStatus: Type.String(), status: Type.Literal('DISABLED') }),
  'agent.archived': Type.Object({ agentId: Id, agentName: Type.String(), previousStatus: Type.String(), status: Type.Literal('ARCHIVED') }),
  'connection.created': Type.Object({ connectionId: Id, agentId: Id, application: Type.String(), clientId: Type.String(), scopes: Type.Array(Type.String()), grantedBy: Type.Object({ name: Type.String() }) }),
  'connection.revoked': Type.Object({ connectionId: Id, agentId: Id, application: Type.String(), clientId: Type.String(), reason: Type.String({ description: 'OPERATOR, CLIENT, TOKEN_REUSE, PASSWORD_RESET, ...' }) }),
  'security.connection_token_reuse_detected': Type.Object({ connectionId: Id, agentId: Id, application: Type.String(), clientId: Type.String(), credential: Type.String() }),
  'webhook.test': Type.Object({ webhookId: Id, message: Type.String() }),
} as const;
