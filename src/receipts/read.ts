// Reading receipts back: a purchase's (GET /v1/purchase-requests/{id}/receipts, after the caller was
// found allowed to read the purchase), and an organisation's chain in order (the auditor's export).
import type { StoreDb } from '../store/store.ts';
import { receiptCollections, type ReceiptDoc } from './documents.ts';

export async function receiptsOfPurchase(db: StoreDb, organizationId: string, purchaseId: string): Promise<{ receipts: { seq: number; receipt: string }[] }> {
  const docs = await receiptCollections(db).receipts.find({ purchaseId, organizationId }, { sort: { seq: 1 } }).toArray();
  return { receipts: docs.map((d) => ({ seq: d.seq, receipt: d.jws })) };
}

/** An organisation's receipts from `fromSeq` on, in chain order, a page at a time. */
export async function* chainOf(db: StoreDb, organizationId: string, fromSeq = 1, page = 1000): AsyncGenerator<ReceiptDoc> {
  let next = fromSeq;
  for (;;) {
    const docs = await receiptCollections(db).receipts.find({ organizationId, seq: { $gte: next } }, { sort: { seq: 1 }, limit: page }).toArray();
    yield* docs;
    if (docs.length < page) return;
    next = docs[docs.length - 1].seq + 1;
  }
}
