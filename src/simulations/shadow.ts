// The shadow's evaluation (docs/integrate/simulations.md#shadow, docs/operate/shadow.md,
// docs/internals/design.md §9): a submission of an organisation with a draft in shadow leaves its purchase
// to the shadow in its own transaction (a `shadow_pending` row, src/policies/shadows.ts), and the purchase
// is decided again off the request path by the replay's step (replay.ts) with the draft in place, over
// the shadow's own budget windows (kept in its document). The result is written to `shadow_decisions`,
// beside the real decision and never instead of it: no budget window, purchase, decision, event or read
// model is written, so nothing a decision reads changes.
//
// Durable and exactly once. The pending row commits with the purchase, so no purchase can be committed
// and missed, whatever order purchases commit in and whatever process stops or dies when: no checkpoint
// on requestedAt (a transaction that read its clock first can commit after one that read it later, and
// would fall behind such a checkpoint). The evaluation of a batch commits in one transaction that
// checks the shadow document's version, writes its state and the decisions (keyed by shadow and
// purchase) and deletes those pending rows: of two processes evaluating the same rows one commits, the
// other finds its version stale and starts again from the new state, where those rows are gone.
// Rows are evaluated in the order (requestedAt, purchase id) among those visible: purchases committed
// concurrently are evaluated in the order their commits became visible, which is also the order the
// live decisions saw each other's budget effects in.
//
// What drives it: after a commit, the handler nudges this process's drain (setImmediate; never awaited by
// a request); the worker's recurring job and its start-up run (`simulations.shadow-catch-up`) drain every
// shadow with rows left, those of a process stopped or killed before its drain ran included.
import type { AppDeps } from '../app-deps.ts';
import { runCommand } from '../commands/run-command.ts';
import type { ApprovalDoc } from '../purchases/documents.ts';
import { purchaseCollections } from '../purchases/documents.ts';
import { pendingDecision, SHADOW_HOLDS, SHADOW_PENDING, SHADOWS, type ShadowCarriedEntry, type ShadowDoc, type ShadowHoldChunkDoc, type ShadowPendingDoc } from '../policies/shadows.ts';
import { newId } from '../ids.ts';
import type { WindowState } from '../engine/types.ts';
import type { StoreDb } from '../store/store.ts';
import { changeWire } from './replay-run.ts';
import { loadCarried, loadHistory, replayPurchase, seedFrom, type CarriedHold, type PolicyHistory, type RecordedPurchase, type ReplayHold, type ReplayState, type ReplayedPurchase } from './replay.ts';
import { configView } from '../cache/config-cache.ts';
import type { OrganizationDoc } from '../store/collections.ts';

export const SHADOW_DECISIONS = 'shadow_decisions';
export const SHADOW_CATCH_UP = 'simulations.shadow-catch-up';

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
export const shadowPending = (db: StoreDb) => db.collection<ShadowPendingDoc>(SHADOW_PENDING);
const shadowHolds = (db: StoreDb) => db.collection<ShadowHoldChunkDoc>(SHADOW_HOLDS);

/** This process's drain: the handler nudges it after a commit of an organisation with a shadow. */
export interface ShadowDrain {
  nudge(organizationId: string): void;
  /** Resolves once every nudge so far has been drained (tests, the bench and shutdown). */
  idle(): Promise<void>;
}

const BATCH = 500;
/**
 * How long a nudge waits before the drain runs: the commits of that while are evaluated as one batch,
 * whose cost (the shadow's state read and written once, the policies loaded once) is shared by all.
 */
const COALESCE_MS = 250;
const ATTEMPTS = 20;

const toCarried = (c: ShadowCarriedEntry): CarriedHold => ({ ...c, amountMinor: BigInt(c.amountMinor), windowIds: [...c.windowIds] });
const fromCarried = (c: CarriedHold): ShadowCarriedEntry => ({ ...c, amountMinor: c.amountMinor.toString() });

