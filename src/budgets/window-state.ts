// A budget window's stored document and the state a command reads from it (docs/reference/contract.md §2.6).
// No I/O here: loading is src/budgets/windows.ts, writing src/budgets/window-writes.ts.
import type { WindowKey, WindowState } from '../engine/types.ts';
import { fromStored } from '../money.ts';

export const WINDOWS = 'budget_windows';

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
  /** `EXHAUSTED:${effect}:${limitMinor}` of the limits already reported exhausted in this window (`EXHAUSTED:${policyRuleId}` before). */
  notified: string[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
}


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
  /**
   * Windows taken from the organisation actor's memory rather than read in this transaction: a record that
   * does not write one of them at its version must have it confirmed (src/purchases/record-writer.ts).
   */
  remembered: Set<string>;
}

/** How many windows an organisation's actor remembers at most (the most recently used). */
export const REMEMBERED_WINDOWS = 64;

/**
 * The windows an actor remembers after a command: what it remembered, then the windows the command read or
 * wrote as they now stand (most recent last), the oldest dropped past REMEMBERED_WINDOWS.
 */
export function rememberWindows(before: ReadonlyMap<string, BudgetWindowDoc> | undefined, now: ReadonlyMap<string, BudgetWindowDoc>): Map<string, BudgetWindowDoc> {
  const windows = new Map(before);
  for (const [id, doc] of now) {
    windows.delete(id);
    windows.set(id, doc);
  }
  for (const id of windows.keys()) {
    if (windows.size <= REMEMBERED_WINDOWS) break;
    windows.delete(id);
  }
  return windows;
}

export const stateOf = (doc: BudgetWindowDoc): WindowState => ({
  budgetCounterId: doc._id,
  committedMinor: fromStored(doc.committedMinor),
  heldMinor: fromStored(doc.heldMinor),
  openingBalanceMinor: fromStored(doc.openingBalanceMinor),
});

