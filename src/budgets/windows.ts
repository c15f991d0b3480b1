// Loading budget windows (docs/reference/contract.md §2.6, docs/internals/design.md §1): one per (policy, currency, DAY|MONTH period).
// A command reads the windows it needs here, reconciled with the spend they do not count; its decision
// says how they change (window-writes.ts) and the storage port writes them, each at the version read.
import type { WindowKey, WindowPeriodKind } from '../engine/types.ts';
import { periodFor, windowBounds, windowId } from '../engine/periods.ts';
import { MAX_WINDOW_MINOR } from '../engine/budgets.ts';
import { fromStored } from '../money.ts';
import type { StoreDb, StoreSession } from '../store/store.ts';
import { WINDOWS, stateOf, type BudgetWindowDoc, type LoadedWindows } from './window-state.ts';

export { stateOf, type BudgetWindowDoc, type LoadedWindows } from './window-state.ts';

export const windowsCollection = (db: StoreDb) => db.collection<BudgetWindowDoc>(WINDOWS);

/**
 * Spend approved under a policy in a window's period (docs/internals/design.md §4 item 6), read from the analysts'
 * purchases read model: by the time of each request within the period's bounds, not by the day and
 * month labels stored with it (those are of the zone the organisation had then: after a change of
 * zone they name other hours). With `outside`, only the spend that did not commit into that window.
 */
export function attributableSpend(
  db: StoreDb,
  key: { policyId: string; currency: string; periodStart: string | Date; periodEnd: string | Date },
  session?: StoreSession,
  outside?: string,
): Promise<bigint> {
  return approvedSpend(db, key, { policyIds: key.policyId, currency: key.currency, ...(outside === undefined ? {} : { committedWindowIds: { $ne: outside } }) }, session);
}

/**
 * Approved spend in a period that committed into window `id`, whichever policies governed it: what
 * the window's `committedMinor` counts, recomputed over new bounds when a change of zone moves them.
 */
function committedInto(db: StoreDb, id: string, key: { policyId: string; periodStart: string | Date; periodEnd: string | Date }, session?: StoreSession): Promise<bigint> {
  return approvedSpend(db, key, { committedWindowIds: id }, session);
}

const HOUR_MS = 60 * 60 * 1000;

/**
 * The labels (dayKey or monthKey: periodFor's periodKey) that analytics rows of requests made in
 * [start, end) can carry: a row is labelled in the zone its organisation had when it was decided, at most
 * 12 hours behind UTC or 14 ahead, so the labels are those of the UTC periods over those widened bounds.
 */
export function periodLabelsOver(kind: WindowPeriodKind, start: Date, end: Date): string[] {
  const labels: string[] = [];
  const last = end.getTime() + 14 * HOUR_MS;
  for (let at = start.getTime() - 12 * HOUR_MS; at < last; ) {
    const period = periodFor(kind, new Date(at).toISOString(), 'UTC');
    labels.push(period.periodKey);
    at = Date.parse(period.periodEnd);
  }
  return labels;
}

/** How a period's rows are found: by day label for a day (23 to 25 hours), by month label otherwise. */
function labelsOver(start: Date, end: Date): Array<{ dayKey: string } | { monthKey: string }> {
  return end.getTime() - start.getTime() <= 26 * HOUR_MS
    ? periodLabelsOver('DAY', start, end).map((dayKey) => ({ dayKey }))
    : periodLabelsOver('MONTH', start, end).map((monthKey) => ({ monthKey }));
}

/**
 * The sum of the approved purchases of `policyId`'s organisation in the analysts' read model that match,
 * requested within the period. Read through the organisation's day or month index, one label at a time:
 * a decision writes no index key per policy or window for these reads (which only a window opened or
 * reconciled makes), and what they scan is bounded by the organisation's rows of a few days (a day's
 * window) or months (a month's).
 */
async function approvedSpend(
  db: StoreDb,
  period: { policyId: string; periodStart: string | Date; periodEnd: string | Date },
  match: Record<string, unknown>,
  session?: StoreSession,
): Promise<bigint> {
  const policy = await db.collection<{ _id: string; organizationId: string }>('policies').findOne({ _id: period.policyId }, { projection: { organizationId: 1 }, ...(session ? { session } : {}) });
  if (!policy) return 0n;
  const start = new Date(period.periodStart);
  const end = new Date(period.periodEnd);
  let total = 0n;
  for (const label of labelsOver(start, end)) {
    const rows = await db
      .collection('analytics_purchases')
      .aggregate(
        [
          { $match: { organizationId: policy.organizationId, ...label, ...match, status: 'APPROVED', requestedAt: { $gte: start, $lt: end } } },
          { $group: { _id: null, total: { $sum: '$amountMinor' } } },
        ],
        session ? { session } : {},
      )
      .toArray();
    total += BigInt(rows[0]?.total ?? 0);
  }
  return total;
}

/**
 * attributableSpend of every policy of an organisation at once, over one period and currency: one read of
 * the period's rows, where a read per policy made a shadow's or a replay's start, which opens a window per
 * policy, read the organisation's month that many times over (docs/internals/performance.md).
 */
