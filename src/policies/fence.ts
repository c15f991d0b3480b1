// The policy's fence (docs/internals/design.md §2). Every change of what is in force (a version activated,
// a status or scope changed) writes the policy document; a transaction that must not commit beside such a
// change, having only read it, writes the policy too, so that under snapshot isolation one of the two
// conflicts and is retried on what the other did: an approval that wrote none of the policy's windows
// (policiesToFence in src/budgets/window-writes.ts) and the start of a draft's shadow (shadows.ts).
import type { StoreDb, StoreSession } from '../store/store.ts';
import type { WriteBatch } from '../store/write-batch.ts';

// The raw collection, not the stamped one: a fence changes nothing any cache holds, and bumping the
// configuration stamp here would make every such transaction conflict with every other one.
const POLICIES = 'policies';
type Fenced = { _id: string; fence?: number };

export async function fencePolicy(db: StoreDb, session: StoreSession, policyId: string): Promise<void> {
  await db.collection<Fenced>(POLICIES).updateOne({ _id: policyId }, { $inc: { fence: 1 } }, { session });
}

/** The fence as one more write of a command's batch. */
export function fencePolicyIn(batch: WriteBatch, policyId: string): void {
  batch.updateOne<Fenced>(POLICIES, { _id: policyId }, { $inc: { fence: 1 } });
}
