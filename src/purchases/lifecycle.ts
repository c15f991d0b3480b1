// The purchase lifecycle as one pure module (docs/internals/design.md §1): every state-changing
// command on a purchase (a submission, a person's answer, an expiry, a cancellation by archive) is
// `decidePurchase(state, command, now) -> { outcome, record }`. No I/O, no clock, no ids of its own:
// the handler (handler.ts) loads the state, passes the time and the new ids, and hands the record to
// the storage port (record-writer.ts), which writes it as one unit. `evolve` applies a record to the
// state, so that what the next command would read is what the record says.
//
//   (none) --SUBMIT--> APPROVED | REJECTED | PENDING_APPROVAL
//   PENDING_APPROVAL --ANSWER--> APPROVED | REJECTED
//   PENDING_APPROVAL --ANSWER--> PENDING_APPROVAL  (an approval below the quorum: the answer is recorded)
//   PENDING_APPROVAL --EXPIRE--> EXPIRED      (nobody answered by expiresAt)
//   PENDING_APPROVAL --CANCEL--> CANCELLED    (its agent was archived; EXPIRED if already past expiresAt)
import { Duration } from 'luxon';
import { ApiError, invalidRequest } from '../http/errors.ts';
import { decide } from '../engine/decide.ts';
import { merchantKey } from '../engine/merchant-key.ts';
import { reevaluate } from '../engine/reevaluate.ts';
import { ENGINE_VERSION } from '../engine/version.ts';
import type { BudgetEffect, Decision, PolicyCandidate } from '../engine/types.ts';
import type { AgentDoc, OrganizationDoc, PersonDoc } from '../store/collections.ts';
import type { NewEvent } from '../events/outbox.ts';
import { hasRole } from '../identity/people/roles.ts';
import { fromStored, toStored } from '../money.ts';
import type { LoadedWindows } from '../budgets/window-state.ts';
import { applyWindowWrites, policiesToFence, windowChanges, type WindowWrite } from '../budgets/window-writes.ts';
import { answersOf, approvalsRequiredOf, initiatorPersonId, type ApprovalAnswer, type ApprovalDoc, type DecisionDoc, type IdempotencyDoc, type Origin, type PurchaseDoc, type SubmittedVia } from './documents.ts';
import { engineBase, type PurchaseInput } from './input.ts';
import { policyVersionsOf, readback, ruleEvaluationWire, submissionResponse } from './present.ts';
import { nextReceipt } from '../receipts/chain.ts';
import { receiptFacts } from '../receipts/facts.ts';
import type { ReceiptContext } from '../receipts/load.ts';

/** What a command on a purchase reads: loaded by the handler, inside the command's transaction. */
export interface PurchaseState {
  organization: OrganizationDoc;
  agent: AgentDoc;
  /** The policies in force for the agent now (a submission and an answer evaluate against them). */
  candidates: PolicyCandidate[];
  /** An ANSWER command: policies in force whose windows hold the purchase but that no longer govern its agent. */
  heldPolicies?: PolicyCandidate[];
  /** The windows the command may touch, reconciled (src/budgets/windows.ts loadWindows). */
  windows: LoadedWindows;
  /** The purchase the command is about; null for a submission. */
  purchase: PurchaseDoc | null;
  approval: ApprovalDoc | null;
  /** The person answering (an ANSWER command): null when no such person is in the organisation. */
  person?: PersonDoc | null;
  /**
   * An ANSWER command: every person of the organisation with the answering person's email, theirs
   * included. One human listed under two handles is one person: they count once in a quorum, and may
   * not approve what either record made (docs/reference/decisions.md).
   */
  personIds?: readonly string[];
  /** The organisation's drafts in shadow (from the configuration cache): a submission leaves its purchase to each (src/simulations/shadow.ts). */
  shadowIds?: readonly string[];
  /** The organisation's receipt chain and the signing key: loaded for the commands that decide (SUBMIT, ANSWER). */
  receipts?: ReceiptContext;
}

