// POST /v1/simulations/replay and GET /v1/simulations/replay/{id} (docs/integrate/simulations.md#replay):
// a range small enough (at most REPLAY_INLINE_LIMIT purchases, docs/reference/decisions.md) is replayed in the
// request; a larger one is a job (`simulations.replay`) that records its progress, summary and changes
// in collections of its own, which no decision reads.
import { DateTime } from 'luxon';
import type { AppDeps } from '../app-deps.ts';
import { invalidRequest, notFound, type ErrorIssue } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { limitParam } from '../http/params.ts';
import { CHANGES_LIMIT } from '../../schemas/simulations.ts';
import { decodeCursor, encodeCursor } from '../mcp/list-purchases.ts';
import { ENGINE_VERSION } from '../engine/version.ts';
import type { ApprovalDoc } from '../purchases/documents.ts';
import { views } from '../purchases/projection.ts';
import type { OrganizationDoc, PolicyVersionDoc } from '../store/collections.ts';
import type { StoreDb } from '../store/store.ts';
import { count, emptyReplayState, emptySummary, loadCarried, loadHistory, recordedPage, replayPurchase, seedFrom, type ReplayedPurchase, type Summary } from './replay.ts';

export const REPLAY_JOB = 'simulations.replay';
export const REPLAYS = 'simulation_replays';
export const REPLAY_CHANGES = 'simulation_replay_changes';
export const MAX_RANGE_DAYS = 92;

