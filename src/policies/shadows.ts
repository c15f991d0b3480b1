// Drafts in shadow (docs/integrate/simulations.md, docs/operate/shadow.md): a DRAFT version an operator has
// asked to be evaluated beside every live decision of its organisation. This module owns the shadow's
// document and the two operator commands (start, stop); the evaluation itself is src/simulations/shadow.ts.
// The collection is stamped (src/cache/config-cache.ts): a submission learns whether its organisation
// has a shadow from the configuration cache, never from a query of its own.
import type { ShadowStatusDoc } from '../store/collections.ts';
import type { AppDeps } from '../app-deps.ts';
import { stamped, type ConfigView } from '../cache/config-cache.ts';
import { ApiError, notFound, VersionConflict } from '../http/errors.ts';
import { runCommand } from '../commands/run-command.ts';
import { fencePolicy } from './fence.ts';
import { isDuplicateKeyError, type StoreCollection, type StoreDb, type StoreSession } from '../store/store.ts';
import type { ApplicabilityReason, Outcome, ReasonCode } from '../engine/types.ts';
import { RECEIPT_COLLECTIONS, type ReceiptChainDoc } from '../receipts/documents.ts';

export const SHADOWS = 'policy_shadows';

export interface ShadowWindowEntry {
  id: string;
  /** Exclusive end of the window's period: once every purchase evaluated is past it, it is dropped. */
  periodEnd: string;
  committedMinor: string;
  heldMinor: string;
  openingBalanceMinor: string;
  /** The policy version that last read it (src/simulations/replay.ts ReplayState.versions); absent in documents written before. */
  versionId?: string;
}

/** Approved spend the shadow counted outside a window of its (src/simulations/replay.ts ReplayState.outside). */
export interface ShadowOutsideEntry {
  id: string;
  periodEnd: string;
  amountMinor: string;
}

export interface ShadowHoldEntry {
  purchaseId: string;
  windowIds: string[];
  amountMinor: string;
  expiresAt: Date;
  /** The recorded purchase's own approval, whose answer the held amount follows (null: none was asked). */
  approvalId: string | null;
}

/** A purchase held before the shadow's start and still waiting then (src/simulations/replay.ts CarriedHold). */
export interface ShadowCarriedEntry {
  purchaseId: string;
  approvalId: string;
  agentId?: string;
  amountMinor: string;
  currency: string;
  requestedAt: Date;
  policyIds: string[];
  heldIds?: string[];
  approvedNow: boolean;
  windowIds: string[];
  settled: 'CONVERT' | 'RELEASE' | null;
}

/**
 * What a draft in shadow reads of a decision, written with the decision's receipt (src/purchases/record-writer.ts,
 * `shadow` on the receipt document) when its organisation has a shadow: the purchase's request and the
 * recorded decision's outcome, reasons and policy versions, as one JSON text. The receipts of an
 * organisation are numbered without gaps in the order their decisions committed (docs/integrate/receipts.md),
 * so a shadow's place in them (`receiptSeq`) is all it keeps of what it has evaluated: no row of its own
 * is written or deleted per purchase, and a purchase is evaluated once, in the order the live decisions
 * saw each other's budget effects (src/simulations/shadow.ts).
 */
export type ShadowInput = [
  agentId: string,
  merchant: string,
  amountMinor: number,
  currency: string,
  category: string | null,
  approvalId: string | null,
  requestedAtMs: number,
  outcome: Outcome,
  reasonCodes: ReasonCode[],
  /** The versions, space-separated, each followed by `+` when its policy applied by the agent's scope (a live decision's others applied by the organisation's). */
  policyVersions: string,
];

interface InputPurchase {
  agentId: string;
  merchant: string;
  amountMinor: number;
  currency: string;
  category: string | null;
  approvalId: string | null;
  requestedAt: Date;
}
interface InputDecision {
  outcome: Outcome;
  reasonCodes: ReasonCode[];
  policyVersions: { policyVersionId: string; applicabilityReason: ApplicabilityReason }[];
}

