// Replay (backtest) of a policy version over recorded purchases (docs/integrate/simulations.md#replay,
// docs/reference/decisions.md): every purchase recorded in a range is decided again, in the order it was
// requested, by the same pure engine (src/engine/decide.ts) against the organisation's policies as they
// were at its time with the named version in its policy's place, over budget windows replayed in memory
// from their recorded state at the start of the range. Nothing is written: the state lives here.
// The shadow (shadow.ts) runs the same step on live purchases, keeping this state in its own document.
import type { AppDeps } from '../app-deps.ts';
import { attributableSpendByPolicy } from '../budgets/windows.ts';
import { decide } from '../engine/decide.ts';
import { merchantKey } from '../engine/merchant-key.ts';
import { periodFor, periodWindows, windowBounds, windowKeysFor, windowId } from '../engine/periods.ts';
import type { Outcome, PolicyCandidate, PolicyVersionInput, ReasonCode, WindowKey, WindowState } from '../engine/types.ts';
import { selectPolicies } from '../engine/applicability.ts';
import { toCandidate, toEngineVersion } from '../policies/candidates.ts';
import { engineBase } from '../purchases/input.ts';
import { purchaseCollections, type ApprovalDoc, type DecisionDoc, type PurchaseDoc } from '../purchases/documents.ts';
import { views } from '../purchases/projection.ts';
import { fromStored } from '../money.ts';
import type { OrganizationDoc, PolicyDoc, PolicyVersionDoc } from '../store/collections.ts';
import { Duration } from 'luxon';

/** The policies of an organisation and the versions that were ever in force, with the one replayed. */
export interface PolicyHistory {
  policies: PolicyDoc[];
  /** Non-draft versions by policy, to find the one in force at an instant (activatedAt, archivedAt). */
  versionsByPolicy: Map<string, PolicyVersionDoc[]>;
  versionById: Map<string, PolicyVersionDoc>;
  engineVersions: Map<string, PolicyVersionInput>;
  target: { policyId: string; version: PolicyVersionInput };
  /** Candidate arrays by agent and versions chosen: the same array for the same policies (the engine remembers its selection per array). */
  arrays: Map<string, PolicyCandidate[]>;
}

export async function loadHistory(deps: AppDeps, organizationId: string, target: PolicyVersionDoc): Promise<PolicyHistory> {
  const policies = await deps.collections.policies.find({ organizationId }).toArray();
  // By policy: policy_versions' index is { policyId, versionNumber } (by organisation, a collection scan).
  const versions = await deps.collections.policyVersions.find({ policyId: { $in: policies.map((p) => p._id) }, status: { $in: ['ACTIVE', 'ARCHIVED'] } }).toArray();
  const versionsByPolicy = new Map<string, PolicyVersionDoc[]>();
  for (const v of versions) {
    if (v.activatedAt === null) continue;
    const list = versionsByPolicy.get(v.policyId) ?? [];
    list.push(v);
    versionsByPolicy.set(v.policyId, list);
  }
  return {
    policies: policies.sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0)),
    versionsByPolicy,
    versionById: new Map(versions.map((v) => [v._id, v])),
    engineVersions: new Map(),
    target: { policyId: target.policyId, version: { ...toEngineVersion(target), status: 'ACTIVE' } },
    arrays: new Map(),
  };
}

function engineVersion(h: PolicyHistory, v: PolicyVersionDoc): PolicyVersionInput {
  let found = h.engineVersions.get(v._id);
  if (found === undefined) h.engineVersions.set(v._id, (found = { ...toEngineVersion(v), status: 'ACTIVE' }));
  return found;
}

/**
 * A policy's status at an instant, from its recorded changes of status: before the first, the status it
 * changed from. A policy with none recorded (none since the release that records them,
 * docs/reference/decisions.md) is taken to have had its present status throughout.
 */
