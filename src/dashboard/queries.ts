// What the dashboard pages show, read for one organisation only: every query filters on the signed-in
// person's organisation, so another tenant's ids find nothing, exactly like ids that never existed.
import { DateTime } from 'luxon';
import type { AppDeps } from '../app-deps.ts';
import { invalidRequest } from '../http/errors.ts';
import { firstCharacters } from '../http/params.ts';
import { isUuid } from '../ids.ts';
import { periodFor, periodOfDate, windowId } from '../engine/periods.ts';
import { loadWindows, windowsCollection, type BudgetWindowDoc } from '../budgets/windows.ts';
import { fromStored, toStored } from '../money.ts';
import { isInForce } from '../policies/present.ts';
import { initiatorPersonId, purchaseCollections, type ApprovalDoc, type DecisionDoc } from '../purchases/documents.ts';
import { views, type PurchaseViewDoc } from '../purchases/projection.ts';
import { decodeCursor, encodeCursor } from '../mcp/list-purchases.ts';
import type { OrganizationDoc, PolicyDoc, PolicyVersionDoc } from '../store/collections.ts';
import { containsFolded } from '../store/text-search.ts';

export interface WindowView {
  id: string;
  policyId: string;
  policyName: string;
  currency: string;
  periodKind: 'DAY' | 'MONTH';
  periodKey: string;
  periodEnd: Date;
  committedMinor: bigint;
  heldMinor: bigint;
  openingBalanceMinor: bigint;
  limits: { effect: 'BLOCK' | 'REQUIRE_APPROVAL'; limitMinor: bigint }[];
}

type Readback = PurchaseViewDoc['readback'];

/** The organisation's policies with their active versions, by policy id. */
async function policiesWithActive(deps: AppDeps, organizationId: string, policyIds?: string[]) {
  const policies = await deps.collections.policies.find({ organizationId, ...(policyIds ? { _id: { $in: policyIds } } : {}) }).toArray();
  const activeIds = policies.map((p) => p.activeVersionId).filter((id): id is string => id !== null);
  const versions = new Map((await deps.collections.policyVersions.find({ _id: { $in: activeIds } }).toArray()).map((v) => [v._id, v]));
  return new Map(policies.map((p) => [p._id, { policy: p, active: p.activeVersionId ? (versions.get(p.activeVersionId) ?? null) : null }]));
}

function limitsOf(version: PolicyVersionDoc | null, periodKind: string, currency: string): WindowView['limits'] {
  return (version?.rules ?? [])
    .filter((r) => r.ruleType === 'SPEND_LIMIT' && r.periodKind === periodKind && (r.currency === null || r.currency === currency))
    .map((r) => ({ effect: r.effect, limitMinor: BigInt(r.amountMinor) }))
    .sort((a, b) => (a.limitMinor < b.limitMinor ? -1 : a.limitMinor > b.limitMinor ? 1 : 0));
}

function windowView(doc: BudgetWindowDoc, policy: PolicyDoc | undefined, active: PolicyVersionDoc | null): WindowView {
  return {
    id: doc._id,
    policyId: doc.policyId,
    policyName: policy?.name ?? 'A removed policy',
    currency: doc.currency,
    periodKind: doc.periodKind,
    periodKey: doc.periodKey,
    periodEnd: doc.periodEnd,
    committedMinor: fromStored(doc.committedMinor),
    heldMinor: fromStored(doc.heldMinor),
    openingBalanceMinor: fromStored(doc.openingBalanceMinor),
    limits: limitsOf(active, doc.periodKind, doc.currency),
  };
}

export interface InboxItem {
  purchase: Readback;
  approval: ApprovalDoc;
  windows: WindowView[];
  /** The person who made it from the dashboard (they may reject it, not approve it), or null. */
  initiatorPersonId: string | null;
}

/** Pending approvals that can still be answered, newest first, with the windows each one holds. */
export async function pendingApprovals(deps: AppDeps, organizationId: string, now: Date, purchaseId?: string): Promise<InboxItem[]> {
  const pc = purchaseCollections(deps.store.db);
  const filter = { organizationId, state: 'PENDING' as const, expiresAt: { $gt: now }, ...(purchaseId === undefined ? {} : { purchaseId }) };
  const approvals = await pc.approvals.find(filter).sort({ createdAt: -1, _id: -1 }).limit(200).toArray();
  if (approvals.length === 0) return [];
  const purchaseIds = approvals.map((a) => a.purchaseId);
  const readbacks = new Map((await views(deps.store.db).purchaseViews.find({ _id: { $in: purchaseIds }, organizationId }).toArray()).map((v) => [v._id, v.readback]));
  const purchases = await pc.purchases.find({ _id: { $in: purchaseIds }, organizationId }).toArray();
  const heldBy = new Map(purchases.map((p) => [p._id, p.windowIds]));
  const initiators = new Map(purchases.map((p) => [p._id, initiatorPersonId(p)]));
  const windowIds = [...new Set(purchases.flatMap((p) => p.windowIds))];
  const windows = new Map((await heldWindowViews(deps, organizationId, windowIds)).map((w) => [w.id, w]));
  return approvals.flatMap((approval) => {
    const purchase = readbacks.get(approval.purchaseId);
    if (!purchase) return [];
    const touched = (heldBy.get(approval.purchaseId) ?? []).map((id) => windows.get(id)).filter((w): w is WindowView => w !== undefined);
    return [{ purchase, approval, windows: touched, initiatorPersonId: initiators.get(approval.purchaseId) ?? null }];
  });
}