export interface ReplayDoc {
  _id: string;
  organizationId: string;
  policyId: string;
  policyVersionId: string;
  versionNumber: number;
  from: Date;
  to: Date;
  agentId: string | null;
  status: 'QUEUED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  progress: { evaluated: number; total: number };
  summary: Summary | null;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

export interface ChangeDoc {
  _id: string;
  replayId: string;
  requestedAt: Date;
  purchaseId: string;
  change: ReturnType<typeof changeWire>;
}

export const replays = (db: StoreDb) => db.collection<ReplayDoc>(REPLAYS);
export const replayChanges = (db: StoreDb) => db.collection<ChangeDoc>(REPLAY_CHANGES);

export function changeWire(r: ReplayedPurchase) {
  return {
    purchaseRequestId: r.purchaseId,
    agentId: r.agentId,
    merchant: r.merchant,
    amountMinor: r.amountMinor.toString(),
    currency: r.currency,
    requestedAt: r.requestedAt.toISOString(),
    recorded: { outcome: r.recorded.outcome, reasonCodes: [...r.recorded.reasonCodes] },
    replayed: { outcome: r.replayed.outcome, reasonCodes: [...r.replayed.reasonCodes] },
  };
}

export interface ReplayRequest {
  version: PolicyVersionDoc;
  from: Date;
  to: Date;
  agentId: string | null;
}

/** Parses the instants and the range rules; the schema has already accepted the shapes. */
export function rangeOf(body: { from: string; to: string }): { from: Date; to: Date } {
  const issues: ErrorIssue[] = [];
  // Luxon refuses a date that does not exist (Date would roll 30 February over into March), but reads any
  // two-digit offset ("+99:99" as 99 hours and 99 minutes): an offset is hours 00-23 and minutes 00-59 (RFC 3339).
  // Purchases are timed to the millisecond: an instant with a finer fraction is rounded up, so that
  // `from` (inclusive) and `to` (exclusive) keep out exactly the purchases before them (Luxon truncates).
  const instant = (s: string) => {
    const offset = /([+-])(\d{2}):(\d{2})$/.exec(s);
    if (offset && (Number(offset[2]) > 23 || Number(offset[3]) > 59)) return new Date(Number.NaN);
    const at = DateTime.fromISO(s, { setZone: true });
    if (!at.isValid) return new Date(Number.NaN);
    const finer = /\.\d{3}(\d+)/.exec(s)?.[1] ?? '';
    const rounded = new Date(at.toMillis() + (/[1-9]/.test(finer) ? 1 : 0));
    // The answer echoes it as a Timestamp, whose year has four digits (docs/reference/contract.md §2.1): an offset
    // must not carry 9999-12-31 into year 10000 (`+010000-…`), or 0000-01-01 into year -1.
    return /^\d{4}-/.test(rounded.toISOString()) ? rounded : new Date(Number.NaN);
  };
  const from = instant(body.from);
  const to = instant(body.to);
  if (Number.isNaN(from.getTime())) issues.push({ path: 'from', code: 'INVALID_TIMESTAMP', message: 'from is not a real instant between the years 0000 and 9999 (UTC).' });
  if (Number.isNaN(to.getTime())) issues.push({ path: 'to', code: 'INVALID_TIMESTAMP', message: 'to is not a real instant between the years 0000 and 9999 (UTC).' });
  if (issues.length === 0 && to.getTime() <= from.getTime()) issues.push({ path: 'to', code: 'RANGE_EMPTY', message: 'to must be after from.' });
  if (issues.length === 0 && to.getTime() - from.getTime() > MAX_RANGE_DAYS * 86_400_000) {
    issues.push({ path: 'to', code: 'RANGE_TOO_LONG', message: `A replay covers at most ${MAX_RANGE_DAYS} days; split the range.` });
  }
  if (issues.length > 0) throw invalidRequest(issues);
  return { from, to };
}

/** The organisation's version (DRAFT, ACTIVE or ARCHIVED); another organisation's is not found. */
export async function versionOf(deps: AppDeps, organizationId: string, versionId: string): Promise<PolicyVersionDoc> {
  const version = await deps.collections.policyVersions.findOne({ _id: versionId, organizationId });
  if (!version) throw notFound('policy version');
  return version;
}

/**
 * Replays every purchase of the organisation requested in [from, to), in request order. With an agent,
 * every purchase is still replayed (they share the budget windows), and only the agent's are counted.
 */
export async function replayRange(
  deps: AppDeps,
  org: OrganizationDoc,
  req: ReplayRequest,
  onChange: (r: ReplayedPurchase) => void | Promise<void>,
  onProgress?: (evaluated: number) => Promise<void>,
): Promise<Summary> {
  const history = await loadHistory(deps, org._id, req.version);
  // Purchases still waiting for a person at `from` hold their amounts in the replayed windows until their recorded answer.
  const carried = await loadCarried(deps, org, history, req.from);
  const approvals = new Map<string, ApprovalDoc>(carried.approvals.map((a) => [a._id, a]));
  const state = emptyReplayState(carried.carried);
  const ctx = { organization: org, history, seed: seedFrom(deps, org._id, req.from), approval: (id: string) => approvals.get(id), from: req.from };
  const summary = emptySummary();
  let after: { requestedAt: Date; id: string } | null = null;
  let seen = 0;
  for (;;) {
    const page = await recordedPage(deps, org._id, req.from, req.to, after);
    if (page.purchases.length === 0) break;
    for (const a of page.approvals) approvals.set(a._id, a);
    for (const { purchase, initial } of page.purchases) {
      const r = await replayPurchase(ctx, state, purchase, initial);
      if (req.agentId === null || purchase.agentId === req.agentId) {
        count(summary, r);
        if (r.changed) await onChange(r);
      }
    }
    const last = page.purchases[page.purchases.length - 1].purchase;
    after = { requestedAt: last.requestedAt, id: last._id };
    seen += page.purchases.length;
    if (onProgress) await onProgress(seen);
  }
  return summary;
}

export const countInRange = (deps: AppDeps, organizationId: string, from: Date, to: Date) =>
  views(deps.store.db).purchaseViews.countDocuments({ organizationId, requestedAt: { $gte: from, $lt: to } });

const DISCLAIMER = 'A replay: nothing was recorded, no budget was reserved; recorded purchases were decided again against the policies of their time with this version in its policy\'s place.';

export const replaySimulation = (mode: 'REPLAY' | 'SHADOW', now: Date, disclaimer = DISCLAIMER) => ({
  isSimulation: true as const,
  mode,
  disclaimer,
  simulatedAt: now.toISOString(),
  engineVersion: ENGINE_VERSION,
});

export interface PageQuery {
  limit: number;
  after: { requestedAt: Date; id: string } | null;
}

export function pageQuery(query: { limit?: string; cursor?: string }): PageQuery {
  const issues: ErrorIssue[] = [];
  const limit = limitParam(query.limit, CHANGES_LIMIT, issues);
  let after = null;
  if (query.cursor !== undefined) {
    after = decodeCursor(query.cursor);
    if (!after) issues.push({ path: 'cursor', code: 'INVALID_CURSOR', message: 'cursor is not one this endpoint returned; omit it to start from the first change.' });
  }
  if (issues.length > 0) throw invalidRequest(issues);
  return { limit, after };
}

/** One page of changes held in memory (an inline replay), in request order. */
export function pageOf(all: ReplayedPurchase[], q: PageQuery) {
  const start = q.after === null ? 0 : all.findIndex((r) => r.requestedAt > q.after!.requestedAt || (r.requestedAt.getTime() === q.after!.requestedAt.getTime() && r.purchaseId > q.after!.id));
  const rest = start < 0 ? [] : all.slice(start);
  const page = rest.slice(0, q.limit);
  const hasMore = rest.length > q.limit;
  const last = page[page.length - 1];
  return { changes: page.map(changeWire), nextCursor: hasMore && last ? encodeCursor({ requestedAt: last.requestedAt, id: last.purchaseId }) : null, hasMore };
}

/** A page of stored changes (a job's or a shadow's): `filter` selects them, ordered by requestedAt and purchase id. */
export async function storedPage<T extends { requestedAt: Date; purchaseId: string }>(
  rows: (filter: Record<string, unknown>, limit: number) => Promise<T[]>,
  filter: Record<string, unknown>,
  q: PageQuery,
  wire: (row: T) => ReturnType<typeof changeWire>,
) {
  const f = q.after === null ? filter : { ...filter, $or: [{ requestedAt: { $gt: q.after.requestedAt } }, { requestedAt: q.after.requestedAt, purchaseId: { $gt: q.after.id } }] };
  const found = await rows(f, q.limit + 1);
  const page = found.slice(0, q.limit);
  const hasMore = found.length > q.limit;
  const last = page[page.length - 1];
  return { changes: page.map(wire), nextCursor: hasMore && last ? encodeCursor({ requestedAt: last.requestedAt, id: last.purchaseId }) : null, hasMore };
}

export function presentReplay(doc: Pick<ReplayDoc, 'policyId' | 'policyVersionId' | 'versionNumber' | 'from' | 'to' | 'agentId' | 'status' | 'progress' | 'error'> & { _id: string | null }) {
  return {
    id: doc._id,
    status: doc.status,
    policyId: doc.policyId,
    policyVersionId: doc.policyVersionId,
    versionNumber: doc.versionNumber,
    from: doc.from.toISOString(),
    to: doc.to.toISOString(),
    agentId: doc.agentId,
    progress: doc.progress,
    error: doc.error,
  };
}

/** Queues a large replay: its document, then the job (run at once by whichever process runs jobs). */
export async function queueReplay(deps: AppDeps, org: OrganizationDoc, req: ReplayRequest, total: number): Promise<ReplayDoc> {
  const doc: ReplayDoc = {
    _id: newId(),
    organizationId: org._id,
    policyId: req.version.policyId,
    policyVersionId: req.version._id,
    versionNumber: req.version.versionNumber,
    from: req.from,
    to: req.to,
    agentId: req.agentId,
    status: 'QUEUED',
    progress: { evaluated: 0, total },
    summary: null,
    error: null,
    createdAt: deps.now(),
    finishedAt: null,
  };
  await replays(deps.store.db).insertOne(doc);
  // Agenda runs on the wall clock, whatever clock the service was given.
  await deps.scheduler.schedule(REPLAY_JOB, new Date(), { replayId: doc._id });
  return doc;
}

/** The job: replays the range, recording progress after every page and the changes as they come. */
export async function runReplayJob(deps: AppDeps, replayId: string): Promise<void> {
  const db = deps.store.db;
  const doc = await replays(db).findOne({ _id: replayId });
  if (!doc || doc.status === 'SUCCEEDED' || doc.status === 'FAILED') return;
  // A run interrupted (the process died) starts again from the beginning.
  await replayChanges(db).deleteMany({ replayId });
  await replays(db).updateOne({ _id: replayId }, { $set: { status: 'RUNNING', progress: { evaluated: 0, total: doc.progress.total } } });
  try {
    const org = await deps.collections.organizations.findOne({ _id: doc.organizationId });
    const version = await deps.collections.policyVersions.findOne({ _id: doc.policyVersionId });
    if (!org || !version) throw new Error('the organisation or the version no longer exists');
    let buffer: ChangeDoc[] = [];
    const flush = async () => {
      if (buffer.length > 0) await replayChanges(db).insertMany(buffer);
      buffer = [];
    };
    const summary = await replayRange(
      deps,
      org,
      { version, from: doc.from, to: doc.to, agentId: doc.agentId },
      (r) => void buffer.push({ _id: `${replayId}:${r.purchaseId}`, replayId, requestedAt: r.requestedAt, purchaseId: r.purchaseId, change: changeWire(r) }),
      async (evaluated) => {
        await flush();
        await replays(db).updateOne({ _id: replayId }, { $set: { progress: { evaluated, total: Math.max(evaluated, doc.progress.total) } } });
      },
    );
    await flush();
    const final = await replays(db).findOne({ _id: replayId });
    await replays(db).updateOne({ _id: replayId }, { $set: { status: 'SUCCEEDED', summary, finishedAt: deps.now(), progress: { evaluated: final?.progress.evaluated ?? 0, total: final?.progress.evaluated ?? 0 } } });
  } catch (err) {
    deps.log.error('replay failed', { replayId, err: String(err) });
    await replays(db).updateOne({ _id: replayId }, { $set: { status: 'FAILED', error: 'The replay failed; start it again.', finishedAt: deps.now() } });
  }
}
