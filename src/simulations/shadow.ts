// The shadow's evaluation (docs/integrate/simulations.md#shadow, docs/operate/shadow.md,
// docs/internals/design.md §9): every decision of an organisation is numbered by its receipt (the chain's
// seq, without gaps, in the order the decisions committed: docs/integrate/receipts.md), and a submission of
// an organisation with a draft in shadow writes beside its receipt what the shadow reads of it (`shadow`,
// src/policies/shadows.ts). Off the request path, the purchases after the shadow's place in the receipts
// are decided again by the replay's step (replay.ts) with the draft in place, over the shadow's own budget
// windows (kept in its document). The changes found go to `shadow_decisions`, beside the real decisions
// and never instead of them: no budget window, purchase, decision, event or read model is written, so
// nothing a decision reads changes.
//
// Durable and exactly once. The receipt commits with the decision, and the shadow's place (`receiptSeq`)
// moves in the transaction that records an evaluation, which checks the shadow document's version: of two
// processes evaluating the same receipts one commits, the other finds its version stale and starts again
// from the new state and place. No purchase can be committed and missed, whatever order purchases commit
// in and whatever process stops or dies when: a receipt's seq is taken in its decision's transaction from
// the one before it, so the receipts visible form a prefix of the chain. Purchases are evaluated in that
// order, the order the live decisions saw each other's budget effects in. No row is written or deleted
// per purchase: what the shadow costs a decision is the few hundred bytes on its receipt.
//
// What drives it: after a commit, the handler nudges this process's drain (a timer; never awaited by a
// request); the worker's recurring job and its start-up run (`simulations.shadow-catch-up`) drain every
// running shadow behind its organisation's receipts, after a process stopped or killed before its drain ran.
import type { AppDeps, ShadowDrain } from '../app-deps.ts';
import { runCommand } from '../commands/run-command.ts';
import type { ApprovalDoc } from '../purchases/documents.ts';
import { purchaseCollections } from '../purchases/documents.ts';
import { holdsDue, parseShadowInput, SHADOW_DECISIONS, SHADOW_HOLDS, SHADOWS, type ShadowCarriedEntry, type ShadowChangesDoc, type ShadowDoc, type ShadowHoldChunkDoc } from '../policies/shadows.ts';
import { RECEIPT_COLLECTIONS, type ReceiptChainDoc, type ReceiptDoc } from '../receipts/documents.ts';
import type { WindowState } from '../engine/types.ts';
import type { StoreDb } from '../store/store.ts';
import { changeWire, type PageQuery } from './replay-run.ts';
import { encodeCursor } from '../mcp/list-purchases.ts';
import { loadCarried, loadHistory, loadRecorded, replayPurchase, seedFrom, type CarriedHold, type PolicyHistory, type RecordedDecision, type RecordedPurchase, type ReplayHold, type ReplayState, type ReplayedPurchase } from './replay.ts';
import { configView } from '../cache/config-cache.ts';
import type { OrganizationDoc } from '../store/collections.ts';

export const SHADOW_CATCH_UP = 'simulations.shadow-catch-up';

export const shadowChanges = (db: StoreDb) => db.collection<ShadowChangesDoc>(SHADOW_DECISIONS);
const shadowHolds = (db: StoreDb) => db.collection<ShadowHoldChunkDoc>(SHADOW_HOLDS);
const receipts = (db: StoreDb) => db.collection<ReceiptDoc>(RECEIPT_COLLECTIONS.receipts);


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
  const versions = new Map<string, string>();
  for (const w of doc.windows) {
    windows.set(w.id, { budgetCounterId: null, committedMinor: BigInt(w.committedMinor), heldMinor: BigInt(w.heldMinor), openingBalanceMinor: BigInt(w.openingBalanceMinor) });
    ends.set(w.id, w.periodEnd);
    if (w.versionId !== undefined) versions.set(w.id, w.versionId);
  }
  const outside = new Map((doc.outside ?? []).map((o) => [o.id, { amountMinor: BigInt(o.amountMinor), periodEnd: o.periodEnd }]));
  return { windows, ends, versions, outside, holds: [...parseHolds(doc.holds), ...chunks.flatMap((c) => parseHolds(c.holds))], carried };
}