/** Every window of the current DAY and MONTH period of each policy in force, per covered currency. */
export async function currentWindows(deps: AppDeps, org: OrganizationDoc, now: Date): Promise<WindowView[]> {
  const policies = [...(await policiesWithActive(deps, org._id)).values()].filter(({ policy }) => isInForce(policy));
  const wanted: { policy: PolicyDoc; active: PolicyVersionDoc; key: Omit<BudgetWindowDoc, '_id' | 'organizationId' | 'committedMinor' | 'heldMinor' | 'openingBalanceMinor' | 'notified' | 'version' | 'createdAt' | 'updatedAt'> }[] = [];
  for (const { policy, active } of policies) {
    if (!active) continue;
    const seen = new Set<string>();
    for (const rule of active.rules) {
      if (rule.ruleType !== 'SPEND_LIMIT' || (rule.periodKind !== 'DAY' && rule.periodKind !== 'MONTH')) continue;
      for (const currency of active.currencies) {
        if (rule.currency !== null && rule.currency !== currency) continue;
        const period = periodFor(rule.periodKind, now.toISOString(), org.timezone);
        const key = { policyId: policy._id, currency, periodKind: rule.periodKind, periodKey: period.periodKey, periodStart: new Date(period.periodStart), periodEnd: new Date(period.periodEnd) };
        if (seen.has(windowId(key))) continue;
        seen.add(windowId(key));
        wanted.push({ policy, active, key });
      }
    }
  }
  // Read as a decision reads them (loadWindows): a window last written under another version, or
  // before a change of zone, shows the reconciled amounts the next decision would count against.
  const keys = wanted.map(({ active, key }) => ({ ...key, policyVersionId: active._id, periodStart: key.periodStart.toISOString(), periodEnd: key.periodEnd.toISOString() }));
  const loaded = await loadWindows(deps.store.db, keys);
  const result: WindowView[] = [];
  for (const { policy, active, key } of wanted) {
    const id = windowId(key);
    const state = loaded.states.get(id)!;
    const stored = loaded.docs.get(id);
    // A window nobody has touched this period is not stored yet: it would open with the spend already attributable.
    const doc: BudgetWindowDoc = {
      _id: id,
      organizationId: org._id,
      ...key,
      notified: [],
      version: 0,
      createdAt: key.periodStart,
      updatedAt: key.periodStart,
      ...stored,
      periodStart: key.periodStart,
      periodEnd: key.periodEnd,
      committedMinor: toStored(state.committedMinor),
      heldMinor: toStored(state.heldMinor),
      openingBalanceMinor: toStored(state.openingBalanceMinor),
    };
    result.push(windowView(doc, policy, active));
  }
  return result.sort((a, b) => a.policyName.localeCompare(b.policyName) || a.currency.localeCompare(b.currency) || a.periodKind.localeCompare(b.periodKind));
}

export const PURCHASE_STATUSES = ['PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED', 'EVALUATING'] as const;
export const OUTCOMES = ['APPROVED', 'REJECTED', 'REQUIRES_APPROVAL'] as const;
export const PAGE_SIZE = 25;

