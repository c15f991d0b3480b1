// Read models of purchases, written in the same transaction as the purchase:
// - purchase_views: the readback of docs/reference/contract.md §2.5, keyed by purchase id, with who may read it;
// - analytics_purchases: one flat row per purchase for analysts (schemas/analytics.ts);
// - analytics_daily_spend: totals per organisation, agent, currency and day.
import type { Filter, UpdateFilter } from 'mongodb';
import type { StoreDb } from '../store/store.ts';
import type { WriteBatch } from '../store/write-batch.ts';
import { periodFor } from '../engine/periods.ts';
import type { AgentStatus } from '../engine/types.ts';
import type { ApprovalDoc, DecisionDoc, PurchaseDoc, PurchaseStatus } from './documents.ts';
import { approvalWire, readback } from './present.ts';
import { caseFold } from '../store/text-search.ts';

export interface PurchaseViewDoc {
  _id: string;
  organizationId: string;
  agentId: string;
  submitterId: string;
  requestedAt: Date;
  readback: ReturnType<typeof readback>;
  /** caseFold(merchant) (src/store/text-search.ts), what the dashboard's merchant filter matches. */
  merchantFold: string;
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
  /** The budget windows the purchase's amount committed into (an approved purchase; absent on rows written before). */
  committedWindowIds?: string[];
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
  /**
   * Set once approvedMinor or pendingMinor had to be held at 2^53-1 (or pendingMinor at 0): the day's Minor totals are no longer exact, the
   * sum of its analytics_purchases rows is. Absent on documents written before the field existed (docs/operate/analysts.md).
   */
  saturated?: boolean;
}

const PURCHASE_VIEWS = 'purchase_views';
const ANALYTICS_PURCHASES = 'analytics_purchases';
const DAILY_SPEND = 'analytics_daily_spend';

