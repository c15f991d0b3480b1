// GET /v1/purchase-requests/{id} (SPEC.md 4.2): reads the purchase_views read model. Only the
// credential that submitted a purchase may read it; everything else is the same 404. Writes nothing.
// A DASHBOARD purchase was submitted by no credential: a person made it on behalf of an agent, so
// every credential acting as that agent may read it (README, decisions where the contract is silent).
import type { StoreDb } from '../store/store.ts';
import type { Principal } from '../http/auth.ts';
import { notFound } from '../http/errors.ts';
import { views } from './projection.ts';

export async function getPurchase(db: StoreDb, principal: Principal, purchaseId: string) {
  const submitterId = principal.kind === 'API_KEY' ? principal.apiKeyId : principal.connectionId;
  const view = await views(db).purchaseViews.findOne({
    _id: purchaseId,
    organizationId: principal.organizationId,
    $or: [{ submitterId }, ...(principal.agentId ? [{ agentId: principal.agentId, 'readback.origin': 'DASHBOARD' as const }] : [])],
  });
  if (!view) throw notFound('purchase request');
  return { purchase: view.readback };
}
