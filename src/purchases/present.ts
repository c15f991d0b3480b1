// Wire shapes of docs/reference/contract.md §2.3-2.5 and §4.1, built from engine results and stored documents.
import type { AgentStatus, Decision, RuleEvaluation } from '../engine/types.ts';
import { approvalsRequiredOf, type ApprovalDoc, type DecisionDoc, type PurchaseDoc } from './documents.ts';
import { iso } from '../timestamps.ts';
import type { Static } from 'typebox';
import type { Approval, Decision as DecisionWire, PurchaseDecisionResponse, PurchaseReadback, RuleEvaluation as RuleEvaluationWire } from '../../schemas/decisions.ts';

const str = (v: bigint | null | undefined) => (v === null || v === undefined ? null : v.toString());

/** RuleEvaluation with MinorAmount strings (docs/reference/contract.md §2.7). */
export function ruleEvaluationWire(e: RuleEvaluation): Static<typeof RuleEvaluationWire> {
  return {
    rule: e.rule as Static<typeof RuleEvaluationWire>['rule'], // the engine's rule types, or MERCHANT_LIST
    outcome: e.outcome,
    role: e.role,
    currency: e.currency,
    headroomMinor: str(e.headroomMinor),
    limitMinor: str(e.limitMinor),
    observedMinor: str(e.observedMinor),
    message: e.message,
    reasonCode: e.reasonCode,
    policyMerchantEntryId: e.policyMerchantEntryId,
    policyRuleId: e.policyRuleId,
    policyVersionId: e.policyVersionId,
    policyId: e.policyId,
    policyName: e.policyName,
  };
}

export const policyVersionsOf = (d: Decision) =>
  d.policiesConsidered.map((p) => ({ policyVersionId: p.policyVersionId, applicabilityReason: p.applicabilityReason }));

export const decisionWire = (d: DecisionDoc): Static<typeof DecisionWire> => ({
  id: d._id,
  outcome: d.outcome,
  reasonCodes: d.reasonCodes,
  explanation: d.explanation,
  evaluatedAt: d.evaluatedAt.toISOString(),
  engineVersion: d.engineVersion,
});

export function submissionResponse(p: PurchaseDoc, d: DecisionDoc, approval: ApprovalDoc | null): Static<typeof PurchaseDecisionResponse> {
  return {
    purchaseRequest: { id: p._id, status: p.status, amountMinor: String(p.amountMinor), currency: p.currency },
    decision: decisionWire(d),
    approval: { required: approval !== null, expiresAt: iso(approval?.expiresAt) },
    policyVersions: d.policyVersions,
    ruleEvaluations: d.ruleEvaluations,
    replayed: false,
  };
}

export function approvalWire(a: ApprovalDoc | null): Static<typeof Approval> | null {
  if (!a) return null;
  return {
    state: a.state,
    isPending: a.state === 'PENDING',
    escalationReasonCodes: a.escalationReasonCodes,
    expiresAt: a.expiresAt.toISOString(),
    resolvedAt: iso(a.resolvedAt),
    resolvedBy: a.resolvedBy ? { name: a.resolvedBy.name } : null,
    comment: a.comment,
    approvalsRequired: approvalsRequiredOf(a),
    answers: answersWire(a),
  };
}

/** The answers so far; an approval resolved before quorum approvals had one, its resolution. */
function answersWire(a: ApprovalDoc): Static<typeof Approval>['answers'] {
  if (a.answers !== undefined) return a.answers.map((x) => ({ name: x.name, answer: x.answer, comment: x.comment, answeredAt: x.answeredAt.toISOString() }));
  if (!a.resolvedBy || !a.resolvedAt || (a.state !== 'APPROVED' && a.state !== 'REJECTED')) return [];
  return [{ name: a.resolvedBy.name, answer: a.state === 'APPROVED' ? 'APPROVE' : 'REJECT', comment: a.comment, answeredAt: a.resolvedAt.toISOString() }];
}

/** PurchaseReadback (docs/reference/contract.md §2.5), as stored in the purchase_views read model. */
export function readback(p: PurchaseDoc, agent: { id: string; name: string; status: AgentStatus }, d: DecisionDoc, a: ApprovalDoc | null): Static<typeof PurchaseReadback> {
  return {
    id: p._id,
    status: p.status,
    merchant: p.merchant,
    reason: p.reason,
    amountMinor: String(p.amountMinor),
    currency: p.currency,
    requestedAt: p.requestedAt.toISOString(),
    agent,
    category: p.category,
    merchantDomain: p.merchantDomain,
    resolvedAt: iso(p.resolvedAt),
    origin: p.origin,
    initiatedBy: p.initiatedBy ?? null,
    submittedVia: p.submittedVia,
    decision: { ...decisionWire(d), kind: d.kind },
    approval: approvalWire(a),
  };
}
