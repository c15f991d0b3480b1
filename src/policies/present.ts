// Wire shapes of policies and versions (docs/reference/contract.md §2.6), built from stored documents.
import type { PolicyDoc, PolicyVersionDoc } from '../store/collections.ts';
import { iso } from '../timestamps.ts';
import { withCurrentKey } from './candidates.ts';
import type { Static } from 'typebox';
import type { PolicySummary, PolicyVersion, PolicyVersionSummary } from '../../schemas/policies.ts';


export function versionSummary(v: PolicyVersionDoc): Static<typeof PolicyVersionSummary> {
  return {
    id: v._id,
    versionNumber: v.versionNumber,
    status: v.status,
    currencies: v.currencies,
    currencyScope: v.currencyScope,
    ruleCount: v.rules.length,
    merchantCount: v.merchants.length,
    createdAt: v.createdAt.toISOString(),
    activatedAt: iso(v.activatedAt),
    archivedAt: iso(v.archivedAt),
  };
}

export function versionFull(v: PolicyVersionDoc): Static<typeof PolicyVersion> {
  return {
    ...versionSummary(v),
    policyId: v.policyId,
    rules: v.rules.map((r) => ({
      id: r.id,
      ruleType: r.ruleType,
      effect: r.effect,
      periodKind: r.periodKind,
      amountMinor: String(r.amountMinor),
      currency: r.currency,
      ...(r.effect === 'REQUIRE_APPROVAL' ? { approvalsRequired: r.approvalsRequired ?? 1 } : {}),
    })),
    merchants: v.merchants.map(withCurrentKey).map((m) => ({ id: m.id, listType: m.listType, merchantKey: m.merchantKey, label: m.label })),
  };
}

export const isInForce = (p: PolicyDoc) => p.status === 'ACTIVE' && p.activeVersionId !== null;

export function policySummary(p: PolicyDoc, active: PolicyVersionDoc | null): Static<typeof PolicySummary> {
  return {
    id: p._id,
    name: p.name,
    description: p.description,
    scopeType: p.scopeType,
    status: p.status,
    inForce: isInForce(p),
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
    archivedAt: iso(p.archivedAt),
    activeVersion: active ? versionSummary(active) : null,
  };
}