function toState(doc: ShadowDoc, carried: CarriedHold[], chunks: readonly ShadowHoldChunkDoc[]): ReplayState {
  const windows = new Map<string, WindowState>();
  const ends = new Map<string, string>();
  for (const w of doc.windows) {
    windows.set(w.id, { budgetCounterId: null, committedMinor: BigInt(w.committedMinor), heldMinor: BigInt(w.heldMinor), openingBalanceMinor: BigInt(w.openingBalanceMinor) });
    ends.set(w.id, w.periodEnd);
  }
  return { windows, ends, holds: [...parseHolds(doc.holds), ...chunks.flatMap((c) => parseHolds(c.holds))], carried };
}

type HoldGroup = [windowIds: string[], holds: [purchaseId: string, amountMinor: string, expiresAtMs: number, approvalId: string | null][]];

/**
 * The holds as stored: grouped by the windows they hold (most of an organisation's share a few sets of
 * windows), so each window id is written once per set rather than once per hold.
 */
function stringifyHolds(holds: readonly ReplayHold[]): string {
  const groups = new Map<string, HoldGroup>();
  for (const h of holds) {
    const key = h.windowIds.join(' ');
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = [h.windowIds, []]));
    group[1].push([h.purchaseId, h.amountMinor.toString(), h.expiresAt.getTime(), h.approvalId]);
  }
  return JSON.stringify([...groups.values()]);
}

function parseHolds(text: string): ReplayHold[] {
  return (JSON.parse(text) as HoldGroup[]).flatMap(([windowIds, holds]) =>
    holds.map(([purchaseId, amountMinor, expiresAtMs, approvalId]) => ({ purchaseId, windowIds, amountMinor: BigInt(amountMinor), expiresAt: new Date(expiresAtMs), approvalId })),
  );
}

/**
 * The state to store: windows whose period ended a day before the newest purchase evaluated are dropped
 * (no later purchase reads them); the holds that follow a recorded approval stay in the document, and
 * those that end only by expiry go to a chunk of their own (null: none).
 */
function fromState(state: ReplayState, newest: Date): { set: Pick<ShadowDoc, 'windows' | 'holds' | 'carried'>; expiring: ReplayHold[] } {
  const keepAfter = new Date(newest.getTime() - 86_400_000).toISOString();
  const windows = [...state.windows].flatMap(([id, w]) => {
    const periodEnd = state.ends.get(id)!;
    return periodEnd <= keepAfter
      ? []
      : [{ id, periodEnd, committedMinor: w.committedMinor.toString(), heldMinor: w.heldMinor.toString(), openingBalanceMinor: w.openingBalanceMinor.toString() }];
  });
  const following = state.holds.filter((h) => h.approvalId !== null);
  const expiring = state.holds.filter((h) => h.approvalId === null);
  return { set: { windows, holds: stringifyHolds(following), carried: state.carried.map(fromCarried) }, expiring };
}

/** The purchase a pending row carries, as the replay's step reads it. */
const recordedPurchase = (row: ShadowPendingDoc): RecordedPurchase => ({
  _id: row.purchaseId,
  agentId: row.agentId,
  merchant: row.merchant,
  amountMinor: row.amountMinor,
  currency: row.currency,
  category: row.category,
  requestedAt: row.requestedAt,
  approvalId: row.approvalId,
});

/**
 * The organisation and its policies' history with the draft in place, from the configuration cache
 * (src/cache/config-cache.ts): loaded again only when the configuration changed, not by every batch.
 */
async function shadowSetting(deps: AppDeps, doc: ShadowDoc): Promise<{ organization: OrganizationDoc; history: PolicyHistory } | null> {
  const config = await configView(deps.store.db);
  return config.get(`shadow-setting:${doc._id}`, async () => {
    const [organization, version] = await Promise.all([deps.collections.organizations.findOne({ _id: doc.organizationId }), deps.collections.policyVersions.findOne({ _id: doc._id })]);
    return organization && version ? { organization, history: await loadHistory(deps, organization._id, version) } : null;
  });
}