/** Who submitted: a credential (API key or connection) or a person on the dashboard. */
export interface Submitter {
  /** The credential's or person's id: the one that may read the purchase back. */
  id: string;
  via: SubmittedVia | null;
  /** The person behind a dashboard purchase (their id is `id`). */
  person: { name: string } | null;
  /** The person the purchase counts as made by: the dashboard's person, or who authorised the connection. */
  personId: string | null;
}

export type PurchaseCommand =
  | {
      kind: 'SUBMIT';
      ids: { purchaseId: string; decisionId: string; approvalId: string };
      purchase: PurchaseInput;
      submitter: Submitter;
      origin: Origin;
      metadata: Record<string, unknown> | null;
      rawBody: string;
      /** The idempotency record to write with the decision; its response is filled in by decide. */
      idempotency: Omit<IdempotencyDoc, 'responseJson' | 'purchaseId'> | null;
    }
  | { kind: 'ANSWER'; ids: { decisionId: string }; answer: 'APPROVE' | 'REJECT'; personHandle: string; comment: string | null }
  | { kind: 'EXPIRE'; ids: { decisionId: string } }
  | { kind: 'CANCEL'; ids: { decisionId: string } };

/** One command's effects, written together or not at all. */
export interface PurchaseRecord {
  /** The purchase after the command. */
  purchase: PurchaseDoc;
  /** The version it had before: null when the record creates it. */
  purchaseVersionRead: number | null;
  /**
   * Null for an approval below the quorum: the record is then the approval with the answer added, and
   * nothing else is written (the purchase, its budgets and its decision stay as they are, no event).
   */
  decision: DecisionDoc | null;
  approval: ApprovalDoc | null;
  /** The approval's version before: null when the record creates it (or there is none). */
  approvalVersionRead: number | null;
  windows: WindowWrite[];
  /** Windows the purchase's amount committed into by this command (counted as spend there). */
  committedWindowIds: string[];
  /** Policies whose document is written to fence an approval outside their windows (policiesToFence). */
  fencedPolicyIds: string[];
  /** Whether the agent's fence is written (commands that must not interleave with a status change). */
  fenceAgent: boolean;
  events: NewEvent[];
  idempotency: IdempotencyDoc | null;
  /** The decision's signed receipt and the chain's new head (an INITIAL or APPROVAL_REEVALUATION decision), else null. */
  receipt: ReceiptWrite | null;
  /** Drafts in shadow that are to evaluate the purchase after the commit (a submission's record). */
  shadowIds?: readonly string[];
  /** For the read models: the agent as shown, and the policies that governed the purchase. */
  projection: { agent: { id: string; name: string; status: AgentDoc['status'] }; policyIds: string[]; timeZone: string; previousStatus: PurchaseDoc['status'] | null };
}

/** A receipt to store, and the chain head it moves from `seq - 1` to `seq`. */
export interface ReceiptWrite {
  organizationId: string;
  seq: number;
  /** The head it moves from (its `prev`): the head at `seq - 1` must still be this one. */
  prev: string | null;
  /** The hash of this receipt: the chain's head once it is written. */
  head: string;
  purchaseId: string;
  decisionId: string;
  jws: string;
}

export type PurchaseOutcome =
  | { kind: 'SUBMITTED'; body: ReturnType<typeof submissionResponse>; json: string | undefined; expiry: { approvalId: string; expiresAt: Date } | null; decision: DecisionDoc; receipt: string }
  | { kind: 'ANSWERED'; purchase: ReturnType<typeof readback>; decision: DecisionDoc; receipt: string }
  /** An approval below the quorum, recorded: the purchase still waits for more approvers. */
  | { kind: 'ANSWER_RECORDED'; purchaseId: string; approval: ApprovalDoc }
  | { kind: 'CLOSED'; approval: ApprovalDoc; decision: DecisionDoc }
  /** Nothing to do (an expiry of an approval answered meanwhile, or not yet due): no record. */
  | { kind: 'UNCHANGED' };