export function statusAt(p: PolicyDoc, t: number): PolicyDoc['status'] {
  const changes = p.statusChanges ?? [];
  let status = changes.length > 0 ? changes[0].from : p.status;
  for (const c of changes) if (c.at.getTime() <= t) status = c.to;
  return status;
}

/** A setting at an instant, from its recorded changes (as statusAt): none recorded, its present value throughout. */
function settingAt(changes: readonly { from: string; to: string; at: Date }[] | undefined, present: string, t: Date): string {
  let value = changes && changes.length > 0 ? changes[0].from : present;
  for (const c of changes ?? []) if (c.at.getTime() <= t.getTime()) value = c.to;
  return value;
}

/**
 * The organisation's time zone at an instant, from its recorded changes of zone: a purchase's periods,
 * and so its budget windows, were those of the zone of its time.
 */
export const zoneAt = (o: OrganizationDoc, t: Date): string => settingAt(o.timezoneChanges, o.timezone, t);

/** The organisation's approval TTL at an instant: an approval asked then lasted the TTL in force then. */
export const approvalTtlAt = (o: OrganizationDoc, t: Date): string => settingAt(o.approvalTtlChanges, o.approvalTtl, t);

const inForceAt = (v: PolicyVersionDoc, t: number) => v.activatedAt !== null && v.activatedAt.getTime() <= t && (v.archivedAt === null || v.archivedAt.getTime() > t);

/**
 * The policies in force for the agent at the purchase's time, with the replayed version in its policy's
 * place. What the purchase's recorded decision says governed it is taken as written: its versions, and
 * the purchase in each one's scope, whatever the policy's scope or agents became since. When it names
 * any, a policy it does not name did not cover the purchase then (out of its scope, or not of its
 * currency), whatever its scope now: it is left out, and so is the replayed version's policy when a
 * version of it covering the purchase's currency was in force (the purchase was out of its scope). A
 * decision that names none (refused before any policy governed it) leaves every policy in force by its
 * versions' activation times, in its present scope. A policy archived before or disabled then
 * (statusAt) takes no part, the replayed version's included: a disabled policy decided nothing.
 */
export function candidatesAt(h: PolicyHistory, at: Date, agentId: string, currency: string, recorded: Pick<DecisionDoc, 'policyVersions'> | null): PolicyCandidate[] {
  const t = at.getTime();
  const evidence = new Map<string, { versionId: string }>();
  for (const pv of recorded?.policyVersions ?? []) {
    const v = h.versionById.get(pv.policyVersionId);
    if (v) evidence.set(v.policyId, { versionId: v._id });
  }
  const named = evidence.size > 0;
  const chosen: { policy: PolicyDoc; version: PolicyVersionInput; addAgent: boolean }[] = [];
  for (const p of h.policies) {
    const seen = evidence.get(p._id);
    if (!seen && (statusAt(p, t) === 'DISABLED' || (p.archivedAt !== null && p.archivedAt.getTime() <= t))) continue;
    const inForce = seen ? undefined : h.versionsByPolicy.get(p._id)?.find((x) => inForceAt(x, t));
    if (p._id === h.target.policyId) {
      if (!seen && named && inForce?.currencies.includes(currency)) continue;
      chosen.push({ policy: p, version: h.target.version, addAgent: seen !== undefined });
      continue;
    }
    if (seen) {
      chosen.push({ policy: p, version: engineVersion(h, h.versionById.get(seen.versionId)!), addAgent: true });
      continue;
    }
    if (inForce && !named) chosen.push({ policy: p, version: engineVersion(h, inForce), addAgent: false });
  }
  const key = `${agentId}|${chosen.map((c) => `${c.version.id}${c.addAgent ? '+' : ''}`).join(',')}`;
  let array = h.arrays.get(key);
  if (array === undefined) {
    array = chosen.map(({ policy, version, addAgent }) =>
      toCandidate({ ...policy, status: 'ACTIVE', agentIds: addAgent && !policy.agentIds.includes(agentId) ? [...policy.agentIds, agentId] : policy.agentIds }, version),
    );
    if (h.arrays.size > 10_000) h.arrays.clear();
    h.arrays.set(key, array);
  }
  return array;
}