/**
 * Evaluates the next batch of one shadow's pending purchases and commits it; returns how many pending rows
 * it consumed (0: none left, or the shadow is not running).
 */
async function drainBatch(deps: AppDeps, shadowId: string): Promise<number> {
  const db = deps.store.db;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const doc = await db.collection<ShadowDoc>(SHADOWS).findOne({ _id: shadowId });
    if (!doc || doc.status !== 'RUNNING') {
      // A stopped shadow evaluates nothing more: what it had yet to evaluate goes.
      await shadowPending(db).deleteMany({ shadowId });
      return 0;
    }
    const rows = await shadowPending(db).find({ shadowId }).sort({ requestedAt: 1, purchaseId: 1 }).limit(BATCH).toArray();
    if (rows.length === 0) return 0;
    // Rows of an earlier lifetime (written by a submission in flight as it restarted) are not this one's.
    const live = rows.filter((r) => r.requestedAt.getTime() >= doc.startedAt.getTime());
    const setting = await shadowSetting(deps, doc);
    if (setting === null) return 0;
    const approvals = new Map<string, ApprovalDoc>();
    // The holds pending at the start are carried in once, by the first evaluation, as a replay from the start carries them.
    let carried: CarriedHold[];
    if (doc.carried === undefined) {
      const loaded = await loadCarried(deps, doc.organizationId, doc.startedAt);
      carried = loaded.carried;
      for (const a of loaded.approvals) approvals.set(a._id, a);
    } else carried = doc.carried.map(toCarried);
    // The chunks of holds whose first expiry comes by the newest purchase of the batch: the others cannot settle in it.
    const until = live.reduce((m, r) => (r.requestedAt > m ? r.requestedAt : m), new Date(0));
    const chunks = live.length === 0 ? [] : (await shadowHolds(db).find({ shadowId, expiresFrom: { $lte: until } }).toArray()).filter((c) => c.startedAt.getTime() === doc.startedAt.getTime());
    const state = toState(doc, carried, chunks);
    // The approvals whose answers the holds follow, as known now: those of the holds kept, of the holds carried
    // in, and of the purchases of this batch that were escalated (a hold of the draft follows the recorded one).
    const waiting = new Set([
      ...state.holds.flatMap((h) => (h.approvalId !== null ? [h.approvalId] : [])),
      ...state.carried.flatMap((c) => (c.settled === null ? [c.approvalId] : [])),
      ...live.flatMap((r) => (r.outcome === 'REQUIRES_APPROVAL' && r.approvalId !== null ? [r.approvalId] : [])),
    ]);
    for (const id of approvals.keys()) waiting.delete(id);
    if (waiting.size > 0) for (const a of await purchaseCollections(db).approvals.find({ _id: { $in: [...waiting] } }).toArray()) approvals.set(a._id, a);
    const ctx = { organization: setting.organization, history: setting.history, seed: seedFrom(deps, doc.startedAt), approval: (id: string) => approvals.get(id), from: doc.startedAt };
    const results: ReplayedPurchase[] = [];
    for (const row of live) results.push(await replayPurchase(ctx, state, recordedPurchase(row), pendingDecision(row)));

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
    const { set, expiring } = fromState(state, newest);
    // The holds of the chunks read that are still held, and those the batch made, go to one new chunk.
    const chunk: ShadowHoldChunkDoc | null =
      expiring.length === 0
        ? null
        : { _id: newId(), shadowId, startedAt: doc.startedAt, expiresFrom: new Date(expiring.reduce((m, h) => Math.min(m, h.expiresAt.getTime()), Infinity)), holds: stringifyHolds(expiring) };
    // Only the changed purchases are kept, for the report's list: the summary counts the others, and a
    // purchase is evaluated once because its pending row goes in the same transaction.
    const decisions: ShadowDecisionDoc[] = results.filter((r) => r.changed).map((r) => ({
      _id: `${shadowId}:${r.purchaseId}`,
      versionId: shadowId,
      organizationId: doc.organizationId,
      purchaseId: r.purchaseId,
      requestedAt: r.requestedAt,
      changed: r.changed,
      change: changeWire(r),
    }));
    // The state, the decisions and the consumed rows together, at the version read: a process that evaluated
    // meanwhile wins, and this one reads its state and the rows still pending again.
    const won = await runCommand(deps.store, async (session) => {
      // Not through the stamped collection: the state changes on every evaluation and is no configuration.
      // A stop moves the version too, so a stopped shadow matches nothing here.
      const updated = await db
        .collection<ShadowDoc>(SHADOWS)
        .updateOne({ _id: shadowId, version: doc.version }, { $set: { ...set, summary, cursor: newest }, $inc: { version: 1 } }, { session });
      if (updated.matchedCount === 0) return false;
      if (decisions.length > 0) await shadowDecisions(db).insertMany(decisions, { session });
      if (chunks.length > 0) await shadowHolds(db).deleteMany({ _id: { $in: chunks.map((c) => c._id) } }, { session });
      if (chunk !== null) await shadowHolds(db).insertOne(chunk, { session });
      await shadowPending(db).deleteMany({ _id: { $in: rows.map((r) => r._id) } }, { session });
      return true;
    });
    if (won) return rows.length;
  }
  deps.log.warn('shadow evaluation gave up after repeated races; the purchases stay pending for the next run', { shadowId });
  return 0;
}