export interface PurchaseFilters {
  agentId?: string;
  status?: string;
  outcome?: string;
  from?: string;
  to?: string;
  merchant?: string;
  cursor?: string;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Keyset-paged purchases, newest first; the dates are whole days in the organisation's zone. */
export async function listPurchases(deps: AppDeps, org: OrganizationDoc, f: PurchaseFilters) {
  const filter: Record<string, unknown> = { organizationId: org._id };
  const issues: { path: string; code: string; message: string }[] = [];
  if (f.agentId) {
    if (!isUuid(f.agentId)) issues.push({ path: 'agent', code: 'INVALID_AGENT', message: 'Choose an agent from the list.' });
    filter.agentId = f.agentId.toLowerCase();
  }
  if (f.status) {
    if (!(PURCHASE_STATUSES as readonly string[]).includes(f.status)) issues.push({ path: 'status', code: 'INVALID_STATUS', message: 'Choose a status from the list.' });
    filter['readback.status'] = f.status;
  }
  if (f.outcome) {
    if (!(OUTCOMES as readonly string[]).includes(f.outcome)) issues.push({ path: 'outcome', code: 'INVALID_OUTCOME', message: 'Choose an outcome from the list.' });
    filter['readback.decision.outcome'] = f.outcome;
  }
  const range: Record<string, Date> = {};
  for (const [name, value, edge] of [['from', f.from, 'start'], ['to', f.to, 'end']] as const) {
    if (!value) continue;
    const day = DATE.test(value) ? DateTime.fromISO(value, { zone: org.timezone }) : null;
    if (!day || !day.isValid) {
      issues.push({ path: name, code: 'INVALID_DATE', message: `${name === 'from' ? 'From' : 'To'} is a date like 2026-11-23.` });
      continue;
    }
    const period = periodOfDate(value, org.timezone);
    if (edge === 'start') range.$gte = new Date(period.periodStart);
    else range.$lt = new Date(period.periodEnd);
  }
  if (Object.keys(range).length > 0) filter.requestedAt = range;
  if (f.merchant) filter.merchantFold = containsFolded(firstCharacters(f.merchant, 200));
  if (f.cursor) {
    const after = decodeCursor(f.cursor);
    if (!after) issues.push({ path: 'cursor', code: 'INVALID_CURSOR', message: 'This page link is not valid; start again from the first page.' });
    else filter.$and = [{ $or: [{ requestedAt: { $lt: after.requestedAt } }, { requestedAt: after.requestedAt, _id: { $lt: after.id } }] }];
  }
  if (issues.length > 0) throw invalidRequest(issues, 'Some filters are not valid.');
  const rows = await views(deps.store.db).purchaseViews.find(filter).sort({ requestedAt: -1, _id: -1 }).limit(PAGE_SIZE + 1).toArray();
  const page = rows.slice(0, PAGE_SIZE);
  const last = page[page.length - 1];
  return { purchases: page.map((r) => r.readback), nextCursor: rows.length > PAGE_SIZE && last ? encodeCursor({ requestedAt: last.requestedAt, id: last._id }) : null };
}

export interface PurchaseDetail {
  purchase: Readback;
  decisions: DecisionDoc[];
  approval: ApprovalDoc | null;
}

export async function purchaseDetail(deps: AppDeps, organizationId: string, purchaseId: string): Promise<PurchaseDetail | null> {
  if (!isUuid(purchaseId)) return null;
  const view = await views(deps.store.db).purchaseViews.findOne({ _id: purchaseId.toLowerCase(), organizationId });
  if (!view) return null;
  const pc = purchaseCollections(deps.store.db);
  const decisions = await pc.decisions.find({ purchaseId: view._id, organizationId }).sort({ evaluatedAt: 1, _id: 1 }).toArray();
  const approval = await pc.approvals.findOne({ purchaseId: view._id, organizationId });
  return { purchase: view.readback, decisions, approval };
}

/** The windows one purchase's amount is held in (or committed to), with their policies' limits: what an approver is told. */
export async function windowsHeldBy(deps: AppDeps, organizationId: string, windowIds: string[]): Promise<WindowView[]> {
  return (await heldWindowViews(deps, organizationId, windowIds)).sort((a, b) => a.policyName.localeCompare(b.policyName) || a.periodKind.localeCompare(b.periodKind));
}

/**
 * Windows that pending purchases hold, as the answer's decision will read them (loadWindows): one last
 * written under another version than its policy's active one shows the reconciled opening balance,
 * not the stored one. A window whose policy has no active version shows what is stored.
 */
async function heldWindowViews(deps: AppDeps, organizationId: string, windowIds: string[]): Promise<WindowView[]> {
  if (windowIds.length === 0) return [];
  const docs = await windowsCollection(deps.store.db).find({ _id: { $in: windowIds }, organizationId }).toArray();
  const policies = await policiesWithActive(deps, organizationId, [...new Set(docs.map((w) => w.policyId))]);
  const keys = docs.flatMap((w) => {
    const active = policies.get(w.policyId)?.active;
    if (!active) return [];
    const { policyId, currency, periodKind, periodKey } = w;
    return [{ policyId, currency, periodKind, periodKey, periodStart: w.periodStart.toISOString(), periodEnd: w.periodEnd.toISOString(), policyVersionId: active._id }];
  });
  const loaded = await loadWindows(deps.store.db, keys);
  return docs.map((w) => {
    const state = loaded.states.get(w._id);
    const shown = state === undefined ? w : { ...w, committedMinor: toStored(state.committedMinor), heldMinor: toStored(state.heldMinor), openingBalanceMinor: toStored(state.openingBalanceMinor) };
    return windowView(shown, policies.get(w.policyId)?.policy, policies.get(w.policyId)?.active ?? null);
  });
}
