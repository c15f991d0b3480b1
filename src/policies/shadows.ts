// Drafts in shadow (docs/integrate/simulations.md, docs/operate/shadow.md): a DRAFT version an operator has
// asked to be evaluated beside every live decision of its organisation. This module owns the shadow's
// document and the two operator commands (start, stop); the evaluation itself is src/simulations/shadow.ts.
// The collection is stamped (src/cache/config-cache.ts): a submission learns whether its organisation
// has a shadow from the configuration cache, never from a query of its own.
import type { AppDeps } from '../app-deps.ts';
import { stamped, type ConfigView } from '../cache/config-cache.ts';
import { ApiError, notFound } from '../http/errors.ts';
import type { StoreCollection, StoreDb, StoreSession } from '../store/store.ts';
import type { ApplicabilityReason, Outcome, ReasonCode } from '../engine/types.ts';

export const SHADOWS = 'policy_shadows';

export interface ShadowWindowEntry {
  id: string;
  /** Exclusive end of the window's period: once every purchase evaluated is past it, it is dropped. */
  periodEnd: string;
  committedMinor: string;
  heldMinor: string;
  openingBalanceMinor: string;
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
  amountMinor: string;
  currency: string;
  requestedAt: Date;
  policyIds: string[];
  approvedNow: boolean;
  windowIds: string[];
  settled: 'CONVERT' | 'RELEASE' | null;
}

/**
 * A committed purchase the shadow has yet to evaluate: written in the purchase's own transaction (one more
 * insert of its batch, src/purchases/record-writer.ts) for each shadow the submission saw running, and
 * deleted in the transaction that records the shadow's evaluation. A transactional outbox: a purchase
 * is in the shadow's report or here, whatever process stopped or was killed when.
 *
 * It carries what the evaluation reads of the purchase and of its recorded decision (a few hundred
 * bytes, where the decision document is kilobytes), so the evaluation reads nothing else per purchase.
 */
export const SHADOW_PENDING = 'shadow_pending';

export interface ShadowPendingDoc {
  /** `${shadowId}:${purchaseId}` */
  _id: string;
  shadowId: string;
  organizationId: string;
  purchaseId: string;
  requestedAt: Date;
  agentId: string;
  merchant: string;
  amountMinor: number;
  currency: string;
  category: string | null;
  approvalId: string | null;
  /** The recorded decision's outcome, reasons and the versions it names (src/simulations/replay.ts RecordedDecision). */
  outcome: Outcome;
  reasonCodes: ReasonCode[];
  /**
   * The versions, space-separated, each followed by `+` when its policy applied by the agent's scope (a
   * live decision's others applied by the organisation's): one text costs the stores less than as many
   * sub-documents, on the submission's write and the evaluation's read.
   */
  policyVersions: string;
}

type PendingPurchase = Pick<ShadowPendingDoc, 'organizationId' | 'requestedAt' | 'agentId' | 'merchant' | 'amountMinor' | 'currency' | 'category' | 'approvalId'> & { _id: string };
type PendingDecision = Pick<ShadowPendingDoc, 'outcome' | 'reasonCodes'> & { policyVersions: { policyVersionId: string; applicabilityReason: ApplicabilityReason }[] };

export const shadowPendingDoc = (shadowId: string, purchase: PendingPurchase, decision: PendingDecision): ShadowPendingDoc => ({
  _id: `${shadowId}:${purchase._id}`,
  shadowId,
  organizationId: purchase.organizationId,
  purchaseId: purchase._id,
  requestedAt: purchase.requestedAt,
  agentId: purchase.agentId,
  merchant: purchase.merchant,
  amountMinor: purchase.amountMinor,
  currency: purchase.currency,
  category: purchase.category,
  approvalId: purchase.approvalId,
  outcome: decision.outcome,
  reasonCodes: decision.reasonCodes,
  policyVersions: decision.policyVersions.map(({ policyVersionId, applicabilityReason }) => (applicabilityReason === 'AGENT_SCOPE' ? `${policyVersionId}+` : policyVersionId)).join(' '),
});

