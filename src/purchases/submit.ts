// submitPurchase: the command behind POST /v1/purchase-requests (SPEC.md 4.1, DESIGN.md 1).
// Runs in the agent's mailbox, as one transaction: read the configuration stamp and the budget
// windows (the agent and the policies in force come from the cache at that stamp); decide (pure);
// write the purchase, its decision, approval, budget windows, the agent's fence, idempotency record,
// outbox events and read models in one client bulk write; commit. Or nothing. On MongoDB that is
// four round trips inside the transaction.
import { createHash } from 'node:crypto';
import { Duration } from 'luxon';
import type { AppDeps } from '../app-deps.ts';
import type { Principal } from '../identity/auth.ts';
import { conflict } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { decide } from '../engine/decide.ts';
import { windowKeysFor } from '../engine/periods.ts';
import type { Decision } from '../engine/types.ts';
import { candidatesFor } from '../policies/candidates.ts';
import { configView } from '../cache/config-cache.ts';
import { applyBudgetEffects, fencePoliciesOutsideWindows, loadWindows } from '../budgets/windows.ts';
import { fenceAgentIn } from '../agents/fence.ts';
import { queueEvent } from '../events/outbox.ts';
import { runCommand } from '../commands/run-command.ts';
import { decisionRecorded } from '../metrics/metrics.ts';
import { timeEngine } from '../metrics/timing.ts';
import type { OrganizationDoc } from '../store/collections.ts';
import type { StoreSession } from '../store/store.ts';
import { WriteBatch } from '../store/write-batch.ts';
import { toStored } from '../money.ts';
import { PURCHASE_COLLECTIONS, purchaseCollections, type ApprovalDoc, type DecisionDoc, type Origin, type PurchaseDoc, type SubmittedVia } from './documents.ts';
import { engineBase, idempotentRequest, type PurchaseInput } from './input.ts';
import { policyVersionsOf, ruleEvaluationWire, submissionResponse } from './present.ts';
import { projectPurchase } from './projection.ts';
import { scheduleExpiry } from '../approvals/schedule.ts';

const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

export type SubmitDeps = AppDeps;

/** A person making a dashboard purchase on behalf of one of their organisation's agents. */
export interface DashboardSubmitter {
  kind: 'PERSON';
  organizationId: string;
  agentId: string;
  personId: string;
  name: string;
}

export interface SubmitCommand {
  organization: OrganizationDoc;
  principal: Principal | DashboardSubmitter;
  purchase: PurchaseInput;
  /** The parsed body; its metadata is kept as evidence only. */
  body: Record<string, unknown>;
  rawBody: string;
  idempotencyKey: string | null;
  origin: Origin;
}

export interface SubmitResult {
  status: 200 | 201;
  body: Record<string, unknown>;
  /** `body` already serialised, when it was (a new decision). */
  json?: string;
  /** Set when a new pending approval was created: its expiry must be scheduled after commit. */
  approvalId?: string | null;
  expiresAt?: Date | null;
}

/** JSON with object keys sorted, so key order makes no difference (DESIGN.md 3). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const submitterOf = (p: SubmitCommand['principal']) => (p.kind === 'API_KEY' ? p.apiKeyId : p.kind === 'CONNECTION' ? p.connectionId : p.personId);

/** A dashboard purchase came through no credential: submittedVia null, initiatedBy the person (SPEC.md 2.5). */
function submittedVia(p: SubmitCommand['principal']): SubmittedVia | null {
  if (p.kind === 'PERSON') return null;
  return p.kind === 'API_KEY'
    ? { type: 'API_KEY', apiKeyPrefix: p.prefix }
    : { type: 'CONNECTION', connectionId: p.connectionId, application: p.application, grantedBy: p.grantedBy };
}

/**
 * The one submission path of every surface (REST and MCP): decide and record in one transaction,
 * then, once committed, put a new approval's expiry on the job schedule.
 */
export async function submitPurchase(deps: SubmitDeps, cmd: SubmitCommand): Promise<SubmitResult> {
  const result = await decideAndRecord(deps, cmd);
  await scheduleExpiry(deps, result);
  return result;
}

