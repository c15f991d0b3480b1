// GET /v1/purchase-requests/{id} (docs/reference/contract.md §4.2): reads the purchase_views read model. Only the
// credential that submitted a purchase may read it; everything else is the same 404. Writes nothing.
// A DASHBOARD purchase was submitted by no credential: a person made it on behalf of an agent, so
// every credential acting as that agent may read it (docs/reference/decisions.md).
import type { StoreDb } from '../store/store.ts';
import type { Principal } from '../identity/auth.ts';
import { notFound } from '../http/errors.ts';
import { collections } from '../store/collections.ts';
import { approvalsRequiredOf } from './documents.ts';
import { views, type PurchaseViewDoc } from './projection.ts';

/**
 * The readbacks of views, with the agent's status as it is now: a view keeps the status it was written
 * with, because archiving a busy agent must not rewrite all of its purchases in one transaction
 * (docs/internals/design.md §2). Views of one credential belong to one agent, so this is one read.
 */
export async function currentReadbacks(db: StoreDb, rows: PurchaseViewDoc[]): Promise<Array<PurchaseViewDoc['readback']>> {
  const ids = [...new Set(rows.map((r) => r.agentId))];
  if (ids.length === 0) return [];
  const agents = await collections(db).agents.find({ _id: { $in: ids } }, { projection: { status: 1 } }).toArray();
  const status = new Map(agents.map((a) => [a._id, a.status]));
  return rows.map((r) => ({ ...r.readback, agent: { ...r.readback.agent, status: status.get(r.agentId) ?? r.readback.agent.status }, approval: withAnswers(r.readback.approval) }));
}

type ApprovalView = PurchaseViewDoc['readback']['approval'];

/** A view written before quorum approvals: one approver was needed, and its only answer was the resolution. */
function withAnswers(a: ApprovalView): ApprovalView {
  if (a === null || a.answers !== undefined) return a;
  const resolved = a.resolvedBy !== null && a.resolvedAt !== null && (a.state === 'APPROVED' || a.state === 'REJECTED');
  return {
    ...a,
    approvalsRequired: approvalsRequiredOf(a),
    answers: resolved ? [{ name: a.resolvedBy!.name, answer: a.state === 'APPROVED' ? 'APPROVE' : 'REJECT', comment: a.comment, answeredAt: a.resolvedAt! }] : [],
  };
}

export async function getPurchase(db: StoreDb, principal: Principal, purchaseId: string) {
  const submitterId = principal.kind === 'API_KEY' ? principal.apiKeyId : principal.connectionId;
  const view = await views(db).purchaseViews.findOne({
    _id: purchaseId,
    organizationId: principal.organizationId,
    $or: [{ submitterId }, ...(principal.agentId ? [{ agentId: principal.agentId, 'readback.origin': 'DASHBOARD' as const }] : [])],
  });
  if (!view) throw notFound('purchase request');
  const [purchase] = await currentReadbacks(db, [view]);
  return { purchase };
}