export interface Decided {
  outcome: PurchaseOutcome;
  record: PurchaseRecord | null;
}

export const notPending = (state: string) =>
  new ApiError(409, 'approval_not_pending', `This purchase is not waiting for an answer (approval ${state}); nothing was changed.`);

export const notAnApprover = (name: string) =>
  new ApiError(403, 'person_not_approver', `${name} does not have the approver role, so cannot answer approvals; nothing was changed.`);

/**
 * Four eyes: the person who made a purchase (from the dashboard, or through an MCP connection they
 * authorised) cannot also approve it; another approver must. Rejecting it stays open to them:
 * withdrawing one's own purchase gives nobody anything.
 */
export const selfApproval = (name: string) =>
  new ApiError(403, 'self_approval_not_permitted', `${name} made this purchase, so cannot also approve it; another approver must. It is still waiting for an answer; nothing was changed.`);

/** A quorum counts each person once: their second answer changes nothing. */
export const alreadyAnswered = (name: string) =>
  new ApiError(409, 'approval_already_answered_by_person', `${name} has already answered this approval; each person counts once, so another approver must answer. Nothing was changed.`);

export function decidePurchase(state: PurchaseState, command: PurchaseCommand, now: Date): Decided {
  switch (command.kind) {
    case 'SUBMIT':
      return submit(state, command, now);
    case 'ANSWER':
      return answer(state, command, notBeforeRecorded(state, now));
    case 'EXPIRE':
    case 'CANCEL':
      return close(state, command, notBeforeRecorded(state, now));
  }
}

/**
 * The time a command on an existing purchase records: its clock's, but never before what the purchase
 * already recorded (its request, the answers so far). Another process's clock may be behind the one
 * that recorded those, and an answer dated before its request would break the order of the purchase's
 * events (docs/reference/contract.md §6.2) and its read-back (docs/reference/decisions.md).
 */
function notBeforeRecorded(state: PurchaseState, now: Date): Date {
  const recorded = [state.purchase?.requestedAt, ...(state.approval ? answersOf(state.approval).map((a) => a.answeredAt) : [])];
  const latest = Math.max(...recorded.map((at) => at?.getTime() ?? 0));
  return latest > now.getTime() ? new Date(latest) : now;
}

/**
 * The state after a record: what the same organisation's next command would read. The windows the record
 * wrote are as it wrote them (no longer missing, reconciled or moved); the others as they were read.
 */
export function evolve(state: PurchaseState, record: PurchaseRecord): PurchaseState {
  const docs = applyWindowWrites(state.windows, record.windows);
  const written = new Set(record.windows.map((w) => w.id));
  const states = new Map(state.windows.states);
  for (const id of written) {
    const doc = docs.get(id)!;
    states.set(id, { budgetCounterId: id, committedMinor: fromStored(doc.committedMinor), heldMinor: fromStored(doc.heldMinor), openingBalanceMinor: fromStored(doc.openingBalanceMinor) });
  }
  const unwritten = <T>(entries: Iterable<[string, T]>) => new Map([...entries].filter(([id]) => !written.has(id)));
  return {
    ...state,
    windows: {
      docs,
      states,
      versions: state.windows.versions,
      missing: unwritten(state.windows.missing),
      reconciled: new Set([...state.windows.reconciled].filter((id) => !written.has(id))),
      rebased: unwritten(state.windows.rebased),
      remembered: new Set([...state.windows.remembered].filter((id) => !written.has(id))),
    },
    purchase: record.purchase,
    approval: record.approval,
    receipts: state.receipts && record.receipt ? { ...state.receipts, chain: { seq: record.receipt.seq, head: record.receipt.head } } : state.receipts,
  };
}

/**
 * The receipt of a decision (docs/integrate/receipts.md): signed here, in the command, so that it is
 * written in the same record as the decision it is about.
 */