export const shadowInput = (purchase: InputPurchase, decision: InputDecision): string =>
  JSON.stringify([
    purchase.agentId,
    purchase.merchant,
    purchase.amountMinor,
    purchase.currency,
    purchase.category,
    purchase.approvalId,
    purchase.requestedAt.getTime(),
    decision.outcome,
    decision.reasonCodes,
    decision.policyVersions.map(({ policyVersionId, applicabilityReason }) => (applicabilityReason === 'AGENT_SCOPE' ? `${policyVersionId}+` : policyVersionId)).join(' '),
  ] satisfies ShadowInput);

/** The purchase and recorded decision a receipt's shadow input holds, as src/simulations/replay.ts reads them. */
export function parseShadowInput(purchaseId: string, text: string): { purchase: InputPurchase & { _id: string }; decision: InputDecision } {
  const [agentId, merchant, amountMinor, currency, category, approvalId, requestedAtMs, outcome, reasonCodes, versions] = JSON.parse(text) as ShadowInput;
  return {
    purchase: { _id: purchaseId, agentId, merchant, amountMinor, currency, category, approvalId, requestedAt: new Date(requestedAtMs) },
    decision: {
      outcome,
      reasonCodes,
      policyVersions:
        versions === ''
          ? []
          : versions.split(' ').map((v) => (v.endsWith('+') ? { policyVersionId: v.slice(0, -1), applicabilityReason: 'AGENT_SCOPE' } : { policyVersionId: v, applicabilityReason: 'ORGANIZATION_SCOPE' })),
    },
  };
}

/**
 * The shadow's holds that end only by expiry (those of purchases the draft escalated and the recorded
 * decision did not), kept out of the shadow's document: each evaluation writes those it made, by the second
 * they expire in, and reads only the seconds its purchases reach (by `due`, `${shadowId}:${startedAtMs}:${second}`).
 * A draft that escalates most purchases makes one per purchase for `approvalTtl`; the holds that follow a
 * recorded approval stay in the document (as many as the organisation's pending approvals).
 */
export const SHADOW_HOLDS = 'shadow_holds';

export interface ShadowHoldChunkDoc {
  /** `${due}:${seq}`: the seq of the first receipt of the evaluation that wrote it. */
  _id: string;
  shadowId: string;
  /** The shadow, its lifetime (startedAt) and the second (Unix time) the holds expire in. */
  due: string;
  /** Its holds, as the document's (grouped by windows, one JSON text). */
  holds: string;
}

export const holdsDue = (shadowId: string, startedAt: Date, second: number) => `${shadowId}:${startedAt.getTime()}:${second}`;

/**
 * The changes a shadow found (the purchases whose outcome or reasons the draft changes, for its report's
 * list): a chunk per evaluation that found some, its changes in the report's order (requestedAt, then
 * purchase id), with the first and last of them as keys (`${requestedAt ISO}|${purchaseId}`) to page by.
 */
export const SHADOW_DECISIONS = 'shadow_decisions';

export interface ShadowChangesDoc {
  _id: string;
  versionId: string;
  organizationId: string;
  fromKey: string;
  toKey: string;
  /** The changes (as the report lists them) as one JSON text. */
  changes: string;
}

export interface ShadowSummaryDoc {
  evaluated: number;
  changed: number;
  byTransition: Record<string, number>;
  byReasonCode: Record<string, number>;
}

