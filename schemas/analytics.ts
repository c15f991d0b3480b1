// Read models for analysts (README "Analysts' read models"). Amounts are integers of minor units
// (so $sum works); day and month keys are in the organisation's time zone.
import Type from 'typebox';
import { PurchaseReadback } from './decisions.ts';
import { PolicySummary } from './policies.ts';

const Id = Type.String({ format: 'uuid' });
const DateTime = Type.Unsafe<Date>({ bsonType: 'date', type: 'string', format: 'date-time', description: 'BSON date' });

export const AnalyticsPurchase = Type.Object(
  {
    _id: Id,
    organizationId: Id,
    agentId: Id,
    agentName: Type.String(),
    merchant: Type.String(),
    merchantKey: Type.String(),
    category: Type.Union([Type.String(), Type.Null()]),
    amountMinor: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    currency: Type.String({ pattern: '^[A-Z]{3}$' }),
    status: Type.Union(['EVALUATING', 'PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED'].map((s) => Type.Literal(s))),
    outcome: Type.Union(['APPROVED', 'REJECTED', 'REQUIRES_APPROVAL'].map((s) => Type.Literal(s))),
    reasonCodes: Type.Array(Type.String()),
    decisionKind: Type.String({ description: 'INITIAL, APPROVAL_REEVALUATION, APPROVAL_EXPIRED or APPROVAL_CANCELLED' }),
    policyIds: Type.Array(Id, { description: 'policies that governed and covered the purchase' }),
    policyVersionIds: Type.Array(Id),
    committedWindowIds: Type.Optional(Type.Array(Type.String(), { description: 'ids of the budget windows the amount of an approved purchase committed into; [] otherwise' })),
    origin: Type.Union(['DASHBOARD', 'API', 'MCP'].map((s) => Type.Literal(s))),
    requestedAt: DateTime,
    resolvedAt: Type.Union([DateTime, Type.Null()]),
    dayKey: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }),
    monthKey: Type.String({ pattern: '^\\d{4}-\\d{2}$' }),
  },
  { additionalProperties: false, title: 'analytics_purchases', description: 'One document per purchase request.' },
);

const Count = Type.Integer({ minimum: 0 });
const DailyMinor = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'saturates at 2^53-1: see saturated' });
export const AnalyticsDailySpend = Type.Object(
  {
    _id: Type.String({ description: '<organizationId>:<agentId>:<currency>:<dayKey>' }),
    organizationId: Id,
    agentId: Id,
    currency: Type.String({ pattern: '^[A-Z]{3}$' }),
    dayKey: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }),
    monthKey: Type.String({ pattern: '^\\d{4}-\\d{2}$' }),
    requestedCount: Count,
    approvedCount: Count,
    approvedMinor: DailyMinor,
    rejectedCount: Count,
    pendingCount: Count,
    pendingMinor: DailyMinor,
    expiredCount: Count,
    cancelledCount: Count,
    saturated: Type.Optional(
      Type.Boolean({
        description:
          'true once approvedMinor or pendingMinor was held at 2^53-1 (or pendingMinor at 0): the Minor totals are no longer exact, the sum of the day\'s analytics_purchases rows is; false otherwise, absent on documents written before it existed',
      }),
    ),
  },
  { additionalProperties: false, title: 'analytics_daily_spend', description: 'Totals per organisation, agent, currency and day.' },
);

/** The rest of what the analyst may read (docs/operate/analysts.md): the read models the API answers from. */
export const PurchaseView = Type.Object(
  {
    _id: Id,
    organizationId: Id,
    agentId: Id,
    submitterId: Type.String({ description: 'the id of the API key or connection that submitted it, or of the person for a dashboard purchase; an id, never a credential' }),
    requestedAt: DateTime,
    readback: PurchaseReadback,
    merchantFold: Type.String({ description: 'the merchant, case-folded in full (NFKC, ß as ss, İ as i), for searching' }),
  },
  { additionalProperties: false, title: 'purchase_views', description: 'One document per purchase request: the readback of GET /v1/purchase-requests/{id} (docs/reference/contract.md §2.5).' },
);

export const PolicyView = Type.Object(
  {
    _id: Id,
    organizationId: Id,
    nameLower: Type.String({ description: "the policy's name, case-folded in full (NFKC, ß as ss, İ as i), for searching" }),
    status: Type.Union(['ACTIVE', 'DISABLED', 'ARCHIVED'].map((s) => Type.Literal(s))),
    createdAt: DateTime,
    summary: PolicySummary,
  },
  { additionalProperties: false, title: 'policy_views', description: 'One document per policy: the PolicySummary of GET /v1/policies (docs/reference/contract.md §2.6).' },
);