export async function attributableSpendByPolicy(
  db: StoreDb,
  period: { organizationId: string; currency: string; periodStart: string | Date; periodEnd: string | Date },
): Promise<Map<string, bigint>> {
  const start = new Date(period.periodStart);
  const end = new Date(period.periodEnd);
  const totals = new Map<string, bigint>();
  for (const label of labelsOver(start, end)) {
    const rows = await db
      .collection('analytics_purchases')
      .aggregate<{ _id: string; total: number }>([
        { $match: { organizationId: period.organizationId, ...label, currency: period.currency, status: 'APPROVED', requestedAt: { $gte: start, $lt: end } } },
        // A policy named twice in one row is counted once, as a match on it counts the row once.
        { $project: { _id: 0, amountMinor: 1, policyIds: { $setUnion: ['$policyIds', []] } } },
        { $unwind: '$policyIds' },
        { $group: { _id: '$policyIds', total: { $sum: '$amountMinor' } } },
      ])
      .toArray();
    for (const { _id, total } of rows) totals.set(_id, (totals.get(_id) ?? 0n) + BigInt(total));
  }
  return totals;
}

/** A window cannot count more than MAX_WINDOW_MINOR (what storage holds exactly); past every limit either way. */
const capped = (amount: bigint): bigint => (amount > MAX_WINDOW_MINOR ? MAX_WINDOW_MINOR : amount);

/**
 * Loads the windows of `keys`, plus windows known only by id (those a pending purchase holds), taking those
 * the organisation's actor remembers (`remembered`) from its memory.
 *
 * A window counts the spend its policy governs only while a version whose limits read it is in force:
 * approvals under a version without such a limit do not write it. So a window first read under another
 * version than the one that last wrote it (`policyVersionId`) is reconciled: its opening balance grows
 * to the policy's approved spend in the period that did not commit into it (a purchase that committed
 * into it is in its committed amount whether or not the policy still covered it when it was approved),
 * and the decision writes it (`reconciled`). Approvals that wrote none of a policy's windows write its policy document
 * (fencePoliciesOutsideWindows), so one racing the activation conflicts with this read.
 */
export async function loadWindows(
  db: StoreDb,
  keys: WindowKey[],
  session?: StoreSession,
  heldIds: string[] = [],
  remembered: ReadonlyMap<string, BudgetWindowDoc> = new Map(),
): Promise<LoadedWindows> {
  const loaded: LoadedWindows = { states: new Map(), docs: new Map(), missing: new Map(), versions: new Map(), reconciled: new Set(), rebased: new Map(), remembered: new Set() };
  const ids = [...new Set([...keys.map(windowId), ...heldIds])];
  if (ids.length === 0) return loaded;
  // What the actor remembers is taken as it stands (the record confirms it); only the others are read.
  const unknown = ids.filter((id) => !remembered.has(id));
  const docs = unknown.length === 0 ? [] : await windowsCollection(db).find({ _id: { $in: unknown } }, session ? { session } : {}).toArray();
  for (const id of ids) {
    const doc = remembered.get(id);
    if (doc === undefined) continue;
    docs.push(doc);
    loaded.remembered.add(id);
  }
  for (const doc of docs) {
    loaded.docs.set(doc._id, doc);
    loaded.states.set(doc._id, stateOf(doc));
  }
  for (const key of keys) {
    const id = windowId(key);
    loaded.versions.set(id, key.policyVersionId);
    const doc = loaded.docs.get(id);
    if (doc !== undefined) {
      if (loaded.reconciled.has(id)) continue;
      // As instants, from the key's period: formatting each stored bound to compare texts was two thirds of loadWindows' own time.
      const bounds = windowBounds(key);
      if (doc.periodStart.getTime() !== bounds.startMs || doc.periodEnd.getTime() !== bounds.endMs) {
        // The organisation changed zone, and this period's name (a date) now covers other hours: the
        // window starts again over them from what was approved in them, keeping what it holds (the
        // pending purchases it holds are released or converted here). Its committed amount stays what
        // committed into it (now within the new hours), so that a later reconciliation, which counts
        // the policy's spend outside it, counts nothing twice or not at all.
        const committed = capped(await committedInto(db, id, key, session));
        loaded.states.set(id, { ...stateOf(doc), committedMinor: committed, openingBalanceMinor: capped(await attributableSpend(db, key, session, id)) });
        loaded.reconciled.add(id);
        loaded.rebased.set(id, key);
        continue;
      }
      if (doc.policyVersionId === key.policyVersionId) continue;
      const unaccounted = capped(await attributableSpend(db, key, session, id));
      if (unaccounted > fromStored(doc.openingBalanceMinor)) {
        const state = { ...stateOf(doc), openingBalanceMinor: unaccounted };
        loaded.states.set(id, state);
      }
      loaded.reconciled.add(id);
      continue;
    }
    if (loaded.missing.has(id)) continue;
    const openingBalanceMinor = capped(await attributableSpend(db, key, session));
    loaded.missing.set(id, { key, openingBalanceMinor });
    loaded.states.set(id, { budgetCounterId: null, committedMinor: 0n, heldMinor: 0n, openingBalanceMinor });
  }
  return loaded;
}