/** A replayed amount awaiting a person: held in the replayed windows until its fate. */
export interface ReplayHold {
  purchaseId: string;
  windowIds: string[];
  amountMinor: bigint;
  expiresAt: Date;
  approvalId: string | null;
  /** A hold that follows a recorded approval: its agent, currency and request, to count its spend once approved (settleHolds). */
  spend?: [agentId: string, currency: string, requestedAtMs: number];
}

/**
 * A recorded purchase requested before the replay's start and still waiting for a person then: its
 * amount was held in the recorded windows at `from`, so it is held in the same replayed windows (those
 * its recorded decision held: of the versions that governed it, with a limit on its currency, in the
 * periods of its request) until its recorded approval was answered or expired, then spent (when the
 * purchase ended approved, as the answer's re-evaluation spent it: spendApproved) or released.
 */
export interface CarriedHold {
  purchaseId: string;
  approvalId: string;
  /** Its agent (absent in a shadow's document written before: its spend then counts in the windows holding it only). */
  agentId?: string;
  amountMinor: bigint;
  currency: string;
  requestedAt: Date;
  policyIds: string[];
  /** The ids of the windows its recorded decision held (absent in a shadow's document written before: then every window of its policies). */
  heldIds?: string[];
  /** Whether the recorded purchase is approved now: the seed (the approved spend before `from`) counts it already. */
  approvedNow: boolean;
  /** The replayed windows it is held in, as each was first read. */
  windowIds: string[];
  /** Its fate once its recorded approval was answered or expired; null while it waits. */
  settled: 'CONVERT' | 'RELEASE' | null;
}

/** The replayed budget windows (with the end of each one's period), holds, and the holds carried in from before the start. */
export interface ReplayState {
  windows: Map<string, WindowState>;
  ends: Map<string, string>;
  /** The policy version that last read each window: read under another, it is reconciled (src/budgets/windows.ts loadWindows). */
  versions: Map<string, string>;
  /**
   * Replayed approved spend of a window's policy, currency and period that did not commit into the window
   * (its policy's version then had no limit reading it, or the window was not opened yet), by window id
   * with its period's end: what a window opened or reconciled later counts in its opening balance, as a
   * live window counts the policy's approved spend that did not commit into it.
   */
  outside: Map<string, { amountMinor: bigint; periodEnd: string }>;
  holds: ReplayHold[];
  carried: CarriedHold[];
  /**
   * The earliest instant at which a hold can settle (its approval's answer, or its expiry), when known:
   * a purchase before it leaves the holds as they are without going through them (a draft that
   * escalates every purchase keeps one per purchase for a day).
   */
  nextSettle?: number;
}

export const emptyReplayState = (carried: CarriedHold[] = []): ReplayState => ({ windows: new Map(), ends: new Map(), versions: new Map(), outside: new Map(), holds: [], carried });

function spendOutside(state: ReplayState, id: string, periodEnd: string, amountMinor: bigint): void {
  const entry = state.outside.get(id);
  state.outside.set(id, { amountMinor: (entry?.amountMinor ?? 0n) + amountMinor, periodEnd });
}

/** The spend counted outside a window so far, taken into its opening balance (the window counts it from now on). */
function takeOutside(state: ReplayState, id: string): bigint {
  const entry = state.outside.get(id);
  if (entry === undefined) return 0n;
  state.outside.delete(id);
  return entry.amountMinor;
}

/**
 * The organisation's purchases pending at `from` (requested before it, their approval answered or
 * expired after it, or not yet), with their approvals: what a replay starting at `from` carries in.
 */
