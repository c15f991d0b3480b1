// The agent's fence (docs/internals/design.md §2). Under snapshot isolation two transactions conflict only when they
// write a document in common. A submission or an answer only *read* the agent, and an archive only
// writes documents that already exist, so both could commit: an archived agent with a new pending
// approval nobody cancels (its hold kept until expiry) and a purchase view saying ENABLED. Writing the
// agent ($inc fence) in the same transaction makes them conflict: one of the two is retried and sees the other.
import type { AppDeps } from '../app-deps.ts';
import type { AgentDoc } from '../store/collections.ts';
import type { StoreSession } from '../store/store.ts';
import type { WriteBatch } from '../store/write-batch.ts';

// The raw collection, not the stamped one: a fence changes nothing any cache holds, and bumping the
// configuration stamp here would make every submission conflict with every other one.
const AGENTS = 'agents';

/** Reads the agent with its fence write (an answer). */
export function fenceAgent(deps: AppDeps, session: StoreSession, filter: Pick<AgentDoc, '_id'> & Partial<Pick<AgentDoc, 'organizationId'>>): Promise<AgentDoc | null> {
  return deps.store.db.collection<AgentDoc>(AGENTS).findOneAndUpdate(filter, { $inc: { fence: 1 } }, { session, returnDocument: 'after' });
}

/**
 * The fence as one more write of the batch, for a transaction that read the agent from the configuration
 * cache at the stamp it read in its own snapshot (a submission). Every change of an agent bumps that stamp,
 * so the agent is as of the snapshot; a change committed after the snapshot conflicts with this write.
 */
export function fenceAgentIn(batch: WriteBatch, agentId: string): void {
  batch.updateOne<AgentDoc>(AGENTS, { _id: agentId }, { $inc: { fence: 1 } }, { unlessMatched: () => new Error(`agent ${agentId} does not exist`) });
}
