// The agent's fence (DESIGN.md 2). Under snapshot isolation two transactions conflict only when they
// write a document in common. A submission or an answer only *read* the agent, and an archive only
// writes documents that already exist, so both could commit: an archived agent with a new pending
// approval nobody cancels (its hold kept until expiry) and a purchase view saying ENABLED. Reading the
// agent with a write ($inc fence) makes them conflict: one of the two is retried and sees the other.
import type { AppDeps } from '../app-deps.ts';
import type { AgentDoc } from '../store/collections.ts';
import type { StoreSession } from '../store/store.ts';

export function fenceAgent(deps: AppDeps, session: StoreSession, filter: Pick<AgentDoc, '_id'> & Partial<Pick<AgentDoc, 'organizationId'>>): Promise<AgentDoc | null> {
  // The raw collection, not the stamped one: a fence changes nothing any cache holds, and bumping the
  // configuration stamp here would make every submission conflict with every other one.
  return deps.store.db.collection<AgentDoc>('agents').findOneAndUpdate(filter, { $inc: { fence: 1 } }, { session, returnDocument: 'after' });
}
