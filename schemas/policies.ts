// Policies and versions on the wire (docs/reference/contract.md §2.6, §4.6-4.9).
import Type from 'typebox';
import { Currency, ListType, MinorAmount, Nullable, PeriodKind, PolicyStatus, RuleEffect, RuleType, ScopeType, Timestamp, Uuid, VersionStatus } from './common.ts';

export const PolicyVersionSummary = Type.Object({
  id: Uuid,
  versionNumber: Type.Integer({ minimum: 1 }),
  status: VersionStatus,
  currencies: Type.Array(Currency),
  currencyScope: Nullable(Type.String()),
  ruleCount: Type.Integer({ minimum: 0 }),
  merchantCount: Type.Integer({ minimum: 0 }),
  createdAt: Timestamp,
  activatedAt: Nullable(Timestamp),
  archivedAt: Nullable(Timestamp),
});

export const PolicyRule = Type.Object({
  id: Uuid,
  ruleType: RuleType,
  effect: RuleEffect,
  periodKind: PeriodKind,
  amountMinor: MinorAmount,
  currency: Nullable(Currency),
  approvalsRequired: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 5, description: 'On REQUIRE_APPROVAL rules only: how many distinct approvers must approve a purchase this rule escalates.' }),
  ),
});

export const PolicyMerchantEntry = Type.Object({ id: Uuid, listType: ListType, merchantKey: Type.String(), label: Type.String() });

export const PolicyVersion = Type.Object({
  ...PolicyVersionSummary.properties,
  policyId: Uuid,
  rules: Type.Array(PolicyRule),
  merchants: Type.Array(PolicyMerchantEntry),
});

const policySummaryFields = {
  id: Uuid,
  name: Type.String(),
  description: Nullable(Type.String()),
  scopeType: ScopeType,
  status: PolicyStatus,
  inForce: Type.Boolean({ description: 'Whether the engine reads the policy now.' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  archivedAt: Nullable(Timestamp),
  activeVersion: Nullable(PolicyVersionSummary),
};
export const PolicySummary = Type.Object(policySummaryFields);

export const Pagination = Type.Object({
  page: Type.Integer({ minimum: 1 }),
  pageSize: Type.Integer({ minimum: 1, maximum: 100 }),
  total: Type.Integer({ minimum: 0 }),
  totalPages: Type.Integer({ minimum: 1 }),
});

export const PolicyList = Type.Object({ policies: Type.Array(PolicySummary), pagination: Pagination });

export const PolicyDetail = Type.Object({
  policy: Type.Object({ ...policySummaryFields, agentIds: Type.Array(Uuid), versions: Type.Array(PolicyVersionSummary) }),
});

export const PolicyVersionDetail = Type.Object({ version: PolicyVersion });

export const PolicyIssue = Type.Object({ code: Type.String(), message: Type.String(), path: Type.Optional(Type.String()) });

/** validate takes no body; an empty JSON object is tolerated, any field is unknown. */
export const ValidateBody = Type.Object({}, { additionalProperties: false });

export const ValidationResult = Type.Object({
  valid: Type.Boolean(),
  issues: Type.Array(PolicyIssue),
  warnings: Type.Array(PolicyIssue),
  budgetImpact: Type.Array(
    Type.Object({
      attributableMinor: MinorAmount,
      currency: Currency,
      limits: Type.Array(Type.Object({ effect: RuleEffect, limitMinor: MinorAmount, remainingMinor: Type.String({ pattern: '^-?\\d+$' }) })),
      openingBalanceMinor: MinorAmount,
      periodKey: Type.String(),
      periodKind: Type.Enum(['DAY', 'MONTH']),
      reservedMinor: MinorAmount,
    }),
  ),
  version: PolicyVersion,
});

/** GET /v1/policies query parameters (docs/reference/contract.md §4.6). */
export const PolicyListQuery = {
  status: PolicyStatus,
  search: Type.String({ description: 'Matches the name case-insensitively as plain text; trimmed; longer values are capped at 200 characters.' }),
  page: Type.Integer({ minimum: 1, default: 1, description: 'A page beyond the end is empty, not 404.' }),
  pageSize: Type.Integer({ minimum: 1, default: 25, description: 'Values above 100 are clamped to 100.' }),
};
