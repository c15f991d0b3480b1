// answerApproval: a person answers a pending purchase (DESIGN.md 4 item 7, SPEC.md 3.1). The answer
// re-evaluates against the policies in force now; the hold becomes spend or is released; the approval,
// the purchase, a decision of kind APPROVAL_REEVALUATION, the event and the read models are written in
// one transaction. The approval's version filter makes an answer racing the expiry lose cleanly.
import type { AppDeps } from '../app-deps.ts';
import { ApiError, VersionConflict, invalidRequest, notFound } from '../http/errors.ts';
import { reevaluate } from '../engine/reevaluate.ts';
import { windowKeysFor } from '../engine/periods.ts';
import { engineBase } from '../purchases/input.ts';
import { candidatesFor } from '../policies/candidates.ts';
import { applyBudgetEffects, fencePoliciesOutsideWindows, loadWindows } from '../budgets/windows.ts';
import { fenceAgent } from '../agents/fence.ts';
import { queueEvent } from '../events/outbox.ts';
import { runCommand } from '../commands/run-command.ts';
import { decisionRecorded } from '../metrics/metrics.ts';
import { fromStored } from '../money.ts';
import { PURCHASE_COLLECTIONS, purchaseCollections, type ApprovalDoc, type PurchaseDoc } from '../purchases/documents.ts';
import { WriteBatch } from '../store/write-batch.ts';
import { decisionDocument, purchaseEvent } from '../purchases/submit.ts';
import { projectPurchase } from '../purchases/projection.ts';
import { readback } from '../purchases/present.ts';
import { hasRole } from '../identity/people/roles.ts';

export interface AnswerCommand {
  purchaseId: string;
  answer: 'APPROVE' | 'REJECT';
  personHandle: string;
  comment: string | null;
  /** Set by the dashboard: another organisation's purchase is then indistinguishable from none. */
  organizationId?: string;
}

export const notPending = (state: string) =>
  new ApiError(409, 'approval_not_pending', `This purchase is not waiting for an answer (approval ${state}); nothing was changed.`);

export const notAnApprover = (name: string) =>
  new ApiError(403, 'person_not_approver', `${name} does not have the approver role, so cannot answer approvals; nothing was changed.`);

export async function answerApproval(deps: AppDeps, cmd: AnswerCommand) {
  const pc = purchaseCollections(deps.store.db);
  const first = await pc.purchases.findOne({ _id: cmd.purchaseId, ...(cmd.organizationId ? { organizationId: cmd.organizationId } : {}) });
  if (!first) throw notFound('purchase request');
  const answered = await deps.mailboxes.run(first.agentId, (applied) =>
    runCommand(deps.store, async (session) => {
      const now = deps.now();
      const purchase = await pc.purchases.findOne({ _id: cmd.purchaseId }, { session });
      if (!purchase) throw notFound('purchase request');
      const approval = purchase.approvalId ? await pc.approvals.findOne({ _id: purchase.approvalId }, { session }) : null;
      if (!approval) throw new ApiError(409, 'approval_not_pending', 'Nobody was asked about this purchase; there is nothing to answer.');
      if (approval.state !== 'PENDING') throw notPending(approval.state);
      if (approval.expiresAt.getTime() <= now.getTime()) throw notPending('past its expiry');
      const person = await deps.collections.people.findOne({ organizationId: purchase.organizationId, handle: cmd.personHandle }, { session });
      if (!person) throw invalidRequest([{ path: 'person', code: 'UNKNOWN_PERSON', message: `No person with handle "${cmd.personHandle}" in this organisation.` }]);
      if (!hasRole(person, 'approver')) throw notAnApprover(person.name);
      const org = await deps.collections.organizations.findOne({ _id: purchase.organizationId }, { session });
      const agent = await fenceAgent(deps, session, { _id: purchase.agentId });
      if (!org || !agent) throw new Error(`purchase ${purchase._id} refers to a missing organisation or agent`);

      const candidates = await candidatesFor(deps.collections, org._id, agent._id, session);
      const base = engineBase({
        mode: 'CURRENT_POLICIES',
        purchase: { ...purchase, amountMinor: fromStored(purchase.amountMinor) },
        agent,
        policies: candidates,
        now,
        timeZone: org.timezone,
        periodInstant: purchase.requestedAt,
      });
      const loaded = await loadWindows(deps.store.db, windowKeysFor(base), session, purchase.windowIds);
      const result = reevaluate(
        { ...base, windows: loaded.states },
        { answer: cmd.answer, escalatedVersionIds: approval.escalatedVersionIds, heldWindowIds: purchase.windowIds, escalationReasonCodes: approval.escalationReasonCodes },
      );

      const approved = result.outcome === 'APPROVED';
      const batch = new WriteBatch(deps.store.db);
      batch.updateOne<ApprovalDoc>(
        PURCHASE_COLLECTIONS.approvals,
        { _id: approval._id, version: approval.version, state: 'PENDING' },
        { $set: { state: approved ? 'APPROVED' : 'REJECTED', resolvedAt: now, resolvedBy: { name: person.name, personId: person._id }, comment: cmd.comment, version: approval.version + 1 } },
        { unlessMatched: () => new VersionConflict(`approval ${approval._id}`) },
      );
      const policyNames = new Map(candidates.map((c) => [c.policyId, c.policyName]));
      const windowIds = await applyBudgetEffects(deps.store.db, session, batch, org._id, loaded, result.effects.budget, result.effects.crossings, now, policyNames);
      if (approved) {
        fencePoliciesOutsideWindows(batch, { policyIds: result.policiesConsidered.map((p) => p.policyId), currency: purchase.currency, requestedAt: purchase.requestedAt, timeZone: org.timezone, windowIds });
      }

      const decision = decisionDocument(result, purchase._id, org._id, 'APPROVAL_REEVALUATION', now);
      batch.insertOne(PURCHASE_COLLECTIONS.decisions, decision);
      const next = {
        ...purchase,
        status: result.outcome,
        resolvedAt: now,
        decisionId: decision._id,
        policyVersionIds: result.policiesConsidered.map((p) => p.policyVersionId),
        windowIds: approved ? windowIds : [],
        version: purchase.version + 1,
      };
      batch.updateOne<PurchaseDoc>(
        PURCHASE_COLLECTIONS.purchases,
        { _id: purchase._id, version: purchase.version },
        { $set: { status: next.status, resolvedAt: now, decisionId: decision._id, policyVersionIds: next.policyVersionIds, windowIds: next.windowIds, version: next.version } },
        { unlessMatched: () => new VersionConflict(`purchase ${purchase._id}`) },
      );
      const resolvedApproval = { ...approval, state: approved ? ('APPROVED' as const) : ('REJECTED' as const), resolvedAt: now, resolvedBy: { name: person.name, personId: person._id }, comment: cmd.comment, version: approval.version + 1 };
      await queueEvent(deps.store.db, session, batch, purchaseEvent(next, decision, resolvedApproval));
      const agentView = { id: agent._id, name: agent.name, status: agent.status };
      projectPurchase(batch, {
        purchase: next,
        decision,
        approval: resolvedApproval,
        agent: agentView,
        policyIds: result.policiesConsidered.map((p) => p.policyId),
        timeZone: org.timezone,
        previousStatus: purchase.status,
      });
      await batch.write(session);
      return { purchase: readback(next, agentView, decision, resolvedApproval) };
    }, { onApplied: applied }),
  );
  if (answered.purchase.decision) decisionRecorded(answered.purchase.decision, 'APPROVAL_REEVALUATION');
  return answered;
}