async function decideAndRecord(deps: SubmitDeps, cmd: SubmitCommand): Promise<SubmitResult> {
  const agentId = cmd.principal.agentId!;
  const pc = purchaseCollections(deps.store.db);
  // A key is its submitter's; a person submits for any agent of the organisation, so theirs is per agent
  // (a dashboard form sent again for another agent is another purchase, not the first one replayed).
  const keyOwner = cmd.principal.kind === 'PERSON' ? `${cmd.principal.personId}:${agentId}` : submitterOf(cmd.principal);
  const idemId = cmd.idempotencyKey === null ? null : `${keyOwner}:${cmd.idempotencyKey}`;
  // Only a request with a key is ever compared with another.
  const requestHash = idemId === null ? '' : createHash('sha256').update(canonicalJson(idempotentRequest(cmd.purchase, cmd.body.metadata))).digest('hex');

  const replay = async (): Promise<SubmitResult | null> => {
    if (idemId === null) return null;
    const found = await pc.idempotency.findOne({ _id: idemId });
    if (!found) return null;
    if (found.requestHash !== requestHash) {
      throw conflict('idempotency_key_reuse', 'This Idempotency-Key was used with a different body.');
    }
    const response = found.responseJson !== undefined ? (JSON.parse(found.responseJson) as Record<string, unknown>) : found.response!;
    return { status: 200, body: { ...response, replayed: true } };
  };

  const early = await replay();
  if (early) return early;

  // No second look for the key inside the transaction: a request that raced this one to the same key
  // makes the idempotency insert below a duplicate, and the committed decision is then replayed.
  let result: SubmitResult;
  try {
    result = await deps.mailboxes.run(agentId, (applied) =>
      runCommand(deps.store, (session) => record(deps, cmd, session, idemId, requestHash), { onApplied: applied }),
    );
  } catch (err) {
    if (!(err instanceof KeyTaken)) throw err;
    return (await replay()) ?? decideAndRecord(deps, cmd);
  }
  if (result.status === 201) {
    decisionRecorded(result.body.decision as { outcome: string; reasonCodes: string[] }, 'INITIAL');
    result.json ??= JSON.stringify(result.body);
  }
  return result;
}

/** The Idempotency-Key was recorded by a request that committed first. */
class KeyTaken extends Error {}

async function record(deps: SubmitDeps, cmd: SubmitCommand, session: StoreSession, idemId: string | null, requestHash: string): Promise<SubmitResult> {
  const agentId = cmd.principal.agentId!;
  const db = deps.store.db;
  const now = deps.now();
  const org = cmd.organization;
  // Reads: the configuration stamp, then the budget windows; everything else comes from the cache at
  // that stamp (the agent too: its fence write below makes a concurrent status change conflict).
  const config = await configView(db, session);
  const agent = await config.get(`agent:${agentId}`, () => deps.collections.agents.findOne({ _id: agentId, organizationId: org._id }, { session }));
  if (!agent) throw new Error(`agent ${agentId} of a valid credential does not exist`);
  const candidates = await config.get(`candidates:${org._id}:${agentId}`, () => candidatesFor(deps.collections, org._id, agentId, session));
  const base = engineBase({ mode: 'CURRENT_POLICIES', purchase: cmd.purchase, agent, policies: candidates, now, timeZone: org.timezone });
  const loaded = await loadWindows(db, windowKeysFor(base), session);
  const decision = timeEngine(() => decide({ ...base, windows: loaded.states }));

  // Writes: all of them in one batch, one round trip. The key's record first: a request that raced this
  // one to it stops the batch there, and its decision is replayed.
  const batch = new WriteBatch(db);
  const purchaseId = newId();
  const idempotency =
    idemId === null ? null : { _id: idemId, requestHash, purchaseId, responseJson: '', createdAt: now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS) };
  if (idempotency) batch.insertOne(PURCHASE_COLLECTIONS.idempotency, idempotency, { onDuplicate: () => new KeyTaken(`idempotency key ${idemId}`) });
  fenceAgentIn(batch, agentId);
  const decisionDoc = decisionDocument(decision, purchaseId, org._id, 'INITIAL', now);
  const approval = decision.outcome === 'REQUIRES_APPROVAL' ? approvalDocument(decision, purchaseId, org, agentId, now) : null;
  const policyNames = new Map(candidates.map((c) => [c.policyId, c.policyName]));
  const windowIds = await applyBudgetEffects(db, session, batch, org._id, loaded, decision.effects.budget, decision.effects.crossings, now, policyNames);
  if (decision.outcome === 'APPROVED') {
    fencePoliciesOutsideWindows(batch, { policyIds: decision.policiesConsidered.map((p) => p.policyId), currency: cmd.purchase.currency, requestedAt: now, timeZone: org.timezone, windowIds });
  }
  const purchase: PurchaseDoc = {
    _id: purchaseId,
    organizationId: org._id,
    agentId,
    submitterId: submitterOf(cmd.principal),
    submittedVia: submittedVia(cmd.principal),
    origin: cmd.origin,
    initiatedBy: cmd.principal.kind === 'PERSON' ? { name: cmd.principal.name } : null,
    merchant: cmd.purchase.merchant,
    merchantKey: cmd.purchase.merchantKey,
    merchantDomain: cmd.purchase.merchantDomain,
    reason: cmd.purchase.reason,
    category: cmd.purchase.category,
    amountMinor: toStored(cmd.purchase.amountMinor),
    currency: cmd.purchase.currency,
    metadata: (cmd.body.metadata as Record<string, unknown> | null | undefined) ?? null,
    requestBody: cmd.rawBody,
    status: decision.outcome === 'REQUIRES_APPROVAL' ? 'PENDING_APPROVAL' : decision.outcome,
    requestedAt: now,
    resolvedAt: decision.outcome === 'REQUIRES_APPROVAL' ? null : now,
    decisionId: decisionDoc._id,
    approvalId: approval?._id ?? null,
    policyVersionIds: decision.policiesConsidered.map((p) => p.policyVersionId),
    windowIds,
    version: 1,
  };
  batch.insertOne(PURCHASE_COLLECTIONS.purchases, purchase);
  batch.insertOne(PURCHASE_COLLECTIONS.decisions, decisionDoc);
  if (approval) batch.insertOne(PURCHASE_COLLECTIONS.approvals, approval);
  await queueEvent(db, session, batch, purchaseEvent(purchase, decisionDoc, approval));
  projectPurchase(batch, {
    purchase,
    decision: decisionDoc,
    approval,
    agent: { id: agent._id, name: agent.name, status: agent.status },
    policyIds: decision.policiesConsidered.map((p) => p.policyId),
    timeZone: org.timezone,
    previousStatus: null,
  });
  const response = submissionResponse(purchase, decisionDoc, approval);
  // Serialised once: the same text is the HTTP body and, with a key, the record a replay reads. Without
  // a key, after the commit (decideAndRecord): a transaction does nothing that can wait.
  if (idempotency) idempotency.responseJson = JSON.stringify(response);
  await batch.write(session);
  return { status: 201 as const, body: response, json: idempotency?.responseJson, approvalId: approval?._id ?? null, expiresAt: approval?.expiresAt ?? null };
}