export async function loadCarried(deps: AppDeps, organization: OrganizationDoc, history: PolicyHistory, from: Date): Promise<{ carried: CarriedHold[]; approvals: ApprovalDoc[] }> {
  const pc = purchaseCollections(deps.store.db);
  const approvals = await pc.approvals.find({ organizationId: organization._id, createdAt: { $lt: from }, $or: [{ state: 'PENDING' }, { resolvedAt: { $gt: from } }] }).toArray();
  if (approvals.length === 0) return { carried: [], approvals };
  const ids = approvals.map((a) => a.purchaseId);
  const rows = new Map((await views(deps.store.db).analyticsPurchases.find({ _id: { $in: ids } }).toArray()).map((r) => [r._id, r]));
  const initial = new Map<string, DecisionDoc>();
  for (const d of await pc.decisions.find({ purchaseId: { $in: ids } }).toArray()) if (d.kind === 'INITIAL') initial.set(d.purchaseId, d);
  const carried = approvals.flatMap((a): CarriedHold[] => {
    const row = rows.get(a.purchaseId);
    if (!row || row.requestedAt.getTime() >= from.getTime()) return [];
    const decision = initial.get(row._id);
    return [
      {
        purchaseId: row._id,
        approvalId: a._id,
        agentId: row.agentId,
        amountMinor: BigInt(row.amountMinor),
        currency: row.currency,
        requestedAt: row.requestedAt,
        policyIds: row.policyIds,
        ...(decision ? { heldIds: heldWindowIds(history, decision, row.currency, row.requestedAt, zoneAt(organization, row.requestedAt)) } : {}),
        approvedNow: row.status === 'APPROVED',
        windowIds: [],
        settled: null,
      },
    ];
  });
  carried.sort((x, y) => x.requestedAt.getTime() - y.requestedAt.getTime() || (x.purchaseId < y.purchaseId ? -1 : 1));
  return { carried, approvals };
}

/** The windows a recorded escalation held: those of the versions its decision names with a limit on its currency, in its request's periods. */
function heldWindowIds(h: PolicyHistory, decision: Pick<DecisionDoc, 'policyVersions'>, currency: string, requestedAt: Date, timeZone: string): string[] {
  const ids = new Set<string>();
  for (const pv of decision.policyVersions) {
    const version = h.versionById.get(pv.policyVersionId);
    if (version === undefined) continue;
    for (const { ruleType, periodKind, currency: only } of version.rules) {
      if (ruleType !== 'SPEND_LIMIT' || periodKind === 'PER_REQUEST' || (only !== null && only !== currency)) continue;
      ids.add(windowId({ policyId: version.policyId, currency, periodKind, periodKey: periodFor(periodKind, requestedAt.toISOString(), timeZone).periodKey }));
    }
  }
  return [...ids];
}

/** A window the replay reads first: its recorded state at the start, with the carried holds in it. */
async function openWindow(ctx: ReplayContext, state: ReplayState, key: WindowKey, id: string): Promise<WindowState> {
  let opening = await ctx.seed(key);
  let held = 0n;
  let committed = 0n;
  const { startMs, endMs } = windowBounds(key);
  for (const c of state.carried) {
    const at = c.requestedAt.getTime();
    if (c.currency !== key.currency || at < startMs || at >= endMs) continue;
    // The seed counted a purchase approved since as spent before the start, in its policies' windows
    // (those of its final decision, as the recorded spend counts it); it was only held then.
    const counted = c.policyIds.includes(key.policyId);
    if (c.approvedNow && counted && startMs < ctx.from.getTime()) opening -= c.amountMinor;
    // It is held in the windows its recorded decision held; another window counts it only once approved (settleHolds).
    if (!(c.heldIds?.includes(id) ?? counted)) continue;
    if (c.settled === null) {
      held += c.amountMinor;
      c.windowIds.push(id);
    } else if (c.settled === 'CONVERT') committed += c.amountMinor;
  }
  return { budgetCounterId: null, committedMinor: committed, heldMinor: held, openingBalanceMinor: opening + takeOutside(state, id) };
}

