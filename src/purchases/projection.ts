// Read models of purchases, written in the same transaction as the purchase:
// - purchase_views: the readback of SPEC.md 2.5, keyed by purchase id, with who may read it;
// - analytics_purchases: one flat row per purchase for analysts (schemas/analytics.ts);
// - analytics_daily_spend: totals per organisation, agent, currency and day.
import type { StoreDb, StoreSession } from '../store/store.ts';
import { periodFor } from '../engine/periods.ts';
import type { AgentStatus } from '../engine/types.ts';
import type { ApprovalDoc, DecisionDoc, PurchaseDoc, PurchaseStatus } from './documents.ts';
import { readback } from './present.ts';

export interface PurchaseViewDoc {
  _id: string;
  organizationId: string;
  agentId: string;
  submitterId: string;
  requestedAt: Date;
  readback: ReturnType<typeof readback>;
}

export interface AnalyticsPurchaseDoc {
  _id: string;
  organizationId: string;
  agentId: string;
  agentName: string;
  merchant: string;
  merchantKey: string;
  category: string | null;
  amountMinor: number;
  currency: string;
  status: PurchaseStatus;
  outcome: string;
  reasonCodes: string[];
  decisionKind: string;
  policyIds: string[];
  policyVersionIds: string[];
  origin: string;
  requestedAt: Date;
  resolvedAt: Date | null;
  dayKey: string;
  monthKey: string;
}

export interface DailySpendDoc {
  _id: string;
  organizationId: string;
  agentId: string;
  currency: string;
  dayKey: string;
  monthKey: string;
  requestedCount: number;
  approvedCount: number;
  approvedMinor: number;
  rejectedCount: number;
  pendingCount: number;
  pendingMinor: number;
  expiredCount: number;
  cancelledCount: number;
}

export const views = (db: StoreDb) => ({
  purchaseViews: db.collection<PurchaseViewDoc>('purchase_views'),
  analyticsPurchases: db.collection<AnalyticsPurchaseDoc>('analytics_purchases'),
  dailySpend: db.collection<DailySpendDoc>('analytics_daily_spend'),
});

const COUNTER_FIELDS = ['requestedCount', 'approvedCount', 'approvedMinor', 'rejectedCount', 'pendingCount', 'pendingMinor', 'expiredCount', 'cancelledCount'];

type Counter = 'approved' | 'rejected' | 'pending' | 'expired' | 'cancelled';
const COUNTER: Partial<Record<PurchaseStatus, Counter>> = {
  APPROVED: 'approved',
  REJECTED: 'rejected',
  PENDING_APPROVAL: 'pending',
  EXPIRED: 'expired',
  CANCELLED: 'cancelled',
};

/**
 * Projects a purchase after a change. `previousStatus` is null for a new purchase; otherwise the daily
 * totals move the purchase from its old bucket to its new one.
 */
export async function projectPurchase(
  db: StoreDb,
  session: StoreSession,
  args: {
    purchase: PurchaseDoc;
    decision: DecisionDoc;
    approval: ApprovalDoc | null;
    agent: { id: string; name: string; status: AgentStatus };
    policyIds: string[];
    timeZone: string;
    previousStatus: PurchaseStatus | null;
  },
): Promise<void> {
  const { purchase: p, decision: d, approval, agent } = args;
  const v = views(db);
  const instant = p.requestedAt.toISOString();
  const dayKey = periodFor('DAY', instant, args.timeZone).periodKey;
  const monthKey = periodFor('MONTH', instant, args.timeZone).periodKey;
  const view: PurchaseViewDoc = { _id: p._id, organizationId: p.organizationId, agentId: p.agentId, submitterId: p.submitterId, requestedAt: p.requestedAt, readback: readback(p, agent, d, approval) };
  const row: AnalyticsPurchaseDoc = {
    _id: p._id,
    organizationId: p.organizationId,
    agentId: p.agentId,
    agentName: agent.name,
    merchant: p.merchant,
    merchantKey: p.merchantKey,
    category: p.category,
    amountMinor: p.amountMinor,
    currency: p.currency,
    status: p.status,
    outcome: d.outcome,
    reasonCodes: d.reasonCodes,
    decisionKind: d.kind,
    policyIds: args.policyIds,
    policyVersionIds: p.policyVersionIds,
    origin: p.origin,
    requestedAt: p.requestedAt,
    resolvedAt: p.resolvedAt,
    dayKey,
    monthKey,
  };
  if (args.previousStatus === null) {
    await v.purchaseViews.insertOne(view, { session });
    await v.analyticsPurchases.insertOne(row, { session });
  } else {
    const { _id: viewId, ...viewFields } = view;
    const { _id: rowId, ...rowFields } = row;
    await v.purchaseViews.replaceOne({ _id: viewId }, viewFields, { session });
    await v.analyticsPurchases.replaceOne({ _id: rowId }, rowFields, { session });
  }

  const inc: Record<string, number> = {};
  const bump = (status: PurchaseStatus | null, sign: 1 | -1) => {
    const counter = status ? COUNTER[status] : undefined;
    if (!counter) return;
    inc[`${counter}Count`] = (inc[`${counter}Count`] ?? 0) + sign;
    if (counter === 'approved' || counter === 'pending') inc[`${counter}Minor`] = (inc[`${counter}Minor`] ?? 0) + sign * p.amountMinor;
  };
  if (args.previousStatus === null) inc.requestedCount = 1;
  bump(args.previousStatus, -1);
  bump(p.status, 1);
  // Every counter exists from the first write, so analysts never meet a missing field.
  const zeros = Object.fromEntries(COUNTER_FIELDS.filter((f) => !(f in inc)).map((f) => [f, 0]));
  await v.dailySpend.updateOne(
    { _id: `${p.organizationId}:${p.agentId}:${p.currency}:${dayKey}` },
    {
      $inc: inc,
      $setOnInsert: { organizationId: p.organizationId, agentId: p.agentId, currency: p.currency, dayKey, monthKey, ...zeros },
    },
    { upsert: true, session },
  );
}