export function decisionDocument(decision: Decision, purchaseId: string, organizationId: string, kind: DecisionDoc['kind'], now: Date): DecisionDoc {
  return {
    _id: newId(),
    purchaseId,
    organizationId,
    kind,
    outcome: decision.outcome,
    reasonCodes: decision.reasonCodes,
    explanation: decision.explanation,
    evaluatedAt: now,
    engineVersion: decision.engineVersion,
    policyVersions: policyVersionsOf(decision),
    ruleEvaluations: decision.ruleEvaluations.map(ruleEvaluationWire),
  };
}

function approvalDocument(decision: Decision, purchaseId: string, org: OrganizationDoc, agentId: string, now: Date): ApprovalDoc {
  const ttl = Duration.fromISO(org.approvalTtl);
  return {
    _id: newId(),
    purchaseId,
    organizationId: org._id,
    agentId,
    state: 'PENDING',
    escalationReasonCodes: decision.escalationReasonCodes,
    escalatedVersionIds: decision.policiesConsidered.map((p) => p.policyVersionId),
    expiresAt: new Date(now.getTime() + ttl.as('milliseconds')),
    createdAt: now,
    resolvedAt: null,
    resolvedBy: null,
    comment: null,
    version: 1,
  };
}

/** Every purchase event carries what is needed to order by (purchaseRequestId, createdAt) (SPEC.md 6.2). */
export function purchaseEvent(p: PurchaseDoc, d: DecisionDoc, approval: ApprovalDoc | null) {
  const common = {
    purchaseRequestId: p._id,
    agentId: p.agentId,
    status: p.status,
    amountMinor: String(p.amountMinor),
    currency: p.currency,
    merchant: p.merchant,
    decisionId: d._id,
    outcome: d.outcome,
    reasonCodes: d.reasonCodes,
  };
  if (d.outcome === 'REQUIRES_APPROVAL') {
    return {
      type: 'purchase.approval_required' as const,
      organizationId: p.organizationId,
      createdAt: d.evaluatedAt,
      data: { ...common, approvalRequestId: approval!._id, escalationReasonCodes: approval!.escalationReasonCodes, expiresAt: approval!.expiresAt.toISOString() },
    };
  }
  const byHuman = d.kind === 'APPROVAL_REEVALUATION' && approval !== null;
  return {
    type: d.outcome === 'APPROVED' ? ('purchase.approved' as const) : ('purchase.rejected' as const),
    organizationId: p.organizationId,
    createdAt: d.evaluatedAt,
    data: { ...common, resolvedBy: byHuman ? 'HUMAN' : 'ENGINE', approvalRequestId: byHuman ? approval!._id : null },
  };
}