export interface ReplayContext {
  organization: OrganizationDoc;
  history: PolicyHistory;
  /** The opening balance of a window the replay reads first: its recorded spend before the replay began. */
  seed(key: WindowKey): Promise<bigint>;
  /** The recorded approval with this id, as known now. */
  approval(id: string): ApprovalDoc | undefined;
  /** Where the replayed windows start (the replay's `from`, the shadow's start). */
  from: Date;
}

export interface ReplayedPurchase {
  purchaseId: string;
  agentId: string;
  merchant: string;
  amountMinor: bigint;
  currency: string;
  requestedAt: Date;
  recorded: { outcome: Outcome; reasonCodes: ReasonCode[] };
  replayed: { outcome: Outcome; reasonCodes: ReasonCode[] };
  changed: boolean;
}

function adjust(state: ReplayState, id: string, held: bigint, committed: bigint): void {
  const w = state.windows.get(id);
  if (w === undefined) return;
  state.windows.set(id, { ...w, heldMinor: w.heldMinor + held, committedMinor: w.committedMinor + committed });
}

/**
 * Settles the replayed holds whose fate came by `at`: the recorded approval's answer when the recorded
 * purchase was held too (approved: the amount is spent; otherwise released), else the expiry a person's
 * silence would have brought.
 */
async function settleHolds(ctx: ReplayContext, state: ReplayState, at: number): Promise<void> {
  if (state.holds.length === 0 && state.carried.length === 0) return;
  if (state.nextSettle === undefined || state.nextSettle <= at) {
    let next = Infinity;
    const kept: ReplayHold[] = [];
    for (const h of state.holds) {
      const a = h.approvalId === null ? undefined : ctx.approval(h.approvalId);
      let settled: 'CONVERT' | 'RELEASE' | null = null;
      if (a && a.state !== 'PENDING' && a.resolvedAt !== null && a.resolvedAt.getTime() <= at) settled = a.state === 'APPROVED' ? 'CONVERT' : 'RELEASE';
      else if (h.expiresAt.getTime() <= at) settled = 'RELEASE';
      if (settled === null) {
        kept.push(h);
        next = Math.min(next, settlesAt(ctx, h));
        continue;
      }
      for (const id of h.windowIds) adjust(state, id, -h.amountMinor, settled === 'CONVERT' ? h.amountMinor : 0n);
      if (settled === 'CONVERT' && h.spend) {
        const [agentId, currency, requestedAtMs] = h.spend;
        await spendApproved(ctx, state, { agentId, currency, requestedAt: new Date(requestedAtMs), amountMinor: h.amountMinor }, new Set(h.windowIds), a!.resolvedAt!);
      }
    }
    state.holds = kept;
    state.nextSettle = next;
  }
  for (const c of state.carried) {
    if (c.settled !== null) continue;
    const a = ctx.approval(c.approvalId);
    if (!a || a.state === 'PENDING' || a.resolvedAt === null || a.resolvedAt.getTime() > at) continue;
    // Spent only when the recorded purchase ended approved (an approval re-evaluated into a refusal released it).
    c.settled = a.state === 'APPROVED' && c.approvedNow ? 'CONVERT' : 'RELEASE';
    for (const id of c.windowIds) adjust(state, id, -c.amountMinor, c.settled === 'CONVERT' ? c.amountMinor : 0n);
    if (c.settled === 'CONVERT' && c.heldIds !== undefined && c.agentId !== undefined) {
      await spendApproved(ctx, state, { agentId: c.agentId, currency: c.currency, requestedAt: c.requestedAt, amountMinor: c.amountMinor }, new Set(c.heldIds), a.resolvedAt);
    }
  }
}

/**
 * A held amount a person approved at `at`, spent as the answer's re-evaluation spends it
 * (src/engine/reevaluate.ts): beside the windows holding it (converted by the caller), in the windows of
 * the policies in force then that it counts toward but did not hold (read as that re-evaluation reads
 * them), and outside the other windows of those policies.
 */
