// Budget window documents (docs/reference/contract.md §2.6, docs/internals/design.md §1): one per (policy, currency, DAY|MONTH period).
// Every write checks the document's `version`; a matched count of 0, or a lost race to create it,
// is a VersionConflict and the whole command is retried. Amounts are stored as integers. The writes
// join the command's WriteBatch: every window a decision touches goes in the same one command.
import type { BudgetCrossing, BudgetEffect, WindowKey, WindowState } from '../engine/types.ts';
import { periodFor, windowId } from '../engine/periods.ts';
import { MAX_WINDOW_MINOR } from '../engine/budgets.ts';
import { VersionConflict } from '../http/errors.ts';
import { fromStored, toStored } from '../money.ts';
import type { StoreDb, StoreSession } from '../store/store.ts';
import { queueEvent } from '../events/outbox.ts';
import type { WriteBatch } from '../store/write-batch.ts';

export interface BudgetWindowDoc {
  _id: string;
  organizationId: string;
  policyId: string;
  currency: string;
  periodKind: 'DAY' | 'MONTH';
  periodKey: string;
  periodStart: Date;
  periodEnd: Date;
  committedMinor: number;
  heldMinor: number;
  openingBalanceMinor: number;
  /** The version in force when the window was last written (absent on windows written before it was kept). */
  policyVersionId?: string;
  /** `EXHAUSTED:${policyRuleId}` of the limits already reported exhausted in this window. */
  notified: string[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

const WINDOWS = 'budget_windows';
export const windowsCollection = (db: StoreDb) => db.collection<BudgetWindowDoc>(WINDOWS);

/** What was read, so that the write can check nobody changed it meanwhile. */
export interface LoadedWindows {
  states: Map<string, WindowState>;
  docs: Map<string, BudgetWindowDoc>;
  /** Windows that do not exist yet, with the opening balance they would start from. */
  missing: Map<string, { key: WindowKey; openingBalanceMinor: bigint }>;
  /** The version in force that read each window of `keys`. */
  versions: Map<string, string>;
  /** Existing windows read under another version than the one that last wrote them, reconciled (loadWindows). */
  reconciled: Set<string>;
  /** Of those, windows whose period now has other bounds (a change of zone), with the key of the new ones. */
  rebased: Map<string, WindowKey>;
}

export const stateOf = (doc: BudgetWindowDoc): WindowState => ({
  budgetCounterId: doc._id,
  committedMinor: fromStored(doc.committedMinor),
  heldMinor: fromStored(doc.heldMinor),
  openingBalanceMinor: fromStored(doc.openingBalanceMinor),
});

/**
 * Spend approved under a policy in a window's period (docs/internals/design.md §4 item 6), read from the analysts'
 * purchases read model: by the time of each request within the period's bounds, not by the day and
 * month labels stored with it (those are of the zone the organisation had then: after a change of
 * zone they name other hours).
 */
export async function attributableSpend(
  db: StoreDb,
  key: { policyId: string; currency: string; periodStart: string | Date; periodEnd: string | Date },
  session?: StoreSession,
): Promise<bigint> {
  const rows = await db
    .collection('analytics_purchases')
    .aggregate(
      [
        { $match: { policyIds: key.policyId, currency: key.currency, status: 'APPROVED', requestedAt: { $gte: new Date(key.periodStart), $lt: new Date(key.periodEnd) } } },
        { $group: { _id: null, total: { $sum: '$amountMinor' } } },
      ],
      session ? { session } : {},
    )
    .toArray();
  return BigInt(rows[0]?.total ?? 0);
}

/** A window cannot count more than MAX_WINDOW_MINOR (what storage holds exactly); past every limit either way. */
const capped = (amount: bigint): bigint => (amount > MAX_WINDOW_MINOR ? MAX_WINDOW_MINOR : amount);

/**
 * Loads the windows of `keys`, plus windows known only by id (those a pending purchase holds).
 *
 * A window counts the spend its policy governs only while a version whose limits read it is in force:
 * approvals under a version without such a limit do not write it. So a window first read under another
 * version than the one that last wrote it (`policyVersionId`) is reconciled: its opening balance grows
 * to the period's approved spend that its own commits do not account for, and the decision's batch
 * writes it (`reconciled`). Approvals that wrote none of a policy's windows write its policy document
 * (fencePoliciesOutsideWindows), so one racing the activation conflicts with this read.
 */
export async function loadWindows(db: StoreDb, keys: WindowKey[], session?: StoreSession, heldIds: string[] = []): Promise<LoadedWindows> {
  const loaded: LoadedWindows = { states: new Map(), docs: new Map(), missing: new Map(), versions: new Map(), reconciled: new Set(), rebased: new Map() };
  const ids = [...new Set([...keys.map(windowId), ...heldIds])];
  if (ids.length === 0) return loaded;
  const docs = await windowsCollection(db).find({ _id: { $in: ids } }, session ? { session } : {}).toArray();
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
      if (doc.periodStart.toISOString() !== key.periodStart || doc.periodEnd.toISOString() !== key.periodEnd) {
        // The organisation changed zone, and this period's name (a date) now covers other hours: the
        // window starts again over them from what was approved in them, keeping what it holds (the
        // pending purchases it holds are released or converted here).
        loaded.states.set(id, { ...stateOf(doc), committedMinor: 0n, openingBalanceMinor: capped(await attributableSpend(db, key, session)) });
        loaded.reconciled.add(id);
        loaded.rebased.set(id, key);
        continue;
      }
      if (doc.policyVersionId === key.policyVersionId) continue;
      const unaccounted = capped((await attributableSpend(db, key, session)) - fromStored(doc.committedMinor));
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

const DELTAS: Record<BudgetEffect['operation'], { held: bigint; committed: bigint }> = {
  COMMIT: { held: 0n, committed: 1n },
  HOLD: { held: 1n, committed: 0n },
  CONVERT_HOLD: { held: -1n, committed: 1n },
  RELEASE_HOLD: { held: -1n, committed: 0n },
};

/**
 * Adds the engine's budget effects to the batch, with the budget events of its crossings (README
 * "Budget events"). Returns the ids of the windows whose amounts changed.
 */
export async function applyBudgetEffects(
  db: StoreDb,
  session: StoreSession,
  batch: WriteBatch,
  organizationId: string,
  loaded: LoadedWindows,
  effects: BudgetEffect[],
  crossings: BudgetCrossing[],
  now: Date,
  policyNames: ReadonlyMap<string, string>,
): Promise<string[]> {
  const byWindow = new Map<string, { held: bigint; committed: bigint; key: WindowKey | null }>();
  for (const e of effects) {
    const d = DELTAS[e.operation];
    const acc = byWindow.get(e.windowId) ?? { held: 0n, committed: 0n, key: e.window };
    acc.held += d.held * e.amountMinor;
    acc.committed += d.committed * e.amountMinor;
    byWindow.set(e.windowId, acc);
  }
  // Crossings of spending are reported each time they happen. A refusal by a limit past 80% is
  // reported once per window and limit rule (`notified`), as is the limit being reached either way.
  const newlyNotified = new Map<string, string[]>();
  for (const c of crossings) {
    const tag = `EXHAUSTED:${c.policyRuleId}`;
    const already = loaded.docs.get(c.windowId)?.notified ?? [];
    const pending = newlyNotified.get(c.windowId) ?? [];
    if (c.kind === 'EXHAUSTED') {
      if (c.cause === 'PURCHASE_REFUSED' && (already.includes(tag) || pending.includes(tag))) continue;
      if (!already.includes(tag) && !pending.includes(tag)) newlyNotified.set(c.windowId, [...pending, tag]);
    }
    await queueEvent(db, session, batch, {
      type: c.kind === 'THRESHOLD_REACHED' ? 'budget.threshold_reached' : 'budget.exhausted',
      organizationId,
      createdAt: now,
      data: {
        budgetWindowId: c.windowId,
        policyId: c.window.policyId,
        policyName: policyNames.get(c.window.policyId) ?? null,
        policyVersionId: c.window.policyVersionId,
        policyRuleId: c.policyRuleId,
        effect: c.effect,
        currency: c.window.currency,
        periodKind: c.window.periodKind,
        periodKey: c.window.periodKey,
        limitMinor: c.limitMinor.toString(),
        usedMinor: c.usedAfterMinor.toString(),
        thresholdPercent: c.kind === 'THRESHOLD_REACHED' ? 80 : 100,
        cause: c.cause,
      },
    });
  }
  // A window whose only change is a new tag (a refusal moves no amounts), or a reconciled opening balance
  // (loadWindows), is written too, version-checked.
  const moved = [...byWindow.keys()];
  for (const id of newlyNotified.keys()) if (!byWindow.has(id)) byWindow.set(id, { held: 0n, committed: 0n, key: crossings.find((c) => c.windowId === id)!.window });
  for (const id of loaded.reconciled) if (!byWindow.has(id)) byWindow.set(id, { held: 0n, committed: 0n, key: null });

  // Each write version-checked: an existing window is updated only at the version read; a new one is
  // created by an upsert that matches only a document without a version, so a window created
  // meanwhile is a duplicate key.
  const conflict = (id: string) => () => new VersionConflict(`budget window ${id}`);
  for (const [id, delta] of byWindow) {
    const doc = loaded.docs.get(id);
    const notified = newlyNotified.get(id) ?? [];
    if (doc) {
      // From the state the decision read: a reconciled or rebased window's amounts, not the stored ones.
      const state = loaded.states.get(id) ?? stateOf(doc);
      const held = state.heldMinor + delta.held;
      const committed = state.committedMinor + delta.committed;
      const policyVersionId = loaded.versions.get(id) ?? doc.policyVersionId;
      const rebased = loaded.rebased.get(id);
      const $set = {
        heldMinor: toStored(held < 0n ? 0n : held),
        committedMinor: toStored(committed),
        openingBalanceMinor: toStored(state.openingBalanceMinor),
        ...(policyVersionId === undefined ? {} : { policyVersionId }),
        ...(rebased === undefined ? {} : { periodStart: new Date(rebased.periodStart), periodEnd: new Date(rebased.periodEnd) }),
        notified: [...doc.notified, ...notified],
        version: doc.version + 1,
        updatedAt: now,
      };
      batch.updateOne<BudgetWindowDoc>(WINDOWS, { _id: id, version: doc.version }, { $set }, { unlessMatched: conflict(id) });
      continue;
    }
    const missing = loaded.missing.get(id);
    const key = missing?.key ?? delta.key;
    if (!key) continue; // releasing a hold on a window that no longer exists: nothing holds it
    const created = {
      organizationId,
      policyId: key.policyId,
      currency: key.currency,
      periodKind: key.periodKind,
      periodKey: key.periodKey,
      periodStart: new Date(key.periodStart),
      periodEnd: new Date(key.periodEnd),
      committedMinor: toStored(delta.committed),
      heldMinor: toStored(delta.held < 0n ? 0n : delta.held),
      openingBalanceMinor: toStored(missing?.openingBalanceMinor ?? 0n),
      policyVersionId: key.policyVersionId,
      notified,
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    batch.updateOne<BudgetWindowDoc>(WINDOWS, { _id: id, version: { $exists: false } }, { $setOnInsert: created }, { upsert: true, onDuplicate: conflict(id) });
  }
  return moved;
}

/**
 * The fence that keeps opening balances exact (docs/internals/design.md §2). A window that opens mid-period (a new
 * version adds a SPEND_LIMIT) starts from the spend approved under its policy that no window counted
 * (attributableSpend). An approval that wrote none of that policy's windows for the period is invisible
 * to a concurrent transaction opening one, and they write no document in common: both would commit, and
 * the window would start short. So such an approval writes the policy document, which every change of
 * what is in force (a version activated, a status or scope changed) writes too: under snapshot isolation
 * an approval that read the previous version conflicts with the activation and is retried under the new
 * one, where it reads and writes the window itself. Policies whose DAY and MONTH windows this transaction
 * wrote need no fence (their windows already make the race a conflict).
 */
export function fencePoliciesOutsideWindows(
  batch: WriteBatch,
  approved: { policyIds: string[]; currency: string; requestedAt: Date; timeZone: string; windowIds: string[] },
): void {
  const written = new Set(approved.windowIds);
  const instant = approved.requestedAt.toISOString();
  const keys = (['DAY', 'MONTH'] as const).map((kind) => ({ periodKind: kind, periodKey: periodFor(kind, instant, approved.timeZone).periodKey }));
  for (const policyId of new Set(approved.policyIds)) {
    if (keys.every((k) => written.has(windowId({ policyId, currency: approved.currency, ...k })))) continue;
    batch.updateOne<{ _id: string; fence?: number }>('policies', { _id: policyId }, { $inc: { fence: 1 } });
  }
}
