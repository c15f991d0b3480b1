// Every collection the service uses, with the shape of its documents. Write-side documents are owned
// by the capability that writes them; read models (`*_views`, `analytics_*`) are shaped for a question.
// Amounts are stored as plain integers of minor units (at most 2^53-1); timestamps as Date.
import type { StoreDb, StoreCollection } from './store.ts';
import { stamped } from '../cache/config-cache.ts';

export type PersonRole = 'approver' | 'viewer' | 'admin';
export type OrganizationStatus = 'ACTIVE' | 'SUSPENDED';
export type AgentStatus = 'ENABLED' | 'DISABLED' | 'ARCHIVED';
export type PolicyStatus = 'ACTIVE' | 'DISABLED' | 'ARCHIVED';
export type VersionStatus = 'DRAFT' | 'ACTIVE' | 'ARCHIVED';

export interface OrganizationDoc {
  _id: string;
  handle: string;
  name: string;
  currency: string;
  timezone: string;
  approvalTtl: string;
  status: OrganizationStatus;
  /** Each change of time zone, with its time (written by manifest apply): a replay reads the periods of a purchase's time. */
  timezoneChanges?: { from: string; to: string; at: Date }[];
  /** Each change of approvalTtl, with its time (as timezoneChanges): a replayed approval lasts the TTL of its request's time. */
  approvalTtlChanges?: { from: string; to: string; at: Date }[];
  createdAt: Date;
  updatedAt: Date;
}

export interface PersonDoc {
  _id: string;
  organizationId: string;
  handle: string;
  name: string;
  email: string;
  passwordHash: string | null;
  /** Dashboard roles from the manifest; absent on people stored before roles existed (= the default). */
  roles?: PersonRole[];
  createdAt: Date;
  updatedAt: Date;
}

export interface AgentDoc {
  _id: string;
  organizationId: string;
  handle: string;
  name: string;
  description: string | null;
  status: AgentStatus;
  createdAt: Date;
  updatedAt: Date;
  /**
   * Written (incremented) by every transaction that must not interleave with a change of the agent's
   * status: submissions, answers, archive/activate (docs/internals/design.md §2). Never read.
   */
  fence?: number;
  /** Set while an archive's follow-up (cancelling pending approvals) is unfinished. */
  cancelApprovals?: boolean;
}

export interface RuleDoc {
  id: string;
  ruleType: 'AMOUNT_LIMIT' | 'SPEND_LIMIT';
  effect: 'BLOCK' | 'REQUIRE_APPROVAL';
  periodKind: 'PER_REQUEST' | 'DAY' | 'MONTH';
  amountMinor: number;
  currency: string | null;
  /** REQUIRE_APPROVAL rules only: distinct approvers needed, 2..5 (absent means 1, as on older versions). */
  approvalsRequired?: number;
}

export interface MerchantEntryDoc {
  id: string;
  listType: 'ALLOW' | 'BLOCK';
  merchantKey: string;
  label: string;
}

export interface PolicyDoc {
  _id: string;
  organizationId: string;
  handle: string;
  name: string;
  description: string | null;
  scopeType: 'ORGANIZATION' | 'AGENT';
  agentIds: string[];
  status: PolicyStatus;
  activeVersionId: string | null;
  draftVersionId: string | null;
  createdAt: Date;
  updatedAt: Date;
  archivedAt: Date | null;
  /**
   * Each change of status, when it happened (src/manifests/apply.ts): replay finds the status a policy had at
   * an instant here. Absent on policies not changed since this was first recorded.
   */
  statusChanges?: { from: PolicyStatus; to: PolicyStatus; at: Date }[];
  /** Written by approvals that leave the policy's budget windows untouched (src/budgets/windows.ts). Never read. */
  fence?: number;
}

export interface PolicyVersionDoc {
  _id: string;
  policyId: string;
  organizationId: string;
  versionNumber: number;
  status: VersionStatus;
  currencies: string[];
  currencyScope: string | null;
  rules: RuleDoc[];
  merchants: MerchantEntryDoc[];
  /** Canonical digest of currencies, rules and merchants: an unchanged manifest changes nothing. */
  contentHash: string;
  createdAt: Date;
  activatedAt: Date | null;
  archivedAt: Date | null;
}

export interface ApiKeyDoc {
  _id: string;
  organizationId: string;
  agentId: string | null;
  handle: string;
  prefix: string;
  hash: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
  createdAt: Date;
  /** Refreshed at most once a minute (LAST_USED_RESOLUTION_MS); absent until first used. */
  lastUsedAt?: Date | null;
}

/** How stale a credential's `lastUsedAt` may get before a use writes it again: one write a minute, not one a request. */
export const LAST_USED_RESOLUTION_MS = 60_000;
export const lastUseIsStale = (lastUsedAt: Date | null | undefined, now: Date) => !lastUsedAt || now.getTime() - lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS;

/** Read model answering GET /v1/policies: the PolicySummary, plus what filtering needs. */
export interface PolicyViewDoc {
  _id: string;
  organizationId: string;
  /** caseFold(name) (src/store/text-search.ts), what `search` matches; named before it was more than lower case. */
  nameLower: string;
  status: PolicyStatus;
  createdAt: Date;
  summary: Record<string, unknown>;
}

export interface Collections {
  organizations: StoreCollection<OrganizationDoc>;
  people: StoreCollection<PersonDoc>;
  agents: StoreCollection<AgentDoc>;
  policies: StoreCollection<PolicyDoc>;
  policyVersions: StoreCollection<PolicyVersionDoc>;
  apiKeys: StoreCollection<ApiKeyDoc>;
  policyViews: StoreCollection<PolicyViewDoc>;
  /** Drafts in shadow (src/policies/shadows.ts); cached, so stamped. */
  policyShadows: StoreCollection<ShadowStatusDoc>;
}

/** Whether a draft runs in shadow: the part of its document (ShadowDoc, src/policies/shadows.ts) that activating the draft ends. */
export interface ShadowStatusDoc {
  _id: string;
  status: 'RUNNING' | 'STOPPED';
  stoppedAt: Date | null;
  stopReason: 'STOPPED' | 'ACTIVATED' | null;
  version: number;
}

export function collections(db: StoreDb): Collections {
  return {
    // Cached per process (src/cache/config-cache.ts): every write bumps the configuration stamp.
    organizations: stamped(db, db.collection<OrganizationDoc>('organizations')),
    people: db.collection<PersonDoc>('people'),
    agents: stamped(db, db.collection<AgentDoc>('agents')),
    policies: stamped(db, db.collection<PolicyDoc>('policies')),
    policyVersions: stamped(db, db.collection<PolicyVersionDoc>('policy_versions')),
    apiKeys: stamped(db, db.collection<ApiKeyDoc>('api_keys')),
    policyViews: db.collection<PolicyViewDoc>('policy_views'),
    policyShadows: stamped(db, db.collection<ShadowStatusDoc>('policy_shadows')),
  };
}