export interface ShadowDoc extends ShadowStatusDoc {
  /** The shadowed version's id: a version is in shadow at most once. */
  _id: string;
  organizationId: string;
  policyId: string;
  status: 'RUNNING' | 'STOPPED';
  startedAt: Date;
  stoppedAt: Date | null;
  stopReason: 'STOPPED' | 'ACTIVATED' | null;
  /** The shadow's own budget windows and holds (the replay state, src/simulations/replay.ts). */
  windows: ShadowWindowEntry[];
  /** Its approved spend outside its windows (absent in documents written before it was kept). */
  outside?: ShadowOutsideEntry[];
  /**
   * The holds (ShadowHoldEntry) that follow a recorded approval, as one JSON text grouped by the windows
   * they hold (src/simulations/shadow.ts): one per purchase both escalated, until its answer or expiry.
   * The holds that end only by expiry are in `shadow_holds` (SHADOW_HOLDS).
   */
  holds: string;
  /** Holds pending at the start, carried in (loaded by the first evaluation: absent until then). */
  carried?: ShadowCarriedEntry[];
  /** The latest requestedAt evaluated (windows whose period ended a day before it are dropped). */
  cursor: Date;
  /** The organisation's receipts evaluated so far: the shadow's next purchase is in the receipt after this seq. */
  receiptSeq: number;
  /** The first second whose holds (SHADOW_HOLDS) may not have expired yet: those of every earlier one have. */
  holdsDue: number;
  summary: ShadowSummaryDoc;
  version: number;
}

export const shadowCollection = (db: StoreDb): StoreCollection<ShadowDoc> => stamped(db, db.collection<ShadowDoc>(SHADOWS));

const EMPTY_SUMMARY: ShadowSummaryDoc = { evaluated: 0, changed: 0, byTransition: {}, byReasonCode: {} };

/**
 * The ids of the organisation's versions in shadow, from the configuration cache at the view's stamp:
 * a query only when the configuration changed since it was last loaded.
 */
export function shadowsOf(config: ConfigView, db: StoreDb, organizationId: string, session?: StoreSession): Promise<readonly string[]> {
  return config.get(`shadows:${organizationId}`, async () =>
    (await db.collection<ShadowDoc>(SHADOWS).find({ organizationId, status: 'RUNNING' }, session ? { session, projection: { _id: 1 } } : { projection: { _id: 1 } }).toArray()).map((s) => s._id),
  );
}

export function presentShadow(s: ShadowDoc | null, versionId: string) {
  return {
    policyVersionId: versionId,
    shadow: s?.status === 'RUNNING',
    startedAt: s ? s.startedAt.toISOString() : null,
    stoppedAt: s?.stoppedAt ? s.stoppedAt.toISOString() : null,
    stopReason: s?.stopReason ?? null,
  };
}

/** The documents of an earlier lifetime deleted per transaction (a long lifetime leaves far more than one should write). */
const CLEAR_BATCH = 500;

/**
 * Deletes a stopped shadow's changes and holds, a batch per transaction, before it starts again. Each batch
 * writes the shadow's document too (its version): a start running alongside conflicts with it, so no batch
 * deletes what a new lifetime has evaluated. A shadow running, never started, or of a version no longer a
 * draft, is left alone.
 */
async function clearStoppedLifetime(deps: AppDeps, versionId: string): Promise<void> {
  const db = deps.store.db;
  // A first start (or one already running) has no earlier lifetime: no transaction for it.
  if ((await db.collection<ShadowDoc>(SHADOWS).findOne({ _id: versionId, status: 'STOPPED' })) === null) return;
  for (const [name, field] of [[SHADOW_DECISIONS, 'versionId'], [SHADOW_HOLDS, 'shadowId']] as const) {
    const chunks = db.collection<{ _id: string }>(name);
    for (let more = true; more; ) {
      more = await runCommand(deps.store, async (session) => {
        // A version no longer a draft is refused below, and keeps its last lifetime's report.
        if ((await deps.collections.policyVersions.findOne({ _id: versionId }, { session }))?.status !== 'DRAFT') return false;
        const fenced = await db.collection<ShadowDoc>(SHADOWS).updateOne({ _id: versionId, status: 'STOPPED' }, { $inc: { version: 1 } }, { session });
        if (fenced.matchedCount === 0) return false;
        const ids = (await chunks.find({ [field]: versionId }, { session, projection: { _id: 1 } }).limit(CLEAR_BATCH).toArray()).map((c) => c._id);
        if (ids.length > 0) await chunks.deleteMany({ _id: { $in: ids } }, { session });
        return ids.length === CLEAR_BATCH;
      });
    }
  }
}