async function spendApproved(ctx: ReplayContext, state: ReplayState, p: { agentId: string; currency: string; requestedAt: Date; amountMinor: bigint }, held: ReadonlySet<string>, at: Date): Promise<void> {
  const base = engineBase({
    mode: 'CURRENT_POLICIES',
    purchase: { merchant: '', merchantKey: '', amountMinor: p.amountMinor, currency: p.currency, category: null },
    agent: { _id: p.agentId, status: 'ENABLED' },
    policies: candidatesAt(ctx.history, at, p.agentId, p.currency, null),
    now: at,
    // The answer's re-evaluation reads the periods of the request in the zone of the answer's time.
    timeZone: zoneAt(ctx.organization, at),
    periodInstant: p.requestedAt,
  });
  const moved = new Set(held);
  for (const key of windowKeysFor(base)) {
    const id = await readWindow(ctx, state, key);
    if (moved.has(id)) continue;
    adjust(state, id, 0n, p.amountMinor);
    moved.add(id);
  }
  const governing = selectPolicies(base).covering.map((c) => c.candidate.policyId);
  for (const [id, periodEnd] of windowsOf(governing, p.currency, p.requestedAt.toISOString(), base.timeZone, moved)) spendOutside(state, id, periodEnd, p.amountMinor);
}

/**
 * A window as a decision reads it (src/budgets/windows.ts loadWindows): opened from its recorded state at the
 * start the first time, reconciled when first read under another version of its policy than the last.
 */
async function readWindow(ctx: ReplayContext, state: ReplayState, key: WindowKey): Promise<string> {
  const id = windowId(key);
  const window = state.windows.get(id);
  if (window === undefined) {
    state.windows.set(id, await openWindow(ctx, state, key, id));
    state.ends.set(id, key.periodEnd);
  } else if (state.versions.get(id) !== key.policyVersionId) {
    // The spend its policy approved outside it meanwhile counts now.
    state.windows.set(id, { ...window, openingBalanceMinor: window.openingBalanceMinor + takeOutside(state, id) });
  }
  state.versions.set(id, key.policyVersionId);
  return id;
}

/** The earliest instant a hold can settle at: its approval's answer when known, else its expiry. */
function settlesAt(ctx: ReplayContext, h: ReplayHold): number {
  const a = h.approvalId === null ? undefined : ctx.approval(h.approvalId);
  const answered = a && a.state !== 'PENDING' && a.resolvedAt !== null ? a.resolvedAt.getTime() : Infinity;
  return Math.min(answered, h.expiresAt.getTime());
}

const ttls = new Map<string, number>();
/** An approval TTL in milliseconds (parsed once per distinct text: a draft may escalate every purchase). */
function ttlMsOf(ttl: string): number {
  let ms = ttls.get(ttl);
  if (ms === undefined) {
    if (ttls.size > 1000) ttls.clear();
    ttls.set(ttl, (ms = Duration.fromISO(ttl).as('milliseconds')));
  }
  return ms;
}

const WINDOW_KINDS = ['DAY', 'MONTH'] as const;

/**
 * The windows (id, period end) of these policies, of a currency and the periods of an instant, but for
 * `except`: where the spend of a purchase they governed counts once approved, as a live window opened or
 * reconciled later counts it (src/budgets/windows.ts attributableSpend).
 */
function windowsOf(policyIds: readonly string[], currency: string, instant: string, timeZone: string, except: ReadonlySet<string>): [string, string][] {
  const out = new Map<string, string>();
  for (const periodKind of WINDOW_KINDS) {
    const { periodKey, periodEnd } = periodWindows(periodKind, instant, timeZone).period;
    for (const policyId of policyIds) {
      const id = windowId({ policyId, currency, periodKind, periodKey });
      if (!except.has(id)) out.set(id, periodEnd);
    }
  }
  return [...out];
}

const sameCodes = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((c, i) => c === b[i]);