type HoldGroup = [
  windowIds: string[],
  holds: [purchaseId: string, amountMinor: string, expiresAtMs: number, approvalId: string | null, spend?: [agentId: string, currency: string, requestedAtMs: number]][],
];

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
    group[1].push(h.spend ? [h.purchaseId, h.amountMinor.toString(), h.expiresAt.getTime(), h.approvalId, h.spend] : [h.purchaseId, h.amountMinor.toString(), h.expiresAt.getTime(), h.approvalId]);
  }
  return JSON.stringify([...groups.values()]);
}

function parseHolds(text: string): ReplayHold[] {
  return (JSON.parse(text) as HoldGroup[]).flatMap(([windowIds, holds]) =>
    holds.map(([purchaseId, amountMinor, expiresAtMs, approvalId, spend]) => ({
      purchaseId,
      windowIds,
      amountMinor: BigInt(amountMinor),
      expiresAt: new Date(expiresAtMs),
      approvalId,
      ...(spend ? { spend } : {}),
    })),
  );
}

/**
 * The state to store: windows whose period ended a day before the newest purchase evaluated are dropped
 * (no later purchase reads them); the holds that follow a recorded approval stay in the document, and
 * those that end only by expiry go to the chunks of the seconds they expire in (holdChunkWrites).
 */
function fromState(state: ReplayState, newest: Date): { set: Pick<ShadowDoc, 'windows' | 'outside' | 'holds' | 'carried'>; expiring: ReplayHold[] } {
  const keepAfter = new Date(newest.getTime() - 86_400_000).toISOString();
  const windows = [...state.windows].flatMap(([id, w]) => {
    const periodEnd = state.ends.get(id)!;
    const versionId = state.versions.get(id);
    return periodEnd <= keepAfter
      ? []
      : [{ id, periodEnd, committedMinor: w.committedMinor.toString(), heldMinor: w.heldMinor.toString(), openingBalanceMinor: w.openingBalanceMinor.toString(), ...(versionId ? { versionId } : {}) }];
  });
  const outside = [...state.outside].flatMap(([id, o]) => (o.periodEnd <= keepAfter ? [] : [{ id, periodEnd: o.periodEnd, amountMinor: o.amountMinor.toString() }]));
  const following = state.holds.filter((h) => h.approvalId !== null);
  const expiring = state.holds.filter((h) => h.approvalId === null);
  return { set: { windows, outside, holds: stringifyHolds(following), carried: state.carried.map(fromCarried) }, expiring };
}

/** A purchase to evaluate: its receipt's place, its request and its recorded decision. */
interface Evaluated {
  seq: number;
  purchase: RecordedPurchase;
  decision: RecordedDecision;
}

/** The kind of decision a receipt is about, from its signed payload (a receipt without shadow input). */
function receiptKind(jws: string): string | undefined {
  try {
    return (JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as { kind?: string }).kind;
  } catch {
    return undefined;
  }
}

/**
 * The receipts after `seq`, up to `limit`, as far as they are consecutive (those visible form a prefix of
 * the chain; one missing is not committed yet): by their ids, which their seqs make.
 */
async function receiptsAfter(db: StoreDb, organizationId: string, seq: number, limit: number): Promise<ReceiptDoc[]> {
  const ids = Array.from({ length: limit }, (_, i) => `${organizationId}:${seq + 1 + i}`);
  const bySeq = new Map((await receipts(db).find({ _id: { $in: ids } }).toArray()).map((r) => [r.seq, r]));
  const out: ReceiptDoc[] = [];
  for (let next = seq + 1; bySeq.has(next); next++) out.push(bySeq.get(next)!);
  return out;
}

/**
 * The purchases of these receipts, in their order: from the shadow input each carries; a purchase's first
 * decision committed without it (its submission read the configuration before the shadow started) is read
 * from its purchase and decision. Receipts of other decisions (an answer's re-evaluation) are passed over.
 */
