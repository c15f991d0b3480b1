// What a command that records a decision needs for its receipt: the organisation's chain head, as its
// actor remembers it from the last decision (src/commands/organization-actors.ts), else read in the
// command's transaction; and the signing key (cached at the configuration stamp the command already
// read). The record writes the new head at the seq and head it started from (src/purchases/record-writer.ts): a
// decision of the organisation committed meanwhile by another process makes it a VersionConflict, and
// the command runs again, reading the head from the store.
import type { AppDeps } from '../app-deps.ts';
import type { StoreSession } from '../store/store.ts';
import { EMPTY_CHAIN, type ChainHead, type ReceiptKey } from './chain.ts';
import { receiptCollections } from './documents.ts';
import { currentSigningKey } from './keys.ts';

/** What signing a decision's receipt needs (PurchaseState.receipts). */
export interface ReceiptContext {
  chain: ChainHead;
  key: ReceiptKey;
  issuer: string;
}

export async function loadReceiptContext(deps: AppDeps, session: StoreSession, organizationId: string): Promise<ReceiptContext> {
  const chain = deps.actors.memory(organizationId).receiptChain ?? (await readChain(deps, session, organizationId));
  const key = await currentSigningKey(deps.store.db, session, deps.config, deps.log);
  return { chain, key, issuer: deps.config.baseUrl };
}

async function readChain(deps: AppDeps, session: StoreSession, organizationId: string): Promise<ChainHead> {
  const doc = await receiptCollections(deps.store.db).chains.findOne({ _id: organizationId }, { session });
  return doc ? { seq: doc.seq, head: doc.head } : EMPTY_CHAIN;
}
