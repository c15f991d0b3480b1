// Changing an agent's status (operator API, manifests), in the caller's transaction: emits
// agent.disabled / agent.archived (docs/reference/contract.md §3.3, §6.2). The transaction writes one agent document, however
// busy the agent (docs/internals/design.md §2, bounded work per transaction): purchase readbacks read the agent's status
// when they are read (src/purchases/read.ts), and an archived agent's pending approvals are cancelled
// after the commit, one transaction each (finishAgentArchive).
import type { UpdateFilter } from 'mongodb';
import type { AppDeps } from '../app-deps.ts';
import type { AgentDoc, AgentStatus } from '../store/collections.ts';
import type { StoreSession } from '../store/store.ts';
import { recordEvent } from '../events/outbox.ts';
import { cancelPendingApprovalsOf } from '../approvals/close.ts';

export async function changeAgentStatus(deps: AppDeps, session: StoreSession, agent: AgentDoc, status: AgentStatus, now: Date): Promise<AgentDoc> {
  if (agent.status === status) return agent;
  // This write is also the agent's fence: a submission or an answer racing it writes the same document,
  // so under snapshot isolation one of the two transactions conflicts and is retried.
  // `cancelApprovals` marks an archive whose follow-up is not finished (the approval sweep resumes it).
  const update: UpdateFilter<AgentDoc> = status === 'ARCHIVED'
    ? { $set: { status, updatedAt: now, cancelApprovals: true }, $inc: { fence: 1 } }
    : { $set: { status, updatedAt: now }, $unset: { cancelApprovals: '' }, $inc: { fence: 1 } };
  await deps.collections.agents.updateOne({ _id: agent._id }, update, { session });
  if (status === 'DISABLED' || status === 'ARCHIVED') {
    await recordEvent(deps.store.db, session, {
      type: status === 'DISABLED' ? 'agent.disabled' : 'agent.archived',
      organizationId: agent.organizationId,
      createdAt: now,
      data: { agentId: agent._id, agentName: agent.name, previousStatus: agent.status, status },
    });
  }
  return { ...agent, status, updatedAt: now };
}

/** Run after the transaction that changed the status committed. */
export async function finishAgentStatusChange(deps: AppDeps, agent: Pick<AgentDoc, '_id' | 'status'>): Promise<void> {
  if (agent.status === 'ARCHIVED') await cancelPendingApprovalsOf(deps, agent._id);
}
