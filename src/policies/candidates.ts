// The policies the engine reads for an agent, mapped from stored documents into engine candidates.
// ACTIVE versions are immutable (docs/reference/contract.md §3.2), so their mapped form is cached by id.
import type { MerchantEntry, PolicyCandidate, PolicyVersionInput } from '../engine/types.ts';
import { merchantKey } from '../engine/merchant-key.ts';
import type { Collections, PolicyDoc, PolicyVersionDoc } from '../store/collections.ts';
import type { StoreSession } from '../store/store.ts';

const activeCache = new Map<string, PolicyVersionInput>();
const CACHE_LIMIT = 5000;

/**
 * A stored entry with its key derived again from its label. The key stored with an entry is the one
 * merchantKey gave when the version was written; the function has changed since (confusable skeletons)
 * and may again, and ACTIVE versions are immutable, so everything that matches or shows a key
 * derives it from the label at read time instead of trusting the stored one (the engine's versions are
 * cached, so this runs once per version, not per purchase).
 */
export function withCurrentKey<T extends Pick<MerchantEntry, 'label' | 'merchantKey'>>(m: T): T {
  const key = merchantKey(m.label);
  return key === m.merchantKey ? m : { ...m, merchantKey: key };
}

export function toEngineVersion(v: PolicyVersionDoc): PolicyVersionInput {
  return {
    id: v._id,
    versionNumber: v.versionNumber,
    status: v.status,
    currencies: v.currencies,
    currencyScope: v.currencyScope,
    rules: v.rules.map((r) => ({ ...r, amountMinor: BigInt(r.amountMinor) })),
    merchants: v.merchants.map(withCurrentKey),
  };
}

export function toCandidate(p: PolicyDoc, version: PolicyVersionInput): PolicyCandidate {
  return { policyId: p._id, policyName: p.name, policyStatus: p.status, scopeType: p.scopeType, agentIds: p.agentIds, version };
}

/** Policies in force that govern the agent: ACTIVE, with an ACTIVE version, scoped to the organisation or listing the agent. */
export async function candidatesFor(
  c: Collections,
  organizationId: string,
  agentId: string,
  session?: StoreSession,
): Promise<PolicyCandidate[]> {
  const opts = session ? { session } : {};
  // An organisation has tens of policies: fetch its active ones by the indexed equality and pick the
  // agent's here, which keeps the query a plain equality match on both engines.
  const policies = (await c.policies.find({ organizationId, status: 'ACTIVE' }, opts).toArray()).filter(
    (p) => p.activeVersionId !== null && (p.scopeType === 'ORGANIZATION' || p.agentIds.includes(agentId)),
  );
  return inForce(c, policies, session);
}

/** The policies among `policyIds` that are in force (ACTIVE, with an ACTIVE version), whatever agents they govern. */
export async function candidatesAmong(c: Collections, policyIds: readonly string[], session?: StoreSession): Promise<PolicyCandidate[]> {
  if (policyIds.length === 0) return [];
  const policies = await c.policies.find({ _id: { $in: [...policyIds] }, status: 'ACTIVE' }, session ? { session } : {}).toArray();
  return inForce(c, policies.filter((p) => p.activeVersionId !== null), session);
}

async function inForce(c: Collections, policies: PolicyDoc[], session?: StoreSession): Promise<PolicyCandidate[]> {
  const wanted = policies.map((p) => p.activeVersionId!).filter((id) => !activeCache.has(id));
  if (wanted.length > 0) {
    const versions = await c.policyVersions.find({ _id: { $in: wanted } }, session ? { session } : {}).toArray();
    if (activeCache.size + versions.length > CACHE_LIMIT) activeCache.clear();
    for (const v of versions) if (v.status !== 'DRAFT') activeCache.set(v._id, toEngineVersion(v));
  }
  return policies.flatMap((p) => {
    const version = activeCache.get(p.activeVersionId!);
    // A version is cached only once it is ACTIVE or ARCHIVED, and those never change again.
    return version ? [toCandidate(p, { ...version, status: 'ACTIVE' })] : [];
  });
}