async function evaluatedOf(deps: AppDeps, run: readonly ReceiptDoc[]): Promise<Evaluated[]> {
  const out: Evaluated[] = [];
  const missing = new Map<string, number>();
  for (const r of run) {
    if (r.shadow !== undefined) {
      const { purchase, decision } = parseShadowInput(r.purchaseId, r.shadow);
      out.push({ seq: r.seq, purchase, decision });
    } else if (receiptKind(r.jws) === 'INITIAL') missing.set(r.purchaseId, r.seq);
  }
  if (missing.size > 0) {
    for (const { purchase, initial } of (await loadRecorded(deps, [...missing.keys()])).purchases) out.push({ seq: missing.get(purchase._id)!, purchase, decision: initial });
    out.sort((a, b) => a.seq - b.seq);
  }
  return out;
}

const changeKey = (requestedAt: string, purchaseId: string) => `${requestedAt}|${purchaseId}`;

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

/** More seconds than this due at once (a shadow that was not evaluated for hours): all its chunks are read instead. */
const DUE_SECONDS_BY_KEY = 3600;

const secondOf = (at: Date) => Math.floor(at.getTime() / 1000);

/** The chunks of holds that expire from the shadow's first second due to `untilSecond`. */
async function dueChunks(db: StoreDb, doc: ShadowDoc, untilSecond: number): Promise<ShadowHoldChunkDoc[]> {
  const count = untilSecond - doc.holdsDue + 1;
  if (count > DUE_SECONDS_BY_KEY) {
    const lifetime = `${doc._id}:${doc.startedAt.getTime()}:`;
    return (await shadowHolds(db).find({ shadowId: doc._id }).toArray()).filter((c) => c.due.startsWith(lifetime) && Number(c.due.slice(lifetime.length)) <= untilSecond);
  }
  return shadowHolds(db).find({ due: { $in: Array.from({ length: count }, (_, i) => holdsDue(doc._id, doc.startedAt, doc.holdsDue + i)) } }).toArray();
}

/**
 * The chunks to write once a batch is evaluated (`seq`: its first receipt's): one per second that the
 * holds only expiring are in (those it made, and those of the chunks it read still held), for the chunks
 * it read, which go.
 */
function holdChunkWrites(doc: ShadowDoc, seq: number, read: readonly ShadowHoldChunkDoc[], expiring: readonly ReplayHold[]) {
  const bySecond = new Map<string, ReplayHold[]>();
  for (const h of expiring) {
    const due = holdsDue(doc._id, doc.startedAt, secondOf(h.expiresAt));
    let list = bySecond.get(due);
    if (list === undefined) bySecond.set(due, (list = []));
    list.push(h);
  }
  const chunks: ShadowHoldChunkDoc[] = [...bySecond].map(([due, holds]) => ({ _id: `${due}:${seq}`, shadowId: doc._id, due, holds: stringifyHolds(holds) }));
  return { chunks, gone: read.map((c) => c._id) };
}

/**
 * Evaluates the purchases of the next receipts after one shadow's place and commits that; returns how
 * many receipts it went past (0: none yet, or the shadow is not running).
 */