/** What a replay reads of a recorded purchase: its request (a purchase's own fields). */
export type RecordedPurchase = Pick<PurchaseDoc, '_id' | 'agentId' | 'merchant' | 'amountMinor' | 'currency' | 'category' | 'requestedAt' | 'approvalId'>;
/** What a replay reads of a recorded purchase's initial decision. */
export type RecordedDecision = Pick<DecisionDoc, 'outcome' | 'reasonCodes' | 'policyVersions'>;

/** Decides one recorded purchase again and applies the replayed decision to the replayed windows. */
export async function replayPurchase(ctx: ReplayContext, state: ReplayState, p: RecordedPurchase, recorded: RecordedDecision): Promise<ReplayedPurchase> {
  const at = p.requestedAt;
  await settleHolds(ctx, state, at.getTime());
  const policies = candidatesAt(ctx.history, at, p.agentId, p.currency, recorded);
  // The agent's status at the time is what the recorded decision says: refused as not enabled before any policy was read.
  const disabled = recorded.reasonCodes.includes('AGENT_DISABLED') && recorded.policyVersions.length === 0;
  const amountMinor = fromStored(p.amountMinor);
  const base = engineBase({
    mode: 'CURRENT_POLICIES',
    purchase: { merchant: p.merchant, merchantKey: merchantKey(p.merchant), amountMinor, currency: p.currency, category: p.category },
    agent: { _id: p.agentId, status: disabled ? 'DISABLED' : 'ENABLED' },
    policies,
    now: at,
    timeZone: zoneAt(ctx.organization, at),
  });
  for (const key of windowKeysFor(base)) await readWindow(ctx, state, key);
  const decision = decide({ ...base, windows: state.windows });
  const moved = new Set<string>();
  const held: string[] = [];
  for (const e of decision.effects.budget) {
    if (e.operation === 'COMMIT') {
      adjust(state, e.windowId, 0n, amountMinor);
      moved.add(e.windowId);
    } else if (e.operation === 'HOLD') {
      adjust(state, e.windowId, amountMinor, 0n);
      held.push(e.windowId);
    }
  }
  if (decision.outcome === 'APPROVED') {
    for (const [id, periodEnd] of windowsOf(decision.policiesConsidered.map((c) => c.policyId), p.currency, base.now, base.timeZone, moved)) spendOutside(state, id, periodEnd, amountMinor);
  }
  if (decision.outcome === 'REQUIRES_APPROVAL') {
    const ttlMs = ttlMsOf(approvalTtlAt(ctx.organization, at));
    const followsRecorded = recorded.outcome === 'REQUIRES_APPROVAL' && p.approvalId !== null;
    // Only a hold that follows a recorded answer can end approved.
    const hold: ReplayHold = {
      purchaseId: p._id,
      windowIds: held,
      amountMinor,
      expiresAt: new Date(at.getTime() + ttlMs),
      approvalId: followsRecorded ? p.approvalId : null,
      ...(followsRecorded ? { spend: [p.agentId, p.currency, at.getTime()] as [string, string, number] } : {}),
    };
    state.holds.push(hold);
    if (state.nextSettle !== undefined) state.nextSettle = Math.min(state.nextSettle, settlesAt(ctx, hold));
  }
  const replayed = { outcome: decision.outcome, reasonCodes: decision.reasonCodes };
  return {
    purchaseId: p._id,
    agentId: p.agentId,
    merchant: p.merchant,
    amountMinor,
    currency: p.currency,
    requestedAt: at,
    recorded: { outcome: recorded.outcome, reasonCodes: recorded.reasonCodes },
    replayed,
    changed: recorded.outcome !== replayed.outcome || !sameCodes(recorded.reasonCodes, replayed.reasonCodes),
  };
}

