// What a command that records a decision reads for its receipt, inside its transaction: the
// organisation's chain head (one read) and the signing key (cached at the configuration stamp the
// command already read). The record writes the new head at the seq read (src/purchases/record-writer.ts):
// a concurrent decision of the same organisation makes it a VersionConflict, and the command runs again.
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
  const doc = await receiptCollections(deps.store.db).chains.findOne({ _id: organizationId }, { session });
  const key = await currentSigningKey(deps.store.db, session, deps.config.webhookEncryptionKey);
  return { chain: doc ? { seq: doc.seq, head: doc.head } : EMPTY_CHAIN, key, issuer: deps.config.baseUrl };
}
