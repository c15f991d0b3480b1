// Changing an agent's status (operator API, manifests), in the caller's transaction: emits
// agent.disabled / agent.archived (SPEC.md 3.3, 6.2), keeps the purchase readbacks' agent status
// current, and cancels an archived agent's pending approvals (their holds are released).
import type { AppDeps } from '../app-deps.ts';
import type { AgentDoc, AgentStatus } from '../store/collections.ts';
import type { StoreSession } from '../store/store.ts';
import { recordEvent } from '../events/outbox.ts';
import { cancelPendingApprovalsOf } from '../approvals/close.ts';
import { views } from '../purchases/projection.ts';

export async function changeAgentStatus(deps: AppDeps, session: StoreSession, agent: AgentDoc, status: AgentStatus, now: Date): Promise<AgentDoc> {
  if (agent.status === status) return agent;
  await deps.collections.agents.updateOne({ _id: agent._id }, { $set: { status, updatedAt: now } }, { session });
  const updated = { ...agent, status, updatedAt: now };
  await views(deps.store.db).purchaseViews.updateMany({ agentId: agent._id }, { $set: { 'readback.agent.status': status } }, { session });
  if (status === 'DISABLED' || status === 'ARCHIVED') {
    await recordEvent(deps.store.db, session, {
      type: status === 'DISABLED' ? 'agent.disabled' : 'agent.archived',
      organizationId: agent.organizationId,
      createdAt: now,
      data: { agentId: agent._id, agentName: agent.name, previousStatus: agent.status, status },
    });
  }
  if (status === 'ARCHIVED') await cancelPendingApprovalsOf(deps, session, agent._id, now);
  return updated;
}