/** Evaluates everything one shadow has pending. */
export async function drainShadow(deps: AppDeps, shadowId: string): Promise<number> {
  let total = 0;
  for (let n = await drainBatch(deps, shadowId); n > 0; n = await drainBatch(deps, shadowId)) total += n;
  return total;
}

/** The recurring job and the start-up run: every shadow with purchases pending, stopped ones (whose rows go) included. */
export async function catchUpShadows(deps: AppDeps): Promise<number> {
  const ids: string[] = await shadowPending(deps.store.db).distinct('shadowId', {});
  let total = 0;
  for (const id of ids.sort()) total += await drainShadow(deps, id);
  return total;
}

/** How far behind a shadow is: the purchases it has yet to evaluate, and the request time of the oldest. */
export async function shadowLag(db: StoreDb, shadowId: string): Promise<{ pending: number; oldestRequestedAt: Date | null }> {
  const [pending, oldest] = await Promise.all([
    shadowPending(db).countDocuments({ shadowId }),
    shadowPending(db).find({ shadowId }).sort({ requestedAt: 1, purchaseId: 1 }).limit(1).toArray(),
  ]);
  return { pending, oldestRequestedAt: oldest[0]?.requestedAt ?? null };
}

/**
 * This process's drain: organisations nudged are drained one at a time, on a later turn of the event
 * loop, never awaited by a request. A failure leaves the rows pending for the next nudge or the worker.
 */
export function shadowDrain(deps: () => AppDeps): ShadowDrain {
  const nudged = new Set<string>();
  let running: Promise<void> | null = null;

  const drain = async () => {
    while (nudged.size > 0) {
      const orgId: string = nudged.values().next().value!;
      nudged.delete(orgId);
      try {
        const d = deps();
        const shadows = await d.store.db.collection<ShadowDoc>(SHADOWS).find({ organizationId: orgId, status: 'RUNNING' }, { projection: { _id: 1 } }).toArray();
        for (const s of shadows) await drainShadow(d, s._id);
      } catch (err) {
        deps().log.warn('shadow evaluation failed; the purchases stay pending for the next run', { organizationId: orgId, err: String(err) });
      }
    }
  };

  const start = () => {
    if (running) return;
    running = new Promise<void>((resolve) => setTimeout(resolve, COALESCE_MS))
      .then(drain)
      .finally(() => {
        running = null;
        if (nudged.size > 0) start();
      });
  };

  return {
    nudge(organizationId) {
      nudged.add(organizationId);
      start();
    },
    async idle() {
      while (running) await running;
    },
  };
}
