// Wire shapes of policies and versions (docs/reference/contract.md §2.6), built from stored documents.
import type { PolicyDoc, PolicyVersionDoc } from '../store/collections.ts';
import { iso } from '../timestamps.ts';
import { withCurrentKey } from './candidates.ts';
import type { Static } from 'typebox';
import type { PolicySummary, PolicyVersion, PolicyVersionSummary } from '../../schemas/policies.ts';


/** What a PolicyVersionSummary is made of: a version without its rules and merchant entries, only their counts. */
export type VersionSummaryDoc = Pick<PolicyVersionDoc, '_id' | 'versionNumber' | 'status' | 'currencies' | 'currencyScope' | 'createdAt' | 'activatedAt' | 'archivedAt'> & {
  ruleCount: number;
  merchantCount: number;
};

/**
 * The find projection giving a VersionSummaryDoc: the store counts the rules and merchant entries ($size)
 * and sends neither, so a policy's list of versions costs a few fields a version however long its lists.
 */
export const VERSION_SUMMARY_PROJECTION = {
  versionNumber: 1,
  status: 1,
  currencies: 1,
  currencyScope: 1,
  createdAt: 1,
  activatedAt: 1,
  archivedAt: 1,
  ruleCount: { $size: '$rules' },
  merchantCount: { $size: '$merchants' },
} as const;

export function versionSummary(v: VersionSummaryDoc): Static<typeof PolicyVersionSummary> {
  return {
    id: v._id,
    versionNumber: v.versionNumber,
    status: v.status,
    currencies: v.currencies,
    currencyScope: v.currencyScope,
    ruleCount: v.ruleCount,
    merchantCount: v.merchantCount,
    createdAt: v.createdAt.toISOString(),
    activatedAt: iso(v.activatedAt),
    archivedAt: iso(v.archivedAt),
  };
}

const counted = (v: PolicyVersionDoc): VersionSummaryDoc => ({ ...v, ruleCount: v.rules.length, merchantCount: v.merchants.length });

export function versionFull(v: PolicyVersionDoc): Static<typeof PolicyVersion> {
  return {
    ...versionSummary(counted(v)),
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

export function policySummary(p: PolicyDoc, active: VersionSummaryDoc | null): Static<typeof PolicySummary> {
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
