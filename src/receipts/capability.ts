// What decision receipts contribute (docs/integrate/receipts.md): the collections of signing keys, chain
// heads and receipts (the JWKS route is surface.ts). The receipts themselves are written with their decisions
// (src/purchases/record-writer.ts) and read back under the purchase routes.
import type { Capability } from '../capability.ts';
import { RECEIPT_COLLECTIONS } from './documents.ts';

export const receipts: Capability = {
  name: 'receipts',
  collections: [RECEIPT_COLLECTIONS.keys, RECEIPT_COLLECTIONS.chains],
  indexes: [
    // The chain in order (export-log, verify-log); unique: one receipt per place in the chain.
    { collection: RECEIPT_COLLECTIONS.receipts, keys: { organizationId: 1, seq: 1 }, options: { unique: true } },
    // A purchase's receipts in order.
    { collection: RECEIPT_COLLECTIONS.receipts, keys: { purchaseId: 1, seq: 1 } },
  ],
};
