// What decision receipts contribute (docs/integrate/receipts.md): the JWKS route, and the collections of
// signing keys, chain heads and receipts. The receipts themselves are written with their decisions
// (src/purchases/record-writer.ts) and read back under the purchase routes.
import type { Capability } from '../capability.ts';
import { RECEIPT_COLLECTIONS } from './documents.ts';
import { receiptRoutes } from './routes.ts';

export const receipts: Capability = {
  name: 'receipts',
  routes: (deps) => [receiptRoutes(deps)],
  collections: [RECEIPT_COLLECTIONS.keys, RECEIPT_COLLECTIONS.chains],
  indexes: [
    // The chain in order (export-log, verify-log); unique: one receipt per place in the chain.
    { collection: RECEIPT_COLLECTIONS.receipts, keys: { organizationId: 1, seq: 1 }, options: { unique: true } },
    // A purchase's receipts in order.
    { collection: RECEIPT_COLLECTIONS.receipts, keys: { purchaseId: 1, seq: 1 } },
  ],
};