/**
 * Puts a DRAFT version in shadow (`shadow: true`) or takes it out (`false`). Starting one already running, or
 * stopping one not running, changes nothing. Starting again after a stop begins a new lifetime.
 */
export async function setShadow(deps: AppDeps, versionId: string, shadow: boolean) {
  const shadows = shadowCollection(deps.store.db);
  const now = deps.now();
  if (!shadow) {
    if (!(await deps.collections.policyVersions.findOne({ _id: versionId }))) throw notFound('policy version');
    const existing = await shadows.findOne({ _id: versionId });
    if (existing?.status !== 'RUNNING') return presentShadow(existing, versionId);
    const stopped = await shadows.findOneAndUpdate({ _id: versionId, status: 'RUNNING' }, { $set: { status: 'STOPPED', stoppedAt: now, stopReason: 'STOPPED' }, $inc: { version: 1 } }, { returnDocument: 'after' });
    return presentShadow(stopped ?? (await shadows.findOne({ _id: versionId })), versionId);
  }
  await clearStoppedLifetime(deps, versionId);
  // In one transaction, at the versions read: of two starts at once one begins the lifetime and the other,
  // retried, finds it running (and its deletions cannot drop what the new lifetime already evaluated).
  // The version is a draft as the transaction reads it, and the policy is written: an activation of the
  // draft writes the policy too, so on MongoDB one of the two conflicts and is retried on what the other
  // did (a start on the now ACTIVE version is refused; an activation after the start stops the shadow).
  const started = await runCommand(deps.store, async (session) => {
    const version = await deps.collections.policyVersions.findOne({ _id: versionId }, { session });
    if (!version) throw notFound('policy version');
    if (version.status !== 'DRAFT') {
      throw new ApiError(409, 'version_not_draft', `Version ${version.versionNumber} is ${version.status}; only a DRAFT version can run in shadow.`);
    }
    const stored = await shadows.findOne({ _id: versionId }, { session });
    if (stored?.status === 'RUNNING') return stored;
    await fencePolicy(deps.store.db, session, version.policyId);
    // The evaluations of an earlier lifetime are not this one's (nothing writes them once it stopped): cleared
    // above, a batch at a time; here only what a shadow stopped since then left.
    await deps.store.db.collection(SHADOW_DECISIONS).deleteMany({ versionId }, { session });
    await deps.store.db.collection(SHADOW_HOLDS).deleteMany({ shadowId: versionId }, { session });
    // It evaluates the purchases whose receipts come after the organisation's last one now (those requested from now on).
    const chain = await deps.store.db.collection<ReceiptChainDoc>(RECEIPT_COLLECTIONS.chains).findOne({ _id: version.organizationId }, { session });
    const doc: ShadowDoc = {
      _id: versionId,
      organizationId: version.organizationId,
      policyId: version.policyId,
      status: 'RUNNING',
      startedAt: now,
      stoppedAt: null,
      stopReason: null,
      windows: [],
      holds: '[]',
      cursor: now,
      receiptSeq: chain?.seq ?? 0,
      holdsDue: Math.floor(now.getTime() / 1000),
      summary: EMPTY_SUMMARY,
      version: (stored?.version ?? 0) + 1,
    };
    try {
      if (stored) {
        if ((await shadows.replaceOne({ _id: versionId, version: stored.version }, doc, { session })).matchedCount === 0) throw new VersionConflict(`shadow ${versionId}`);
      } else await shadows.insertOne(doc, { session });
    } catch (err) {
      if (isDuplicateKeyError(err)) throw new VersionConflict(`shadow ${versionId}`);
      throw err;
    }
    return doc;
  });
  return presentShadow(started, versionId);
}