async function drainBatch(deps: AppDeps, shadowId: string): Promise<number> {
  const db = deps.store.db;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const doc = await db.collection<ShadowDoc>(SHADOWS).findOne({ _id: shadowId });
    // A stopped shadow evaluates nothing more.
    if (!doc || doc.status !== 'RUNNING') return 0;
    const run = await receiptsAfter(db, doc.organizationId, doc.receiptSeq, BATCH);
    if (run.length === 0) return 0;
    // Purchases requested before the start (in flight as it started) are not this lifetime's.
    const live = (await evaluatedOf(deps, run)).filter((e) => e.purchase.requestedAt.getTime() >= doc.startedAt.getTime());
    const setting = await shadowSetting(deps, doc);
    if (setting === null) return 0;
    const approvals = new Map<string, ApprovalDoc>();
    // The holds pending at the start are carried in once, by the first evaluation, as a replay from the start carries them.
    let carried: CarriedHold[];
    if (doc.carried === undefined) {
      const loaded = await loadCarried(deps, setting.organization, setting.history, doc.startedAt);
      carried = loaded.carried;
      for (const a of loaded.approvals) approvals.set(a._id, a);
    } else carried = doc.carried.map(toCarried);
    // The holds that expire by the newest purchase of the batch (the others cannot settle in it): those of the seconds due.
    const until = live.reduce((m, e) => (e.purchase.requestedAt > m ? e.purchase.requestedAt : m), new Date(0));
    const untilSecond = secondOf(until);
    const chunks = live.length === 0 || untilSecond < doc.holdsDue ? [] : await dueChunks(db, doc, untilSecond);
    const state = toState(doc, carried, chunks);
    // The approvals whose answers the holds follow, as known now: those of the holds kept, of the holds carried
    // in, and of the purchases of this batch that were escalated (a hold of the draft follows the recorded one).
    const waiting = new Set([
      ...state.holds.flatMap((h) => (h.approvalId !== null ? [h.approvalId] : [])),
      ...state.carried.flatMap((c) => (c.settled === null ? [c.approvalId] : [])),
      ...live.flatMap((e) => (e.decision.outcome === 'REQUIRES_APPROVAL' && e.purchase.approvalId !== null ? [e.purchase.approvalId] : [])),
    ]);
    for (const id of approvals.keys()) waiting.delete(id);
    if (waiting.size > 0) for (const a of await purchaseCollections(db).approvals.find({ _id: { $in: [...waiting] } }).toArray()) approvals.set(a._id, a);
    const ctx = { organization: setting.organization, history: setting.history, seed: seedFrom(deps, doc.organizationId, doc.startedAt), approval: (id: string) => approvals.get(id), from: doc.startedAt };
    const results: ReplayedPurchase[] = [];
    for (const e of live) results.push(await replayPurchase(ctx, state, e.purchase, e.decision));

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
    const holdWrites = holdChunkWrites(doc, run[0].seq, chunks, expiring);
    // The changed purchases, for the report's list, as one chunk in the list's order (the summary counts the others).
    const changes = results
      .filter((r) => r.changed)
      .map((r) => changeWire(r))
      .sort((a, b) => compareKeys(changeKey(a.requestedAt, a.purchaseRequestId), changeKey(b.requestedAt, b.purchaseRequestId)));
    const changesDoc: ShadowChangesDoc | null =
      changes.length === 0
        ? null
        : {
            _id: `${shadowId}:${run[0].seq}`,
            versionId: shadowId,
            organizationId: doc.organizationId,
            fromKey: changeKey(changes[0].requestedAt, changes[0].purchaseRequestId),
            toKey: changeKey(changes[changes.length - 1].requestedAt, changes[changes.length - 1].purchaseRequestId),
            changes: JSON.stringify(changes),
          };
    const receiptSeq = run[run.length - 1].seq;
    // The state, the place and the changes together, at the version read: a process that evaluated meanwhile
    // wins, and this one reads its state and place again. (A stop moves the version too.)
    const won = await runCommand(deps.store, async (session) => {
      // Not through the stamped collection: the state changes on every evaluation and is no configuration.
      const updated = await db
        .collection<ShadowDoc>(SHADOWS)
        .updateOne(
          { _id: shadowId, version: doc.version },
          { $set: { ...set, summary, cursor: newest, receiptSeq, holdsDue: live.length === 0 ? doc.holdsDue : Math.max(doc.holdsDue, untilSecond) }, $inc: { version: 1 } },
          { session },
        );
      if (updated.matchedCount === 0) return false;
      if (changesDoc !== null) await shadowChanges(db).insertOne(changesDoc, { session });
      if (holdWrites.gone.length > 0) await shadowHolds(db).deleteMany({ _id: { $in: holdWrites.gone } }, { session });
      if (holdWrites.chunks.length > 0) await shadowHolds(db).insertMany(holdWrites.chunks, { session });
      return true;
    });
    if (won) return run.length;
  }
  deps.log.warn('shadow evaluation gave up after repeated races; the purchases stay pending for the next run', { shadowId });
  return 0;
}

const compareKeys = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Evaluates everything one shadow has pending. */
export async function drainShadow(deps: AppDeps, shadowId: string): Promise<number> {
  let total = 0;
  for (let n = await drainBatch(deps, shadowId); n > 0; n = await drainBatch(deps, shadowId)) total += n;
  return total;
}

