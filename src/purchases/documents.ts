// Write-side documents of a purchase: the request (with its verbatim body as evidence), each
// decision made about it, and the approval a person answers. Read models live in projection.ts.
import type { StoreDb } from '../store/store.ts';
import type { ApplicabilityReason, ReasonCode } from '../engine/types.ts';
import type { Static } from 'typebox';
import type { RuleEvaluation } from '../../schemas/decisions.ts';

export type PurchaseStatus = 'EVALUATING' | 'PENDING_APPROVAL' | 'APPROVED' | 'REJECTED' | 'EXPIRED' | 'CANCELLED';
export type Origin = 'DASHBOARD' | 'API' | 'MCP';

export type SubmittedVia =
  | { type: 'API_KEY'; apiKeyPrefix: string }
  | { type: 'CONNECTION'; connectionId: string; application: string; grantedBy: { name: string } };

export interface PurchaseDoc {
  _id: string;
  organizationId: string;
  agentId: string;
  /** The credential that submitted it: the only one that may read it back (docs/reference/contract.md §4.2). */
  submitterId: string;
  submittedVia: SubmittedVia | null;
  origin: Origin;
  /**
   * The person behind a DASHBOARD purchase; null for machine origins (absent on older documents). Their id
   * is not kept here (this is the readback's shape): it is `submitterId`, see initiatorPersonId.
   */
  initiatedBy?: { name: string } | null;
  /**
   * The person behind the purchase, when one is: the maker of a DASHBOARD purchase, or the person who
   * authorised the MCP connection that submitted it. They may not approve it (no self-approval).
   * Absent on older documents: see initiatorPersonId.
   */
  initiatorPersonId?: string | null;
  merchant: string;
  merchantKey: string;
  merchantDomain: string | null;
  reason: string;
  category: string | null;
  amountMinor: number;
  currency: string;
  metadata: Record<string, unknown> | null;
  /** The request body exactly as received (docs/reference/contract.md §8: stored verbatim as evidence). */
  requestBody: string;
  status: PurchaseStatus;
  requestedAt: Date;
  resolvedAt: Date | null;
  decisionId: string;
  approvalId: string | null;
  /** Versions evaluated against when the decision in force was made. */
  policyVersionIds: string[];
  /** Windows holding (or committed with) this purchase's amount. */
  windowIds: string[];
  version: number;
}

/**
 * The person a purchase counts as made by, or null for a machine's purchase (an API key's): the maker of
 * a dashboard purchase, or the person who authorised the MCP connection that submitted it. Recorded as
 * `initiatorPersonId` since quorum approvals; a dashboard purchase recorded before carries it anyway as
 * its `submitterId` (a person submits under their own id, submit.ts). Nothing of it is in the readback,
 * whose `initiatedBy` is `{name}` only (docs/reference/contract.md §2.5).
 */
export const initiatorPersonId = (p: Pick<PurchaseDoc, 'initiatedBy' | 'submitterId' | 'initiatorPersonId'>): string | null =>
  p.initiatorPersonId ?? (p.initiatedBy ? p.submitterId : null);

/** Stored in its wire shape: a decision's evidence is what was answered. */
export type StoredRuleEvaluation = Static<typeof RuleEvaluation>;

export interface DecisionDoc {
  _id: string;
  purchaseId: string;
  organizationId: string;
  kind: 'INITIAL' | 'APPROVAL_REEVALUATION' | 'APPROVAL_EXPIRED' | 'APPROVAL_CANCELLED';
  outcome: 'APPROVED' | 'REJECTED' | 'REQUIRES_APPROVAL';
  reasonCodes: ReasonCode[];
  explanation: string;
  evaluatedAt: Date;
  engineVersion: string;
  policyVersions: { policyVersionId: string; applicabilityReason: ApplicabilityReason }[];
  ruleEvaluations: StoredRuleEvaluation[];
}

export type ApprovalState = 'PENDING' | 'APPROVED' | 'REJECTED' | 'EXPIRED' | 'CANCELLED';

/** One person's answer to an approval, in the order given. */
export interface ApprovalAnswer {
  personId: string;
  name: string;
  answer: 'APPROVE' | 'REJECT';
  comment: string | null;
  answeredAt: Date;
}

export interface ApprovalDoc {
  _id: string;
  purchaseId: string;
  organizationId: string;
  agentId: string;
  state: ApprovalState;
  escalationReasonCodes: ReasonCode[];
  escalatedVersionIds: string[];
  expiresAt: Date;
  createdAt: Date;
  resolvedAt: Date | null;
  /** The person whose answer resolved it (the last approver of a quorum, or the one who rejected). */
  resolvedBy: { name: string; personId: string } | null;
  /** The resolving answer's comment. */
  comment: string | null;
  /**
   * Distinct approvers who must approve (the largest approvalsRequired of the escalating rules). Absent on
   * documents written before quorum approvals, meaning 1: read it through approvalsRequiredOf.
   */
  approvalsRequired?: number;
  /**
   * Every answer so far, the resolving one included, in order. Absent on documents written before quorum
   * approvals, meaning []: read it through answersOf.
   */
  answers?: ApprovalAnswer[];
  version: number;
}

export const approvalsRequiredOf = (a: { approvalsRequired?: number }): number => a.approvalsRequired ?? 1;
export const answersOf = (a: { answers?: ApprovalAnswer[] }): ApprovalAnswer[] => a.answers ?? [];

export interface IdempotencyDoc {
  _id: string;
  requestHash: string;
  purchaseId: string;
  /** The 201 response body as it was sent (JSON text: stored and read back without an object walk). */
  responseJson?: string;
  /** The same as an object, in records written before responseJson. */
  response?: Record<string, unknown>;
  /** The decision's receipt, sent again as the Decision-Receipt header of a replay (absent on records written before receipts). */
  receipt?: string;
  createdAt: Date;
  /** TTL index: kept at least 24 hours (docs/reference/decisions.md). */
  expiresAt: Date;
}

/** The collections' names, for a WriteBatch. */
export const PURCHASE_COLLECTIONS = { purchases: 'purchases', decisions: 'decisions', approvals: 'approvals', idempotency: 'idempotency_keys' } as const;

export const purchaseCollections = (db: StoreDb) => ({
  purchases: db.collection<PurchaseDoc>(PURCHASE_COLLECTIONS.purchases),
  decisions: db.collection<DecisionDoc>(PURCHASE_COLLECTIONS.decisions),
  approvals: db.collection<ApprovalDoc>(PURCHASE_COLLECTIONS.approvals),
  idempotency: db.collection<IdempotencyDoc>(PURCHASE_COLLECTIONS.idempotency),
});
