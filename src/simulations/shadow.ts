// The shadow's evaluation (docs/integrate/simulations.md#shadow, docs/operate/shadow.md): after a submission
// of an organisation with a draft in shadow has committed, its purchase is queued here, in this process,
// and decided again off the request path by the replay's step (replay.ts) with the draft in place, over
// the shadow's own budget windows (kept in its document, src/policies/shadows.ts). The result is written
// to `shadow_decisions`, beside the real decision and never instead of it: no budget window, purchase,
// decision, event or read model is written, so nothing a decision reads changes.
import type { AppDeps } from '../app-deps.ts';
import { runCommand } from '../commands/run-command.ts';
import type { ApprovalDoc } from '../purchases/documents.ts';
import { purchaseCollections } from '../purchases/documents.ts';
import { shadowCollection, SHADOWS, type ShadowDoc } from '../policies/shadows.ts';
import type { WindowState } from '../engine/types.ts';
import type { StoreDb } from '../store/store.ts';
import { changeWire } from './replay-run.ts';
import { loadHistory, loadRecorded, replayPurchase, seedFrom, type ReplayHold, type ReplayState, type ReplayedPurchase } from './replay.ts';

export const SHADOW_DECISIONS = 'shadow_decisions';

export interface ShadowDecisionDoc {
  /** `${versionId}:${purchaseId}`: a purchase is evaluated once per shadow. */
  _id: string;
  versionId: string;
  organizationId: string;
  purchaseId: string;
  requestedAt: Date;
  changed: boolean;
  change: ReturnType<typeof changeWire>;
}

export const shadowDecisions = (db: StoreDb) => db.collection<ShadowDecisionDoc>(SHADOW_DECISIONS);

/** What a shadow drain hands the handler: queue a committed purchase of an organisation. */
export interface ShadowQueue {
  queue(organizationId: string, purchaseId: string): void;
  /** Resolves once everything queued so far is evaluated (tests, the bench and shutdown). */
  idle(): Promise<void>;
}

const BATCH = 200;
const ATTEMPTS = 5;

function toState(doc: ShadowDoc): ReplayState {
  const windows = new Map<string, WindowState>();
  const ends = new Map<string, string>();
  for (const w of doc.windows) {
    windows.set(w.id, { budgetCounterId: null, committedMinor: BigInt(w.committedMinor), heldMinor: BigInt(w.heldMinor), openingBalanceMinor: BigInt(w.openingBalanceMinor) });
    ends.set(w.id, w.periodEnd);
  }
  const holds: ReplayHold[] = doc.holds.map((h) => ({ ...h, amountMinor: BigInt(h.amountMinor) }));
  return { windows, ends, holds };
}

/** The state to store: windows whose period ended a day before the newest purchase evaluated are dropped (no later purchase reads them). */
function fromState(state: ReplayState, newest: Date): Pick<ShadowDoc, 'windows' | 'holds'> {
  const keepAfter = new Date(newest.getTime() - 86_400_000).toISOString();
  const windows = [...state.windows].flatMap(([id, w]) => {
    const periodEnd = state.ends.get(id)!;
    return periodEnd <= keepAfter
      ? []
      : [{ id, periodEnd, committedMinor: w.committedMinor.toString(), heldMinor: w.heldMinor.toString(), openingBalanceMinor: w.openingBalanceMinor.toString() }];
  });
  return { windows, holds: state.holds.map((h) => ({ ...h, amountMinor: h.amountMinor.toString() })) };
}

