// Budget windows as tests read them, named by the day (or month) a purchase was requested in, in its
// organisation's zone. A test that runs across midnight (or a month's end) there spreads its purchases
// over two windows: `findOne({ policyId, periodKind: 'DAY' })` then reads whichever comes first, and an
// assertion about "the" window reads the wrong one. These name the window a purchase counts toward, or
// read every window of a policy where the assertion is about totals.
import type { ExecutionContext } from 'ava';
import type { Document } from 'mongodb';
import type { StoreDb } from '../../src/store/store.ts';

export type PeriodKind = 'DAY' | 'MONTH';

/** The period key (yyyy-MM-dd, or yyyy-MM for a month) of the instant `at` in `zone`, computed apart from the engine. */
export function periodOf(kind: PeriodKind, at: Date | string, zone: string): string {
  const day = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(at));
  return kind === 'DAY' ? day : day.slice(0, 7);
}

export const dayOf = (at: Date | string, zone: string): string => periodOf('DAY', at, zone);

/** When the purchase was requested, and its organisation's zone, as stored. */
async function requestedOf(db: StoreDb, purchaseId: string): Promise<{ requestedAt: Date; zone: string }> {
  const purchase = await db.collection('purchases').findOne({ _id: purchaseId as never });
  if (!purchase) throw new Error(`no purchase ${purchaseId}`);
  const org = await db.collection('organizations').findOne({ _id: purchase.organizationId as never });
  if (!org) throw new Error(`no organization ${purchase.organizationId}`);
  return { requestedAt: purchase.requestedAt, zone: org.timezone };
}

/** The period key of the window a purchase counts toward: the day (or month) of its requestedAt in its organisation's zone. */
export async function periodOfPurchase(db: StoreDb, purchaseId: string, kind: PeriodKind = 'DAY'): Promise<string> {
  const { requestedAt, zone } = await requestedOf(db, purchaseId);
  return periodOf(kind, requestedAt, zone);
}

/** The policy's window of `kind` that the purchase counts toward (null when there is none). */
export async function windowOfPurchase(db: StoreDb, policyId: string, purchaseId: string, kind: PeriodKind = 'DAY'): Promise<Document | null> {
  return db.collection('budget_windows').findOne({ policyId, periodKind: kind, periodKey: await periodOfPurchase(db, purchaseId, kind) });
}

/** Every window of `kind` that matches `filter` (a policy, an organisation), in period order. */
export async function windowsOf(db: StoreDb, filter: Record<string, unknown>, kind: PeriodKind = 'DAY'): Promise<Document[]> {
  const windows = await db.collection('budget_windows').find({ ...filter, periodKind: kind }).toArray();
  return windows.sort((a, b) => String(a.periodKey).localeCompare(String(b.periodKey)));
}

/** What those windows hold and commit together: the totals a run across midnight spreads over two days. */
export async function windowTotals(db: StoreDb, filter: Record<string, unknown>, kind: PeriodKind = 'DAY'): Promise<{ heldMinor: number; committedMinor: number; windows: number }> {
  const windows = await windowsOf(db, filter, kind);
  return {
    heldMinor: windows.reduce((sum, w) => sum + Number(w.heldMinor), 0),
    committedMinor: windows.reduce((sum, w) => sum + Number(w.committedMinor), 0),
    windows: windows.length,
  };
}

/** Amounts added up by the day (or month) each purchase was requested in: what each window should count. */
export async function sumByPeriodOfPurchase(db: StoreDb, purchases: Iterable<{ purchaseId: string; amountMinor: number }>, kind: PeriodKind = 'DAY'): Promise<Map<string, number>> {
  const sums = new Map<string, number>();
  for (const { purchaseId, amountMinor } of purchases) {
    const period = await periodOfPurchase(db, purchaseId, kind);
    sums.set(period, (sums.get(period) ?? 0) + amountMinor);
  }
  return sums;
}

/**
 * Runs a scenario about one day's (or month's) budget: a sequence of purchases whose answers depend on what the
 * window already counts. If the purchases it tracked were requested in two periods (the clock crossed midnight, or
 * a month's end, in their organisation's zone while it ran), that attempt's assertions are discarded and the
 * scenario runs once more (a fresh organisation: attempt is 1, then 2), wholly in the new period. It never waits
 * for the clock; the attempt kept is asserted to have stayed in one period.
 */
export async function inOnePeriod(
  t: ExecutionContext,
  db: StoreDb,
  kind: PeriodKind,
  scenario: (tt: ExecutionContext, track: (purchaseId: string) => void, attempt: number) => Promise<void>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const ids: string[] = [];
    const tried = await t.try((tt) => scenario(tt, (id) => void ids.push(id), attempt));
    const periods = new Set(await Promise.all(ids.map((id) => periodOfPurchase(db, id, kind))));
    if (periods.size > 1 && attempt === 1) {
      tried.discard();
      continue;
    }
    tried.commit();
    t.true(periods.size <= 1, `the purchases fell in one ${kind === 'DAY' ? 'day' : 'month'}: ${[...periods].join(', ')}`);
    return;
  }
}

/** Passes a purchase request's answer through, telling track the id of the purchase it made (if it made one). */
export async function tracked<R extends { body: any }>(track: (purchaseId: string) => void, request: Promise<R>): Promise<R> {
  const res = await request;
  if (res.body?.purchaseRequest?.id) track(res.body.purchaseRequest.id);
  return res;
}
