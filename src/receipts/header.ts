// The Decision-Receipt response header (docs/integrate/receipts.md#where-you-get-them): the receipt of the
// decision a response reports, when it fits. A receipt names every policy version its decision
// considered, so an agent under hundreds of policies has one of many kilobytes; HTTP clients and proxies
// refuse a response whose headers pass 8 to 16 KiB (Node's fetch: 16 KiB), and the answer to a purchase
// already recorded would be lost. Such a receipt is only listed (GET /v1/purchase-requests/{id}/receipts).
import type { Context } from 'koa';

/** The longest receipt sent as a header, in characters (a compact JWS is ASCII). */
export const RECEIPT_HEADER_MAX = 8192;

export function setReceiptHeader(ctx: Context, receipt: string | undefined): void {
  if (receipt !== undefined && receipt.length <= RECEIPT_HEADER_MAX) ctx.set('Decision-Receipt', receipt);
}