/** The recorded spend of a window's policy in its period before `from`: where a replay starting then finds it. */
export function seedFrom(deps: AppDeps, organizationId: string, from: Date) {
  // The windows a replay opens share their periods (a day's, a month's) across policies: one read of a
  // period serves every policy's window of it.
  const byPeriod = new Map<string, Promise<Map<string, bigint>>>();
  return async (key: WindowKey): Promise<bigint> => {
    const { startMs, endMs } = windowBounds(key);
    if (startMs >= from.getTime()) return 0n;
    const end = Math.min(endMs, from.getTime());
    const period = `${key.currency}|${startMs}|${end}`;
    let totals = byPeriod.get(period);
    if (totals === undefined) {
      totals = attributableSpendByPolicy(deps.store.db, { organizationId, currency: key.currency, periodStart: new Date(startMs), periodEnd: new Date(end) });
      byPeriod.set(period, totals);
    }
    return (await totals).get(key.policyId) ?? 0n;
  };
}

export interface Summary {
  evaluated: number;
  unchanged: number;
  changed: number;
  byTransition: Record<string, number>;
  byReasonCode: Record<string, number>;
}

export const emptySummary = (): Summary => ({ evaluated: 0, unchanged: 0, changed: 0, byTransition: {}, byReasonCode: {} });

/** Counts one replayed purchase: a change by its transition and by the reasons the replay gave. */
export function count(s: Summary, r: ReplayedPurchase): void {
  s.evaluated++;
  if (!r.changed) {
    s.unchanged++;
    return;
  }
  s.changed++;
  const transition = `${r.recorded.outcome}->${r.replayed.outcome}`;
  s.byTransition[transition] = (s.byTransition[transition] ?? 0) + 1;
  for (const code of r.replayed.reasonCodes) s.byReasonCode[code] = (s.byReasonCode[code] ?? 0) + 1;
}

/** Recorded purchases with their initial decision and (when one was asked) their approval, a page at a time. */
export interface RecordedPage {
  purchases: { purchase: PurchaseDoc; initial: DecisionDoc }[];
  approvals: ApprovalDoc[];
}

export const PAGE = 500;

/**
 * The organisation's purchases requested in [from, to) after `after`, in request order (requestedAt, then
 * id: ids are time-ordered, so purchases of one instant come in the order they were decided).
 */
export async function recordedPage(deps: AppDeps, organizationId: string, from: Date, to: Date, after: { requestedAt: Date; id: string } | null, limit = PAGE): Promise<RecordedPage> {
  const filter: Record<string, unknown> = { organizationId, requestedAt: { $gte: from, $lt: to } };
  if (after) filter.$or = [{ requestedAt: { $gt: after.requestedAt } }, { requestedAt: after.requestedAt, _id: { $gt: after.id } }];
  const rows = await views(deps.store.db).purchaseViews.find(filter, { projection: { _id: 1 } }).sort({ requestedAt: 1, _id: 1 }).limit(limit).toArray();
  return loadRecorded(deps, rows.map((r) => r._id));
}

/** The purchases with these ids (in this order), their initial decisions and approvals. */
export async function loadRecorded(deps: AppDeps, ids: string[]): Promise<RecordedPage> {
  if (ids.length === 0) return { purchases: [], approvals: [] };
  const pc = purchaseCollections(deps.store.db);
  const purchases = new Map((await pc.purchases.find({ _id: { $in: ids } }).toArray()).map((p) => [p._id, p]));
  const initial = new Map<string, DecisionDoc>();
  for (const d of await pc.decisions.find({ purchaseId: { $in: ids } }).toArray()) if (d.kind === 'INITIAL') initial.set(d.purchaseId, d);
  const approvalIds = [...purchases.values()].flatMap((p) => (p.approvalId ? [p.approvalId] : []));
  const approvals = approvalIds.length === 0 ? [] : await pc.approvals.find({ _id: { $in: approvalIds } }).toArray();
  return {
    purchases: ids.flatMap((id) => {
      const purchase = purchases.get(id);
      const d = initial.get(id);
      return purchase && d ? [{ purchase, initial: d }] : [];
    }),
    approvals,
  };
}
