// Ending a pending approval without a person's answer: it expired (nobody answered by expiresAt) or
// was cancelled (its agent was archived). The hold is released, the purchase is refused, and a
// decision records why (kinds APPROVAL_EXPIRED / APPROVAL_CANCELLED, outcome REJECTED), so that a
// client polling the readback finds the answer in decision.outcome (docs/reference/contract.md §3.1). Idempotent: an
// approval that is no longer PENDING is left alone, so a job that runs twice changes nothing twice.
import type { AppDeps } from '../app-deps.ts';
import { VersionConflict } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { ENGINE_VERSION } from '../engine/version.ts';
import type { BudgetEffect } from '../engine/types.ts';
import { applyBudgetEffects, loadWindows } from '../budgets/windows.ts';
import { queueEvent } from '../events/outbox.ts';
import { runCommand } from '../commands/run-command.ts';
import { fromStored } from '../money.ts';
import type { StoreSession } from '../store/store.ts';
import { PURCHASE_COLLECTIONS, purchaseCollections, type ApprovalDoc, type DecisionDoc, type PurchaseDoc } from '../purchases/documents.ts';
import { WriteBatch } from '../store/write-batch.ts';
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

  const loaded = await loadWindows(deps.store.db, [], session, purchase.windowIds);
  const batch = new WriteBatch(deps.store.db);
  batch.updateOne<ApprovalDoc>(
    PURCHASE_COLLECTIONS.approvals,
    { _id: approval._id, version: approval.version, state: 'PENDING' },
    { $set: { state, resolvedAt: now, version: approval.version + 1 } },
    { unlessMatched: () => new VersionConflict(`approval ${approval._id}`) },
  );
  const amount = fromStored(purchase.amountMinor);
  const releases: BudgetEffect[] = purchase.windowIds.map((id) => ({ operation: 'RELEASE_HOLD', windowId: id, window: null, budgetCounterId: id, amountMinor: amount }));
  await applyBudgetEffects(deps.store.db, session, batch, org._id, loaded, releases, [], now, new Map());

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
  batch.insertOne(PURCHASE_COLLECTIONS.decisions, decision);
  const next = { ...purchase, status: state, resolvedAt: now, decisionId: decision._id, windowIds: [], version: purchase.version + 1 };
  batch.updateOne<PurchaseDoc>(
    PURCHASE_COLLECTIONS.purchases,
    { _id: purchase._id, version: purchase.version },
    { $set: { status: state, resolvedAt: now, decisionId: decision._id, windowIds: [], version: next.version } },
    { unlessMatched: () => new VersionConflict(`purchase ${purchase._id}`) },
  );
  const closed: ApprovalDoc = { ...approval, state, resolvedAt: now, version: approval.version + 1 };
  if (expired) {
    await queueEvent(deps.store.db, session, batch, {
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
  projectPurchase(batch, {
    purchase: next,
    decision,
    approval: closed,
    agent: { id: agent._id, name: agent.name, status: agent.status },
    policyIds: [],
    timeZone: org.timezone,
    previousStatus: purchase.status,
  });
  await batch.write(session);
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
 * a batch at a time (docs/internals/design.md §2: bounded work per transaction; a busy agent can always be archived).
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
