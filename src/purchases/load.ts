// What a command on an existing purchase reads, inside its transaction: the purchase, its approval,
// organisation and agent, and the budget windows it holds. An answer also reads the policies in force
// now and their windows for the purchase's period, to re-evaluate against them, and the person answering.
import type { AppDeps } from '../app-deps.ts';
import { notFound } from '../http/errors.ts';
import { windowKeysFor } from '../engine/periods.ts';
import { candidatesAmong, candidatesFor } from '../policies/candidates.ts';
import { loadWindows } from '../budgets/windows.ts';
import { fromStored } from '../money.ts';
import type { StoreSession } from '../store/store.ts';
import { purchaseCollections } from './documents.ts';
import { engineBase } from './input.ts';
import type { PurchaseState } from './lifecycle.ts';
import { loadReceiptContext } from '../receipts/load.ts';
import { samePersonIds } from '../identity/people/roles.ts';

export async function loadPurchaseState(deps: AppDeps, session: StoreSession, purchaseId: string, now: Date, { answeredBy }: { answeredBy: string | null }): Promise<PurchaseState> {
  const pc = purchaseCollections(deps.store.db);
  const purchase = await pc.purchases.findOne({ _id: purchaseId }, { session });
  if (!purchase) throw notFound('purchase request');
  const approval = purchase.approvalId ? await pc.approvals.findOne({ _id: purchase.approvalId }, { session }) : null;
  const organization = await deps.collections.organizations.findOne({ _id: purchase.organizationId }, { session });
  const agent = await deps.collections.agents.findOne({ _id: purchase.agentId }, { session });
  if (!organization || !agent) throw new Error(`purchase ${purchase._id} refers to a missing organisation or agent`);
  if (answeredBy === null) {
    const windows = await loadWindows(deps.store.db, [], session, purchase.windowIds, deps.actors.memory(organization._id).windows);
    return { organization, agent, candidates: [], windows, purchase, approval };
  }
  const person = await deps.collections.people.findOne({ organizationId: organization._id, handle: answeredBy }, { session });
  const personIds = person ? await samePersonIds(deps.collections.people, organization._id, person.email, session) : [];
  const candidates = await candidatesFor(deps.collections, organization._id, agent._id, session);
  const base = engineBase({
    mode: 'CURRENT_POLICIES',
    purchase: { ...purchase, amountMinor: fromStored(purchase.amountMinor) },
    agent,
    policies: candidates,
    now,
    timeZone: organization.timezone,
    periodInstant: purchase.requestedAt,
  });
  const windows = await loadWindows(deps.store.db, windowKeysFor(base), session, purchase.windowIds, deps.actors.memory(organization._id).windows);
  // Policies that hold the purchase but no longer govern its agent still limit their windows for others.
  const governing = new Set(candidates.map((c) => c.policyId));
  const heldOnly = [...new Set(purchase.windowIds.map((id) => windows.docs.get(id)?.policyId).filter((id) => id !== undefined && !governing.has(id)))] as string[];
  const heldPolicies = await candidatesAmong(deps.collections, heldOnly, session);
  // An answer is a decision: its receipt is the organisation's next.
  const receipts = await loadReceiptContext(deps, session, organization._id);
  return { organization, agent, candidates, heldPolicies, windows, purchase, approval, person, personIds, receipts };
}