/** Evaluates the purchases with these ids for one shadow: at most once each, in the order given. */
async function evaluateFor(deps: AppDeps, shadowId: string, ids: string[]): Promise<void> {
  const db = deps.store.db;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const doc = await db.collection<ShadowDoc>(SHADOWS).findOne({ _id: shadowId });
    if (!doc || doc.status !== 'RUNNING') return;
    const done = new Set((await shadowDecisions(db).find({ _id: { $in: ids.map((id) => `${shadowId}:${id}`) } }, { projection: { purchaseId: 1 } }).toArray()).map((d) => d.purchaseId));
    const recorded = await loadRecorded(deps, ids.filter((id) => !done.has(id)));
    const todo = recorded.purchases.filter(({ purchase }) => purchase.requestedAt.getTime() >= doc.startedAt.getTime());
    if (todo.length === 0) return;
    const [org, version] = await Promise.all([deps.collections.organizations.findOne({ _id: doc.organizationId }), deps.collections.policyVersions.findOne({ _id: shadowId })]);
    if (!org || !version) return;
    const state = toState(doc);
    const approvals = new Map<string, ApprovalDoc>(recorded.approvals.map((a) => [a._id, a]));
    const waiting = state.holds.flatMap((h) => (h.approvalId !== null && !approvals.has(h.approvalId) ? [h.approvalId] : []));
    if (waiting.length > 0) for (const a of await purchaseCollections(db).approvals.find({ _id: { $in: waiting } }).toArray()) approvals.set(a._id, a);
    const ctx = { organization: org, history: await loadHistory(deps, org._id, version), seed: seedFrom(deps, doc.startedAt), approval: (id: string) => approvals.get(id) };
    const results: ReplayedPurchase[] = [];
    for (const { purchase, initial } of todo) results.push(await replayPurchase(ctx, state, purchase, initial));

    const summary = structuredClone(doc.summary);
    for (const r of results) {
      summary.evaluated++;
      if (!r.changed) continue;
      summary.changed++;
      const transition = `${r.recorded.outcome}->${r.replayed.outcome}`;
      summary.byTransition[transition] = (summary.byTransition[transition] ?? 0) + 1;
      for (const code of r.replayed.reasonCodes) summary.byReasonCode[code] = (summary.byReasonCode[code] ?? 0) + 1;
    }
    const newest = results.reduce((m, r) => (r.requestedAt > m ? r.requestedAt : m), doc.cursor);
    const rows: ShadowDecisionDoc[] = results.map((r) => ({
      _id: `${shadowId}:${r.purchaseId}`,
      versionId: shadowId,
      organizationId: doc.organizationId,
      purchaseId: r.purchaseId,
      requestedAt: r.requestedAt,
      changed: r.changed,
      change: changeWire(r),
    }));
    // The state and the rows together, at the version read: a process that evaluated meanwhile wins, and this batch is evaluated again from its state.
    const won = await runCommand(deps.store, async (session) => {
      const current = await db.collection<ShadowDoc>(SHADOWS).findOne({ _id: shadowId }, { session });
      if (!current || current.version !== doc.version || current.status !== 'RUNNING') return false;
      // Not through the stamped collection: the state changes on every evaluation and is no configuration.
      await db.collection<ShadowDoc>(SHADOWS).updateOne({ _id: shadowId, version: doc.version }, { $set: { ...fromState(state, newest), summary, cursor: newest }, $inc: { version: 1 } }, { session });
      await shadowDecisions(db).insertMany(rows, { session });
      return true;
    });
    if (won) return;
  }
  deps.log.warn('shadow evaluation gave up after repeated races; the purchases stay unevaluated', { shadowId, count: ids.length });
}

/**
 * A per-process queue of committed purchases per organisation, drained one organisation at a time in
 * the order the purchases committed, on a later turn of the event loop: never awaited by a request.
 */
export function shadowQueue(deps: () => AppDeps): ShadowQueue {
  const pending = new Map<string, string[]>();
  let running: Promise<void> | null = null;

  const drain = async () => {
    while (pending.size > 0) {
      const [orgId, ids] = pending.entries().next().value!;
      const batch = ids.splice(0, BATCH);
      if (ids.length === 0) pending.delete(orgId);
      try {
        const d = deps();
        const shadows = await shadowCollection(d.store.db).find({ organizationId: orgId, status: 'RUNNING' }, { projection: { _id: 1 } }).toArray();
        for (const s of shadows) await evaluateFor(d, s._id, batch);
      } catch (err) {
        deps().log.warn('shadow evaluation failed; those purchases stay unevaluated', { organizationId: orgId, err: String(err) });
      }
    }
  };

  const start = () => {
    if (running) return;
    running = new Promise<void>((resolve) => setImmediate(resolve))
      .then(drain)
      .finally(() => {
        running = null;
        if (pending.size > 0) start();
      });
  };

  return {
    queue(organizationId, purchaseId) {
      const list = pending.get(organizationId);
      if (list) list.push(purchaseId);
      else pending.set(organizationId, [purchaseId]);
      start();
    },
    async idle() {
      while (running) await running;
    },
  };
}