/** The recorded decision a pending row carries, as src/simulations/replay.ts reads it. */
export const pendingDecision = (row: ShadowPendingDoc): PendingDecision => ({
  outcome: row.outcome,
  reasonCodes: row.reasonCodes,
  policyVersions:
    row.policyVersions === ''
      ? []
      : row.policyVersions.split(' ').map((v) => (v.endsWith('+') ? { policyVersionId: v.slice(0, -1), applicabilityReason: 'AGENT_SCOPE' } : { policyVersionId: v, applicabilityReason: 'ORGANIZATION_SCOPE' })),
});

/**
 * The shadow's holds that end only by expiry (those of purchases the draft escalated and the recorded
 * decision did not): a chunk per evaluation that made some, kept out of the shadow's document so that
 * an evaluation reads and writes only its own and those whose first expiry has come
 * (src/simulations/shadow.ts). A draft that escalates most purchases makes one per purchase for
 * `approvalTtl`; the holds that follow a recorded approval stay in the document (as many as the
 * organisation's pending approvals).
 */
export const SHADOW_HOLDS = 'shadow_holds';

export interface ShadowHoldChunkDoc {
  _id: string;
  shadowId: string;
  /** The lifetime it belongs to (the shadow's startedAt): a chunk of an earlier one is never read. */
  startedAt: Date;
  /** The earliest expiry among its holds: the chunk is read by the first evaluation that reaches it. */
  expiresFrom: Date;
  /** Its holds, as the document's (grouped by windows, one JSON text). */
  holds: string;
}

export interface ShadowSummaryDoc {
  evaluated: number;
  changed: number;
  byTransition: Record<string, number>;
  byReasonCode: Record<string, number>;
}

export interface ShadowDoc {
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

/**
 * Puts a DRAFT version in shadow (`shadow: true`) or takes it out (`false`). Starting one already running, or
 * stopping one not running, changes nothing. Starting again after a stop begins a new lifetime.
 */
export async function setShadow(deps: AppDeps, versionId: string, shadow: boolean) {
  const version = await deps.collections.policyVersions.findOne({ _id: versionId });
  if (!version) throw notFound('policy version');
  const shadows = shadowCollection(deps.store.db);
  const existing = await shadows.findOne({ _id: versionId });
  const now = deps.now();
  if (!shadow) {
    if (existing?.status !== 'RUNNING') return presentShadow(existing, versionId);
    const stopped = await shadows.findOneAndUpdate({ _id: versionId, status: 'RUNNING' }, { $set: { status: 'STOPPED', stoppedAt: now, stopReason: 'STOPPED' }, $inc: { version: 1 } }, { returnDocument: 'after' });
    return presentShadow(stopped ?? (await shadows.findOne({ _id: versionId })), versionId);
  }
  if (version.status !== 'DRAFT') {
    throw new ApiError(409, 'version_not_draft', `Version ${version.versionNumber} is ${version.status}; only a DRAFT version can run in shadow.`);
  }
  if (existing?.status === 'RUNNING') return presentShadow(existing, versionId);
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
    summary: EMPTY_SUMMARY,
    version: (existing?.version ?? 0) + 1,
  };
  if (existing) await shadows.replaceOne({ _id: versionId, version: existing.version }, doc);
  else await shadows.insertOne(doc);
  // The shadow's own evaluations of an earlier lifetime are not this one's, nor is what it had yet to evaluate.
  await deps.store.db.collection('shadow_decisions').deleteMany({ versionId });
  await deps.store.db.collection(SHADOW_HOLDS).deleteMany({ shadowId: versionId });
  await deps.store.db.collection(SHADOW_PENDING).deleteMany({ shadowId: versionId, requestedAt: { $lt: now } });
  return presentShadow(doc, versionId);
}
