// What a command's budget effects do to the windows it loaded, worked out without I/O: the versioned
// writes (an update at the version read, or the creation of a window that did not exist) and the
// budget events of its crossings. A purchase command's `decide` calls it; its record carries the
// result, and the storage port writes it as it stands.
import type { BudgetCrossing, BudgetEffect, WindowKey } from '../engine/types.ts';
import { periodFor, windowId } from '../engine/periods.ts';
import { toStored } from '../money.ts';
import type { NewEvent } from '../events/outbox.ts';
import { stateOf, type BudgetWindowDoc, type LoadedWindows } from './window-state.ts';

/** One window's write: `$set` at `expectedVersion`, or the whole window when it is created (expectedVersion null). */
export type WindowWrite =
  | { id: string; expectedVersion: number; set: Partial<BudgetWindowDoc> & { version: number } }
  | { id: string; expectedVersion: null; created: Omit<BudgetWindowDoc, '_id'> };

export interface WindowChanges {
  writes: WindowWrite[];
  events: NewEvent[];
  /** The windows whose amounts changed (held or committed), in the order the effects name them. */
  moved: string[];
}

const DELTAS: Record<BudgetEffect['operation'], { held: bigint; committed: bigint }> = {
  COMMIT: { held: 0n, committed: 1n },
  HOLD: { held: 1n, committed: 0n },
  CONVERT_HOLD: { held: -1n, committed: 1n },
  RELEASE_HOLD: { held: -1n, committed: 0n },
};

/**
 * The windows' writes for the engine's budget effects, with the budget events of its crossings
 * (docs/integrate/webhooks.md "Budget events").
 */
export function windowChanges(
  organizationId: string,
  loaded: LoadedWindows,
  effects: readonly BudgetEffect[],
  crossings: readonly BudgetCrossing[],
  now: Date,
  policyNames: ReadonlyMap<string, string>,
): WindowChanges {
  const byWindow = new Map<string, { held: bigint; committed: bigint; key: WindowKey | null }>();
  for (const e of effects) {
    const d = DELTAS[e.operation];
    const acc = byWindow.get(e.windowId) ?? { held: 0n, committed: 0n, key: e.window };
    acc.held += d.held * e.amountMinor;
    acc.committed += d.committed * e.amountMinor;
    byWindow.set(e.windowId, acc);
  }
  // Crossings of spending are reported each time they happen. A refusal by a limit past 80% is
  // reported once per window and limit (`notified`), as is the limit being reached either way. A limit
  // is its effect and amount, not its rule: a new version of the policy that keeps the limit has new
  // rule ids, and the limit it keeps was reported already (docs/approve/approvals.md#budget-events).
  const events: NewEvent[] = [];
  const newlyNotified = new Map<string, string[]>();
  for (const c of crossings) {
    const tag = `EXHAUSTED:${c.effect}:${c.limitMinor}`;
    const already = loaded.docs.get(c.windowId)?.notified ?? [];
    const pending = newlyNotified.get(c.windowId) ?? [];
    if (c.kind === 'EXHAUSTED') {
      // `EXHAUSTED:${policyRuleId}`: how windows written before recorded a reported limit.
      const reported = already.includes(tag) || already.includes(`EXHAUSTED:${c.policyRuleId}`) || pending.includes(tag);
      if (c.cause === 'PURCHASE_REFUSED' && reported) continue;
      if (!already.includes(tag) && !pending.includes(tag)) newlyNotified.set(c.windowId, [...pending, tag]);
    }
    events.push({
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

  const writes: WindowWrite[] = [];
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
      writes.push({
        id,
        expectedVersion: doc.version,
        set: {
          heldMinor: toStored(held < 0n ? 0n : held),
          committedMinor: toStored(committed),
          openingBalanceMinor: toStored(state.openingBalanceMinor),
          ...(policyVersionId === undefined ? {} : { policyVersionId }),
          ...(rebased === undefined ? {} : { periodStart: new Date(rebased.periodStart), periodEnd: new Date(rebased.periodEnd) }),
          notified: [...doc.notified, ...notified],
          version: doc.version + 1,
          updatedAt: now,
        },
      });
      continue;
    }
    const missing = loaded.missing.get(id);
    const key = missing?.key ?? delta.key;
    if (!key) continue; // releasing a hold on a window that no longer exists: nothing holds it
    writes.push({
      id,
      expectedVersion: null,
      created: {
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
      },
    });
  }
  return { writes, events, moved };
}

/** The loaded windows after the writes: what the next command of the same actor would read. */
export function applyWindowWrites(loaded: LoadedWindows, writes: readonly WindowWrite[]): Map<string, BudgetWindowDoc> {
  const docs = new Map(loaded.docs);
  for (const w of writes) {
    if (w.expectedVersion === null) docs.set(w.id, { _id: w.id, ...w.created });
    else docs.set(w.id, { ...docs.get(w.id)!, ...w.set });
  }
  return docs;
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
 * wrote need no fence (their windows already make the race a conflict). Returns the policies to write.
 */
export function policiesToFence(approved: { policyIds: readonly string[]; currency: string; requestedAt: Date; timeZone: string; windowIds: readonly string[] }): string[] {
  const written = new Set(approved.windowIds);
  const instant = approved.requestedAt.toISOString();
  const keys = (['DAY', 'MONTH'] as const).map((kind) => ({ periodKind: kind, periodKey: periodFor(kind, instant, approved.timeZone).periodKey }));
  return [...new Set(approved.policyIds)].filter((policyId) => !keys.every((k) => written.has(windowId({ policyId, currency: approved.currency, ...k }))));
}