function signReceipt(state: PurchaseState, purchase: PurchaseDoc, decision: DecisionDoc): ReceiptWrite {
  const context = state.receipts;
  if (!context) throw new Error('a decision without its receipt: the load step did not read the receipt chain');
  const { jws, head } = nextReceipt(context.chain, receiptFacts(context.issuer, purchase, decision), context.key);
  return { organizationId: purchase.organizationId, seq: head.seq, prev: context.chain.head, head: head.head!, purchaseId: purchase._id, decisionId: decision._id, jws };
}

const committedInto = (effects: readonly BudgetEffect[]) => [...new Set(effects.filter((e) => e.operation === 'COMMIT' || e.operation === 'CONVERT_HOLD').map((e) => e.windowId))];

const agentView = (agent: AgentDoc) => ({ id: agent._id, name: agent.name, status: agent.status });

const policyNamesOf = (candidates: readonly PolicyCandidate[]) => new Map(candidates.map((c) => [c.policyId, c.policyName]));

function submit(state: PurchaseState, cmd: Extract<PurchaseCommand, { kind: 'SUBMIT' }>, now: Date): Decided {
  const { organization: org, agent, candidates } = state;
  const base = engineBase({ mode: 'CURRENT_POLICIES', purchase: cmd.purchase, agent, policies: candidates, now, timeZone: org.timezone });
  const decision = decide({ ...base, windows: state.windows.states });
  const decisionDoc = decisionDocument(decision, cmd.ids.decisionId, cmd.ids.purchaseId, org._id, 'INITIAL', now);
  const approval = decision.outcome === 'REQUIRES_APPROVAL' ? approvalDocument(decision, cmd.ids.approvalId, cmd.ids.purchaseId, org, agent._id, now) : null;
  const changes = windowChanges(org._id, state.windows, decision.effects.budget, decision.effects.crossings, now, policyNamesOf(candidates));
  const policyIds = decision.policiesConsidered.map((p) => p.policyId);
  const purchase: PurchaseDoc = {
    _id: cmd.ids.purchaseId,
    organizationId: org._id,
    agentId: agent._id,
    submitterId: cmd.submitter.id,
    submittedVia: cmd.submitter.via,
    origin: cmd.origin,
    initiatedBy: cmd.submitter.person,
    initiatorPersonId: cmd.submitter.personId,
    merchant: cmd.purchase.merchant,
    merchantKey: cmd.purchase.merchantKey,
    merchantDomain: cmd.purchase.merchantDomain,
    reason: cmd.purchase.reason,
    category: cmd.purchase.category,
    amountMinor: toStored(cmd.purchase.amountMinor),
    currency: cmd.purchase.currency,
    metadata: cmd.metadata,
    requestBody: cmd.rawBody,
    status: decision.outcome === 'REQUIRES_APPROVAL' ? 'PENDING_APPROVAL' : decision.outcome,
    requestedAt: now,
    resolvedAt: decision.outcome === 'REQUIRES_APPROVAL' ? null : now,
    decisionId: decisionDoc._id,
    approvalId: approval?._id ?? null,
    policyVersionIds: decision.policiesConsidered.map((p) => p.policyVersionId),
    windowIds: changes.moved,
    version: 1,
  };
  const receipt = signReceipt(state, purchase, decisionDoc);
  const body = submissionResponse(purchase, decisionDoc, approval);
  // Serialised once: the same text is the HTTP body and, with a key, the record a replay reads. Without
  // a key, the handler serialises it after the commit.
  const json = cmd.idempotency === null ? undefined : JSON.stringify(body);
  const record: PurchaseRecord = {
    purchase,
    purchaseVersionRead: null,
    decision: decisionDoc,
    approval,
    approvalVersionRead: null,
    windows: changes.writes,
    committedWindowIds: committedInto(decision.effects.budget),
    fencedPolicyIds:
      decision.outcome === 'APPROVED' ? policiesToFence({ policyIds, currency: purchase.currency, requestedAt: now, timeZone: org.timezone, windowIds: changes.moved }) : [],
    fenceAgent: true,
    events: [...changes.events, purchaseEvent(purchase, decisionDoc, approval)],
    idempotency: cmd.idempotency === null ? null : { ...cmd.idempotency, purchaseId: purchase._id, responseJson: json, receipt: receipt.jws },
    receipt,
    shadowIds: state.shadowIds ?? [],
    projection: { agent: agentView(agent), policyIds, timeZone: org.timezone, previousStatus: null },
  };
  return {
    outcome: { kind: 'SUBMITTED', body, json, expiry: approval === null ? null : { approvalId: approval._id, expiresAt: approval.expiresAt }, decision: decisionDoc, receipt: receipt.jws },
    record,
  };
}

