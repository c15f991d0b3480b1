// Ending a pending approval without a person's answer: it expired (nobody answered by expiresAt) or
// was cancelled (its agent was archived). Each is an EXPIRE or CANCEL command of the purchase lifecycle
// (src/purchases/lifecycle.ts): the hold is released, the purchase is refused, and a decision records
// why (kinds APPROVAL_EXPIRED / APPROVAL_CANCELLED, outcome REJECTED), so that a client polling the
// readback finds the answer in decision.outcome (docs/reference/contract.md §3.1). Idempotent: an approval that is no
// longer PENDING is left alone, so a job that runs twice changes nothing twice.
import type { AppDeps } from '../app-deps.ts';
import { newId } from '../ids.ts';
import { purchaseCollections } from '../purchases/documents.ts';
import { handlePurchaseCommand } from '../purchases/handler.ts';
import { loadPurchaseState } from '../purchases/load.ts';

export type ClosingState = 'EXPIRED' | 'CANCELLED';

/** Closes one approval. False when it was not PENDING (or, for an expiry, not yet due; for a cancellation, its agent is no longer archived). */
export async function closeApproval(deps: AppDeps, approvalId: string, state: ClosingState): Promise<boolean> {
  const approval = await purchaseCollections(deps.store.db).approvals.findOne({ _id: approvalId });
  if (!approval || approval.state !== 'PENDING') return false;
  const outcome = await handlePurchaseCommand(
    deps,
    approval.organizationId,
    (session, now) => loadPurchaseState(deps, session, approval.purchaseId, now, { answeredBy: null }),
    { kind: state === 'EXPIRED' ? 'EXPIRE' : 'CANCEL', ids: { decisionId: newId() } },
  );
  return outcome.kind === 'CLOSED';
}

export const expireApproval = (deps: AppDeps, approvalId: string): Promise<boolean> => closeApproval(deps, approvalId, 'EXPIRED');

/** Every overdue PENDING approval, in batches: the safety net behind the per-approval jobs. */
export async function expireDueApprovals(deps: AppDeps, batch = 100): Promise<number> {
  const pc = purchaseCollections(deps.store.db);
  let expired = 0;
  for (;;) {
    const due = await pc.approvals.find({ state: 'PENDING', expiresAt: { $lte: deps.now() } }).sort({ expiresAt: 1 }).limit(batch).toArray();
    if (due.length === 0) return expired;
    for (const a of due) if (await expireApproval(deps, a._id)) expired++;
    if (due.length < batch) return expired;
  }
}

/**
 * An archived agent's pending approvals are cancelled after the archive commits, one transaction each,
 * a batch at a time (docs/internals/design.md §2: bounded work per transaction; a busy agent can always be archived).
 * Idempotent and resumable: closeApproval leaves anything no longer PENDING alone, the agent's
 * `cancelApprovals` mark is cleared only when none is left, and the approval sweep resumes any agent
 * still marked (a process that stopped half-way). An agent enabled again meanwhile is left as it is.
 */
export async function cancelPendingApprovalsOf(deps: AppDeps, agentId: string, batch = 100): Promise<number> {
  const pc = purchaseCollections(deps.store.db);
  let cancelled = 0;
  for (;;) {
    const agent = await deps.collections.agents.findOne({ _id: agentId });
    if (agent?.status !== 'ARCHIVED') return cancelled;
    const pending = await pc.approvals.find({ agentId, state: 'PENDING' }).sort({ _id: 1 }).limit(batch).toArray();
    for (const a of pending) {
      if (await closeApproval(deps, a._id, 'CANCELLED')) cancelled++;
    }
    if (pending.length < batch) break;
  }
  await deps.collections.agents.updateOne({ _id: agentId, status: 'ARCHIVED', cancelApprovals: true }, { $unset: { cancelApprovals: '' } });
  return cancelled;
}

/** The sweep behind cancelPendingApprovalsOf: finishes every archive whose follow-up was interrupted. */
export async function finishInterruptedArchives(deps: AppDeps): Promise<number> {
  const marked = await deps.collections.agents.find({ cancelApprovals: true }).limit(100).toArray();
  let cancelled = 0;
  for (const agent of marked) cancelled += await cancelPendingApprovalsOf(deps, agent._id);
  return cancelled;
}
