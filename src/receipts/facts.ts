// What a receipt says about a decision, from the stored purchase and decision: used to sign it
// (src/purchases/lifecycle.ts) and, by verify-log (src/receipts/audit.ts), to check that what is
// stored now is still what was signed then.
import type { DecisionDoc, PurchaseDoc } from '../purchases/documents.ts';
import { bodySha256, type DecisionFacts } from './chain.ts';

export function receiptFacts(issuer: string, purchase: PurchaseDoc, decision: DecisionDoc): DecisionFacts {
  return {
    iss: issuer,
    organizationId: purchase.organizationId,
    agentId: purchase.agentId,
    purchaseRequestId: purchase._id,
    decisionId: decision._id,
    kind: decision.kind as DecisionFacts['kind'],
    outcome: decision.outcome,
    reasonCodes: [...decision.reasonCodes],
    amountMinor: String(purchase.amountMinor),
    currency: purchase.currency,
    merchant: purchase.merchant,
    evaluatedAt: decision.evaluatedAt.toISOString(),
    policyVersionIds: decision.policyVersions.map((p) => p.policyVersionId),
    requestSha256: bodySha256(purchase.requestBody),
  };
}