function answer(state: PurchaseState, cmd: Extract<PurchaseCommand, { kind: 'ANSWER' }>, now: Date): Decided {
  const { organization: org, agent, candidates, approval } = state;
  const purchase = state.purchase!;
  if (!approval) throw new ApiError(409, 'approval_not_pending', 'Nobody was asked about this purchase; there is nothing to answer.');
  if (approval.state !== 'PENDING') throw notPending(approval.state);
  if (approval.expiresAt.getTime() <= now.getTime()) throw notPending('past its expiry');
  // The archive has committed and its follow-up is cancelling the agent's approvals, one at a time
  // (src/approvals/close.ts): an answer in between would decide what the archive cancels
  // (docs/reference/contract.md §3.1).
  if (agent.status === 'ARCHIVED') throw notPending('being cancelled: its agent was archived');
  const person = state.person;
  if (!person) throw invalidRequest([{ path: 'person', code: 'UNKNOWN_PERSON', message: `No person with handle "${cmd.personHandle}" in this organisation.` }]);
  if (!hasRole(person, 'approver')) throw notAnApprover(person.name);
  const self = new Set([person._id, ...(state.personIds ?? [])]);
  const initiator = initiatorPersonId(purchase);
  if (cmd.answer === 'APPROVE' && initiator !== null && self.has(initiator)) throw selfApproval(person.name);
  const answers = answersOf(approval);
  if (answers.some((a) => self.has(a.personId))) throw alreadyAnswered(person.name);
  const given: ApprovalAnswer = { personId: person._id, name: person.name, answer: cmd.answer, comment: cmd.comment, answeredAt: now };
  const required = approvalsRequiredOf(approval);
  // Every earlier answer approved (one rejection ends the approval), so this is approval number answers.length + 1.
  if (cmd.answer === 'APPROVE' && answers.length + 1 < required) return recordAnswer(state, { ...approval, approvalsRequired: required, answers: [...answers, given], version: approval.version + 1 });

  const base = engineBase({
    mode: 'CURRENT_POLICIES',
    // The key is derived again: one stored before the key last changed would miss today's lists.
    purchase: { ...purchase, merchantKey: merchantKey(purchase.merchant), amountMinor: fromStored(purchase.amountMinor) },
    agent,
    policies: candidates,
    now,
    timeZone: org.timezone,
    periodInstant: purchase.requestedAt,
  });
  const result = reevaluate(
    { ...base, windows: state.windows.states },
    { answer: cmd.answer, escalatedVersionIds: approval.escalatedVersionIds, heldWindowIds: purchase.windowIds, escalationReasonCodes: approval.escalationReasonCodes, heldPolicies: state.heldPolicies ?? [] },
  );
  const approved = result.outcome === 'APPROVED';
  const committed = committedInto(result.effects.budget);
  const changes = windowChanges(org._id, state.windows, result.effects.budget, result.effects.crossings, now, policyNamesOf([...candidates, ...(state.heldPolicies ?? [])]));
  const policyIds = result.policiesConsidered.map((p) => p.policyId);
  const decision = decisionDocument(result, cmd.ids.decisionId, purchase._id, org._id, 'APPROVAL_REEVALUATION', now);
  const resolved: ApprovalDoc = {
    ...approval,
    state: approved ? 'APPROVED' : 'REJECTED',
    resolvedAt: now,
    resolvedBy: { name: person.name, personId: person._id },
    comment: cmd.comment,
    approvalsRequired: required,
    answers: [...answers, given],
    version: approval.version + 1,
  };
  const next: PurchaseDoc = {
    ...purchase,
    status: result.outcome,
    resolvedAt: now,
    decisionId: decision._id,
    policyVersionIds: result.policiesConsidered.map((p) => p.policyVersionId),
    // Where the amount is spent: not a window it was only released from (held before a change of zone).
    windowIds: approved ? committed : [],
    version: purchase.version + 1,
  };
  const record: PurchaseRecord = {
    purchase: next,
    purchaseVersionRead: purchase.version,
    decision,
    approval: resolved,
    approvalVersionRead: approval.version,
    windows: changes.writes,
    committedWindowIds: committed,
    fencedPolicyIds: approved ? policiesToFence({ policyIds, currency: purchase.currency, requestedAt: purchase.requestedAt, timeZone: org.timezone, windowIds: changes.moved }) : [],
    fenceAgent: true,
    events: [...changes.events, purchaseEvent(next, decision, resolved)],
    idempotency: null,
    receipt: signReceipt(state, next, decision),
    projection: { agent: agentView(agent), policyIds, timeZone: org.timezone, previousStatus: purchase.status },
  };
  return { outcome: { kind: 'ANSWERED', purchase: readback(next, agentView(agent), decision, resolved), decision, receipt: record.receipt!.jws }, record };
}