/** The recurring job and the start-up run: every running shadow behind its organisation's receipts. */
export async function catchUpShadows(deps: AppDeps): Promise<number> {
  const db = deps.store.db;
  const running = await db.collection<ShadowDoc>(SHADOWS).find({ status: 'RUNNING' }, { projection: { _id: 1, organizationId: 1, receiptSeq: 1 } }).toArray();
  let total = 0;
  for (const s of running.sort((a, b) => compareKeys(a._id, b._id))) {
    const chain = await db.collection<ReceiptChainDoc>(RECEIPT_COLLECTIONS.chains).findOne({ _id: s.organizationId });
    if ((chain?.seq ?? 0) > s.receiptSeq) total += await drainShadow(deps, s._id);
  }
  return total;
}

/**
 * How far behind a shadow is: the decisions of its organisation recorded after its place (an answer's
 * re-evaluation, which it passes over, included), and when the first of them was made.
 */
export async function shadowLag(db: StoreDb, shadow: Pick<ShadowDoc, 'organizationId' | 'receiptSeq'>): Promise<{ pending: number; oldestRequestedAt: Date | null }> {
  const chain = await db.collection<ReceiptChainDoc>(RECEIPT_COLLECTIONS.chains).findOne({ _id: shadow.organizationId });
  const pending = Math.max(0, (chain?.seq ?? 0) - shadow.receiptSeq);
  if (pending === 0) return { pending, oldestRequestedAt: null };
  const next = await receipts(db).findOne({ _id: `${shadow.organizationId}:${shadow.receiptSeq + 1}` });
  let at: Date | null = null;
  if (next?.shadow !== undefined) at = parseShadowInput(next.purchaseId, next.shadow).purchase.requestedAt;
  else if (next) {
    const evaluatedAt = (JSON.parse(Buffer.from(next.jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as { evaluatedAt?: string }).evaluatedAt;
    at = evaluatedAt ? new Date(evaluatedAt) : null;
  }
  return { pending, oldestRequestedAt: at };
}

/**
 * A page of a shadow's changes in the report's order (requestedAt, then purchase id), after the cursor's:
 * from the chunks whose last change comes after it, by their first, until no later chunk can hold one of
 * the page (chunks overlap only where purchases committed in another order than they were requested).
 */
export async function shadowChangesPage(db: StoreDb, versionId: string, q: PageQuery) {
  const after = q.after === null ? '' : changeKey(q.after.requestedAt.toISOString(), q.after.id);
  const found: { key: string; change: ReturnType<typeof changeWire> }[] = [];
  const STEP = 4;
  // Chunks after the last one read, by its keys, not by a count read: one committed meanwhile before it would
  // shift a count, and the chunk at the boundary would be read (and listed) twice.
  let read: { fromKey: string; _id: string } | null = null;
  for (;;) {
    const next: Record<string, unknown> = read === null ? {} : { $or: [{ fromKey: { $gt: read.fromKey } }, { fromKey: read.fromKey, _id: { $gt: read._id } }] };
    const chunks: ShadowChangesDoc[] = await shadowChanges(db).find({ versionId, toKey: { $gt: after }, ...next }).sort({ fromKey: 1, _id: 1 }).limit(STEP).toArray();
    let done = chunks.length < STEP;
    if (chunks.length > 0) read = chunks[chunks.length - 1];
    for (const c of chunks) {
      if (found.length > q.limit && c.fromKey > found[q.limit].key) {
        done = true;
        break;
      }
      for (const change of JSON.parse(c.changes) as ReturnType<typeof changeWire>[]) {
        const key = changeKey(change.requestedAt, change.purchaseRequestId);
        if (key > after) found.push({ key, change });
      }
      found.sort((a, b) => compareKeys(a.key, b.key));
    }
    if (done) break;
  }
  const page = found.slice(0, q.limit);
  const hasMore = found.length > q.limit;
  const last = page[page.length - 1];
  return {
    changes: page.map((f) => f.change),
    nextCursor: hasMore && last ? encodeCursor({ requestedAt: new Date(last.change.requestedAt), id: last.change.purchaseRequestId }) : null,
    hasMore,
  };
}

/**
 * This process's drain: organisations nudged are drained one at a time, on a later turn of the event
 * loop, never awaited by a request. A failure leaves the purchases pending for the next nudge or the worker.
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
