// Ending a pending approval without a person's answer: it expired (nobody answered by expiresAt) or
// was cancelled (its agent was archived). The hold is released, the purchase is refused, and a
// decision records why (kinds APPROVAL_EXPIRED / APPROVAL_CANCELLED, outcome REJECTED), so that a
// client polling the readback finds the answer in decision.outcome (SPEC.md 3.1). Idempotent: an
// approval that is no longer PENDING is left alone, so a job that runs twice changes nothing twice.
import type { AppDeps } from '../app-deps.ts';
import { VersionConflict } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { ENGINE_VERSION } from '../engine/version.ts';
import type { BudgetEffect } from '../engine/types.ts';
import { applyBudgetEffects, loadWindows } from '../budgets/windows.ts';
import { recordEvent } from '../events/outbox.ts';
import { runCommand } from '../commands/run-command.ts';
import { fromStored } from '../money.ts';
import type { StoreSession } from '../store/store.ts';
import { purchaseCollections, type ApprovalDoc, type DecisionDoc } from '../purchases/documents.ts';
import { projectPurchase } from '../purchases/projection.ts';
import { approvalExpired, decisionRecorded } from '../metrics/metrics.ts';

export type ClosingState = 'EXPIRED' | 'CANCELLED';

/** Closes one approval inside the caller's transaction. Returns null when it was not PENDING (or not yet due). */
export async function closeApprovalIn(deps: AppDeps, session: StoreSession, approvalId: string, state: ClosingState, now: Date): Promise<{ approval: ApprovalDoc; decision: DecisionDoc } | null> {
  const pc = purchaseCollections(deps.store.db);
  const approval = await pc.approvals.findOne({ _id: approvalId }, { session });
  if (!approval || approval.state !== 'PENDING') return null;
  if (state === 'EXPIRED' && approval.expiresAt.getTime() > now.getTime()) return null;
  const purchase = await pc.purchases.findOne({ _id: approval.purchaseId }, { session });
  if (!purchase) throw new Error(`approval ${approvalId} has no purchase`);
  const org = await deps.collections.organizations.findOne({ _id: purchase.organizationId }, { session });
  const agent = await deps.collections.agents.findOne({ _id: purchase.agentId }, { session });
  if (!org || !agent) throw new Error(`purchase ${purchase._id} refers to a missing organisation or agent`);

  const updated = await pc.approvals.updateOne(
    { _id: approval._id, version: approval.version, state: 'PENDING' },
    { $set: { state, resolvedAt: now, version: approval.version + 1 } },
    { session },
  );
  if (updated.matchedCount === 0) throw new VersionConflict(`approval ${approval._id}`);

  const loaded = await loadWindows(deps.store.db, [], session, purchase.windowIds);
  const amount = fromStored(purchase.amountMinor);
  const releases: BudgetEffect[] = purchase.windowIds.map((id) => ({ operation: 'RELEASE_HOLD', windowId: id, window: null, budgetCounterId: id, amountMinor: amount }));
  await applyBudgetEffects(deps.store.db, session, org._id, loaded, releases, [], now, new Map());

  const expired = state === 'EXPIRED';
  const decision: DecisionDoc = {
    _id: newId(),
    purchaseId: purchase._id,
    organizationId: org._id,
    kind: expired ? 'APPROVAL_EXPIRED' : 'APPROVAL_CANCELLED',
    outcome: 'REJECTED',
    reasonCodes: expired ? approval.escalationReasonCodes : ['AGENT_DISABLED'],
    explanation: expired
      ? 'Rejected: nobody answered the approval request before it expired, so the purchase was refused and its budget hold released.'
      : 'Rejected: the agent was archived while the purchase waited for a person, so the request was cancelled and its budget hold released.',
    evaluatedAt: now,
    engineVersion: ENGINE_VERSION,
    policyVersions: [],
    ruleEvaluations: [],
  };
  await pc.decisions.insertOne(decision, { session });
  const next = { ...purchase, status: state, resolvedAt: now, decisionId: decision._id, windowIds: [], version: purchase.version + 1 };
  const moved = await pc.purchases.updateOne(
    { _id: purchase._id, version: purchase.version },
    { $set: { status: state, resolvedAt: now, decisionId: decision._id, windowIds: [], version: next.version } },
    { session },
  );
  if (moved.matchedCount === 0) throw new VersionConflict(`purchase ${purchase._id}`);
  const closed: ApprovalDoc = { ...approval, state, resolvedAt: now, version: approval.version + 1 };
  if (expired) {
    await recordEvent(deps.store.db, session, {
      type: 'purchase.approval_expired',
      organizationId: org._id,
      createdAt: now,
      data: {
        purchaseRequestId: purchase._id,
        approvalRequestId: approval._id,
        agentId: purchase.agentId,
        status: 'EXPIRED',
        amountMinor: String(purchase.amountMinor),
        currency: purchase.currency,
        merchant: purchase.merchant,
        expiresAt: approval.expiresAt.toISOString(),
      },
    });
  }
  await projectPurchase(deps.store.db, session, {
    purchase: next,
    decision,
    approval: closed,
    agent: { id: agent._id, name: agent.name, status: agent.status },
    policyIds: [],
    timeZone: org.timezone,
    previousStatus: purchase.status,
  });
  return { approval: closed, decision };
}

export async function expireApproval(deps: AppDeps, approvalId: string): Promise<boolean> {
  const closed = await runCommand(deps.store, (session) => closeApprovalIn(deps, session, approvalId, 'EXPIRED', deps.now()));
  if (closed === null) return false;
  decisionRecorded(closed.decision, closed.decision.kind);
  approvalExpired((closed.decision.evaluatedAt.getTime() - closed.approval.expiresAt.getTime()) / 1000);
  return true;
}

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
 * a batch at a time (DESIGN.md 2: bounded work per transaction; a busy agent can always be archived).
 * Idempotent and resumable: closeApprovalIn leaves anything no longer PENDING alone, the agent's
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
      if (await runCommand(deps.store, (session) => closeApprovalIn(deps, session, a._id, 'CANCELLED', deps.now()))) cancelled++;
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