/**
 * An approval below the quorum: only the approval changes (the answer added, at the version read, so
 * that two answers racing each other cannot both count against one version), and the purchase's view.
 */
function recordAnswer(state: PurchaseState, recorded: ApprovalDoc): Decided {
  const { organization: org, agent } = state;
  const purchase = state.purchase!;
  const record: PurchaseRecord = {
    purchase,
    purchaseVersionRead: purchase.version,
    decision: null,
    approval: recorded,
    approvalVersionRead: state.approval!.version,
    windows: [],
    committedWindowIds: [],
    fencedPolicyIds: [],
    fenceAgent: false,
    events: [],
    idempotency: null,
    // No decision, so no receipt: the chain counts decisions.
    receipt: null,
    projection: { agent: agentView(agent), policyIds: [], timeZone: org.timezone, previousStatus: purchase.status },
  };
  return { outcome: { kind: 'ANSWER_RECORDED', purchaseId: purchase._id, approval: recorded }, record };
}

function close(state: PurchaseState, cmd: Extract<PurchaseCommand, { kind: 'EXPIRE' | 'CANCEL' }>, now: Date): Decided {
  const { organization: org, agent, approval } = state;
  const purchase = state.purchase!;
  if (!approval || approval.state !== 'PENDING') return { outcome: { kind: 'UNCHANGED' }, record: null };
  // Past expiresAt nobody answered in time: it has expired, even if an archive's cancellation gets to it
  // before the expiry job does (docs/reference/contract.md §3.1).
  const expired = approval.expiresAt.getTime() <= now.getTime();
  if (cmd.kind === 'EXPIRE' && !expired) return { outcome: { kind: 'UNCHANGED' }, record: null };
  // An agent enabled again before the archive's cancellations reached this approval keeps it waiting.
  if (!expired && agent.status !== 'ARCHIVED') return { outcome: { kind: 'UNCHANGED' }, record: null };
  const closing = expired ? ('EXPIRED' as const) : ('CANCELLED' as const);
  const amount = fromStored(purchase.amountMinor);
  const releases: BudgetEffect[] = purchase.windowIds.map((id) => ({ operation: 'RELEASE_HOLD', windowId: id, window: null, budgetCounterId: id, amountMinor: amount }));
  const changes = windowChanges(org._id, state.windows, releases, [], now, new Map());
  const decision: DecisionDoc = {
    _id: cmd.ids.decisionId,
    purchaseId: purchase._id,
    organizationId: org._id,
    kind: expired ? 'APPROVAL_EXPIRED' : 'APPROVAL_CANCELLED',
    outcome: 'REJECTED',
    reasonCodes: expired ? approval.escalationReasonCodes : ['AGENT_DISABLED'],
    explanation: expired
      ? 'Rejected: nobody answered the approval request before it expired, so the purchase was refused and its budget hold released.'
      : 'Rejected: the agent was archived while the purchase waited for a person, so the request was cancelled and its budget hold released.',
    evaluatedAt: now,
    engineVersion: ENGINE_VERSION,
    policyVersions: [],
    ruleEvaluations: [],
  };
  const next: PurchaseDoc = { ...purchase, status: closing, resolvedAt: now, decisionId: decision._id, windowIds: [], version: purchase.version + 1 };
  const closed: ApprovalDoc = { ...approval, state: closing, resolvedAt: now, version: approval.version + 1 };
  const events: NewEvent[] = expired
    ? [
        {
          type: 'purchase.approval_expired',
          organizationId: org._id,
          createdAt: now,
          data: {
            purchaseRequestId: purchase._id,
            approvalRequestId: approval._id,
            agentId: purchase.agentId,
            status: 'EXPIRED',
            amountMinor: String(purchase.amountMinor),
            currency: purchase.currency,
            merchant: purchase.merchant,
            expiresAt: approval.expiresAt.toISOString(),
          },
        },
      ]
    : [];
  const record: PurchaseRecord = {
    purchase: next,
    purchaseVersionRead: purchase.version,
    decision,
    approval: closed,
    approvalVersionRead: approval.version,
    windows: changes.writes,
    committedWindowIds: [],
    fencedPolicyIds: [],
    // A cancellation read the agent ARCHIVED: its enabling again, committed meanwhile, must conflict with it.
    fenceAgent: !expired,
    events,
    idempotency: null,
    receipt: null,
    projection: { agent: agentView(agent), policyIds: [], timeZone: org.timezone, previousStatus: purchase.status },
  };
  return { outcome: { kind: 'CLOSED', approval: closed, decision }, record };
}

