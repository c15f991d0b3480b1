// Changing an agent's status (operator API, manifests). Emits agent.disabled / agent.archived
// (SPEC.md 3.3, 6.2) in the same transaction.
import type { AgentDoc, AgentStatus, Collections } from '../store/collections.ts';
import type { StoreDb, StoreSession } from '../store/store.ts';
import { recordEvent } from '../events/outbox.ts';

export type AgentStatusHook = (agent: AgentDoc, session: StoreSession, now: Date) => Promise<void>;

export async function changeAgentStatus(
  deps: { db: StoreDb; collections: Collections; onArchived?: AgentStatusHook },
  session: StoreSession,
  agent: AgentDoc,
  status: AgentStatus,
  now: Date,
): Promise<AgentDoc> {
  if (agent.status === status) return agent;
  await deps.collections.agents.updateOne({ _id: agent._id }, { $set: { status, updatedAt: now } }, { session });
  const updated = { ...agent, status, updatedAt: now };
  if (status === 'DISABLED' || status === 'ARCHIVED') {
    await recordEvent(deps.db, session, {
      type: status === 'DISABLED' ? 'agent.disabled' : 'agent.archived',
      organizationId: agent.organizationId,
      createdAt: now,
      data: { agentId: agent._id, agentName: agent.name, previousStatus: agent.status, status },
    });
  }
  if (status === 'ARCHIVED' && deps.onArchived) await deps.onArchived(updated, session, now);
  return updated;
}