export const views = (db: StoreDb) => ({
  purchaseViews: db.collection<PurchaseViewDoc>(PURCHASE_VIEWS),
  analyticsPurchases: db.collection<AnalyticsPurchaseDoc>(ANALYTICS_PURCHASES),
  dailySpend: db.collection<DailySpendDoc>(DAILY_SPEND),
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
 * Projects a purchase after a change, as writes of the transaction's batch. `previousStatus` is null for a new purchase; otherwise the daily
 * totals move the purchase from its old bucket to its new one.
 */
export function projectPurchase(
  batch: WriteBatch,
  args: {
    purchase: PurchaseDoc;
    decision: DecisionDoc;
    approval: ApprovalDoc | null;
    agent: { id: string; name: string; status: AgentStatus };
    policyIds: string[];
    /** The windows this change committed the purchase's amount into; [] when it committed none. */
    committedWindowIds: string[];
    timeZone: string;
    previousStatus: PurchaseStatus | null;
  },
): void {
  const { purchase: p, decision: d, approval, agent } = args;
  const instant = p.requestedAt.toISOString();
  const dayKey = periodFor('DAY', instant, args.timeZone).periodKey;
  const monthKey = periodFor('MONTH', instant, args.timeZone).periodKey;
  const view: PurchaseViewDoc = { _id: p._id, organizationId: p.organizationId, agentId: p.agentId, submitterId: p.submitterId, requestedAt: p.requestedAt, readback: readback(p, agent, d, approval), merchantFold: caseFold(p.merchant) };
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
    committedWindowIds: p.status === 'APPROVED' ? args.committedWindowIds : [],
    origin: p.origin,
    requestedAt: p.requestedAt,
    resolvedAt: p.resolvedAt,
    dayKey,
    monthKey,
  };
  if (args.previousStatus === null) {
    batch.insertOne(PURCHASE_VIEWS, view);
    batch.insertOne(ANALYTICS_PURCHASES, row);
  } else {
    const { _id: viewId, ...viewFields } = view;
    const { _id: rowId, ...rowFields } = row;
    batch.replaceOne<PurchaseViewDoc>(PURCHASE_VIEWS, { _id: viewId }, viewFields);
    batch.replaceOne<AnalyticsPurchaseDoc>(ANALYTICS_PURCHASES, { _id: rowId }, rowFields);
  }

  const inc = dailyIncrements(args.previousStatus, p.status, p.amountMinor);
  addToDailySpend(batch, { organizationId: p.organizationId, agentId: p.agentId, currency: p.currency, dayKey, monthKey }, inc);
}

type DayIdentity = Pick<DailySpendDoc, 'organizationId' | 'agentId' | 'currency' | 'dayKey' | 'monthKey'>;

/** Adds `inc` to the counters of the day's daily-spend document, as writes of the transaction's batch (see dailySpendWrites). */
export function addToDailySpend(batch: WriteBatch, day: DayIdentity, inc: Record<string, number>): void {
  const _id = `${day.organizationId}:${day.agentId}:${day.currency}:${day.dayKey}`;
  for (const w of dailySpendWrites(inc, day)) batch.updateOne<DailySpendDoc>(DAILY_SPEND, { _id, ...w.filter }, w.update, { upsert: w.upsert });
}

/** What a change of a purchase from `previousStatus` (null: a new purchase) to `status` adds to its day's counters. */
export function dailyIncrements(previousStatus: PurchaseStatus | null, status: PurchaseStatus, amountMinor: number): Record<string, number> {
  const inc: Record<string, number> = {};
  const bump = (s: PurchaseStatus | null, sign: 1 | -1) => {
    const counter = s ? COUNTER[s] : undefined;
    if (!counter) return;
    inc[`${counter}Count`] = (inc[`${counter}Count`] ?? 0) + sign;
    if (counter === 'approved' || counter === 'pending') inc[`${counter}Minor`] = (inc[`${counter}Minor`] ?? 0) + sign * amountMinor;
  };
  if (previousStatus === null) inc.requestedCount = 1;
  bump(previousStatus, -1);
  bump(status, 1);
  return inc;
}

/** The most a daily Minor total holds: what storage keeps exactly, so analysts can $sum it (docs/internals/design.md §2). */
export const MAX_DAILY_MINOR = Number.MAX_SAFE_INTEGER;
const MINOR_FIELDS = ['approvedMinor', 'pendingMinor'] as const;

export interface DailySpendWrite {
  /** Added to the filter on the document's _id. */
  filter: Filter<DailySpendDoc>;
  update: UpdateFilter<DailySpendDoc>;
  upsert: boolean;
}

/**
 * The writes, in order and in one transaction, that add `inc` to a daily-spend document's counters (docs/operate/analysts.md). The
 * Minor totals saturate: one that would pass 2^53-1 is stored as 2^53-1, one that would fall below 0 (possible only once a total was
 * held) as 0, and either sets `saturated` for good.
 *
 * Nothing read before the write bounds a day's total (nothing bounds how much a day approves), so whether an increment passes 2^53-1
 * is known only to the store. The first write is the plain $inc (an upsert; every field exists from the first write, so analysts never
 * meet a missing one), the cheapest update on both stores. For each Minor total it moves, a second write, on the same document, holds
 * the total at its bound where the $inc took it past: it matches (and writes) only then. The sum the $inc stores in between may have
 * rounded, but rounding keeps order, so the comparison with the bound is exact, and the transaction shows no one the rounded value.
 * An update pipeline that clamps in one write is as exact, but costs the embedded store several times as much CPU as these writes
 * (docs/reference/decisions.md).
 */
export function dailySpendWrites(inc: Record<string, number>, identity: DayIdentity): DailySpendWrite[] {
  const zeros = Object.fromEntries(COUNTER_FIELDS.filter((f) => !(f in inc)).map((f) => [f, 0]));
  const writes: DailySpendWrite[] = [{ filter: {}, update: { $inc: inc, $setOnInsert: { ...identity, ...zeros, saturated: false } }, upsert: true }];
  for (const f of MINOR_FIELDS) {
    const by = inc[f] ?? 0;
    if (by > 0) writes.push({ filter: { [f]: { $gt: MAX_DAILY_MINOR } }, update: { $set: { [f]: MAX_DAILY_MINOR, saturated: true } }, upsert: false });
    if (by < 0) writes.push({ filter: { [f]: { $lt: 0 } }, update: { $set: { [f]: 0, saturated: true } }, upsert: false });
  }
  return writes;
}

/** An answer below the quorum changes only the approval shown in the purchase's readback. */
export function projectAnswers(batch: WriteBatch, purchaseId: string, approval: ApprovalDoc): void {
  batch.updateOne<PurchaseViewDoc>(PURCHASE_VIEWS, { _id: purchaseId }, { $set: { 'readback.approval': approvalWire(approval) } });
}

const MIGRATIONS = 'migrations';
const BACKFILL = 'analytics_purchases.committedWindowIds';

/**
 * Analytics rows of approved purchases written before rows recorded `committedWindowIds` get them
 * from their purchase's `windowIds` (the windows an approved purchase's amount moved into). Without
 * them a reconciliation (src/budgets/windows.ts) would count such a purchase both in the window and
 * outside it. Run at start and by the release step, in batches; a marker makes later starts skip it.
 * Returns how many rows it completed.
 */
export async function backfillCommittedWindowIds(db: StoreDb, batchSize = 500): Promise<number> {
  const markers = db.collection<{ _id: string; doneAt: Date }>(MIGRATIONS);
  if (await markers.findOne({ _id: BACKFILL })) return 0;
  const rows = views(db).analyticsPurchases;
  const purchases = db.collection<Pick<PurchaseDoc, '_id' | 'windowIds'>>('purchases');
  let done = 0;
  for (;;) {
    const batch = await rows.find({ status: 'APPROVED', committedWindowIds: { $exists: false } }, { projection: { _id: 1 } }).limit(batchSize).toArray();
    if (batch.length === 0) break;
    const windows = new Map((await purchases.find({ _id: { $in: batch.map((r) => r._id) } }, { projection: { windowIds: 1 } }).toArray()).map((p) => [p._id, p.windowIds]));
    for (const row of batch) {
      await rows.updateOne({ _id: row._id, committedWindowIds: { $exists: false } }, { $set: { committedWindowIds: windows.get(row._id) ?? [] } });
    }
    done += batch.length;
  }
  await markers.updateOne({ _id: BACKFILL }, { $set: { doneAt: new Date() } }, { upsert: true });
  return done;
}