export function decisionDocument(decision: Decision, id: string, purchaseId: string, organizationId: string, kind: DecisionDoc['kind'], now: Date): DecisionDoc {
  return {
    _id: id,
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

function approvalDocument(decision: Decision, id: string, purchaseId: string, org: OrganizationDoc, agentId: string, now: Date): ApprovalDoc {
  const ttl = Duration.fromISO(org.approvalTtl);
  return {
    _id: id,
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
    approvalsRequired: decision.approvalsRequired,
    answers: [],
    version: 1,
  };
}

/** Every purchase event carries what is needed to order by (purchaseRequestId, createdAt) (docs/reference/contract.md §6.2). */
export function purchaseEvent(p: PurchaseDoc, d: DecisionDoc, approval: ApprovalDoc | null): NewEvent {
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
      type: 'purchase.approval_required',
      organizationId: p.organizationId,
      createdAt: d.evaluatedAt,
      data: { ...common, approvalRequestId: approval!._id, escalationReasonCodes: approval!.escalationReasonCodes, expiresAt: approval!.expiresAt.toISOString() },
    };
  }
  const byHuman = d.kind === 'APPROVAL_REEVALUATION' && approval !== null;
  return {
    type: d.outcome === 'APPROVED' ? 'purchase.approved' : 'purchase.rejected',
    organizationId: p.organizationId,
    createdAt: d.evaluatedAt,
    data: { ...common, resolvedBy: byHuman ? 'HUMAN' : 'ENGINE', approvalRequestId: byHuman ? approval!._id : null },
  };
}
