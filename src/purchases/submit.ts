// submitPurchase: the command behind POST /v1/purchase-requests (docs/reference/contract.md §4.1, docs/internals/design.md §1), for every
// surface (REST, MCP, the dashboard). A key already recorded replays its decision; otherwise the
// submission is a SUBMIT command of the purchase lifecycle (lifecycle.ts), run by the one handler:
// load the configuration stamp and the budget windows (the agent and the policies in force come from
// the cache at that stamp; the organisation's receipt chain head as its actor remembers it), decide (and
// sign the receipt), write the record in one transaction. On MongoDB that is four round trips inside the
// transaction (a fifth, the chain head, only when the actor remembers none).
import { createHash } from 'node:crypto';
import type { AppDeps } from '../app-deps.ts';
import { apiKeyRevoked, organizationSuspended, type Principal } from '../identity/auth.ts';
import { conflict } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { writtenNumber } from '../json.ts';
import { windowKeysFor } from '../engine/periods.ts';
import { candidatesFor } from '../policies/candidates.ts';
import { configView } from '../cache/config-cache.ts';
import { shadowsOf } from '../policies/shadows.ts';
import { loadWindows } from '../budgets/windows.ts';
import type { OrganizationDoc } from '../store/collections.ts';
import type { StoreSession } from '../store/store.ts';
import { purchaseCollections, type Origin, type SubmittedVia } from './documents.ts';
import { engineBase, idempotentRequest, type PurchaseInput } from './input.ts';
import { handlePurchaseCommand } from './handler.ts';
import type { PurchaseCommand, PurchaseState } from './lifecycle.ts';
import { IdempotencyKeyTaken } from './record-writer.ts';
import { loadReceiptContext } from '../receipts/load.ts';

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
  /** The decision's receipt (docs/integrate/receipts.md): the Decision-Receipt header. Absent on a replay of a record older than receipts. */
  receipt?: string;
}

/**
 * JSON with object keys sorted, so key order makes no difference, and a number a double did not keep
 * as written in its exact value, so 9007199254740993 is not 9007199254740992 (docs/reference/decisions.md).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v, i) => member(value, String(i), v)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${member(value, k, v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const member = (holder: object, key: string, value: unknown): string =>
  (typeof value === 'number' ? writtenNumber(holder, key) : undefined) ?? canonicalJson(value);

const submitterOf = (p: SubmitCommand['principal']) => (p.kind === 'API_KEY' ? p.apiKeyId : p.kind === 'CONNECTION' ? p.connectionId : p.personId);

/** A dashboard purchase came through no credential: submittedVia null, initiatedBy the person (docs/reference/contract.md §2.5). */
function submittedVia(p: SubmitCommand['principal']): SubmittedVia | null {
  if (p.kind === 'PERSON') return null;
  return p.kind === 'API_KEY'
    ? { type: 'API_KEY', apiKeyPrefix: p.prefix }
    : { type: 'CONNECTION', connectionId: p.connectionId, application: p.application, grantedBy: p.grantedBy };
}

/** The one submission path of every surface: a replay, or a decision recorded. */
export async function submitPurchase(deps: SubmitDeps, cmd: SubmitCommand): Promise<SubmitResult> {
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
    return { status: 200, body: { ...response, replayed: true }, receipt: found.receipt };
  };

  const early = await replay();
  if (early) return early;

  const now = deps.now();
  const command: PurchaseCommand = {
    kind: 'SUBMIT',
    ids: { purchaseId: newId(), decisionId: newId(), approvalId: newId() },
    purchase: cmd.purchase,
    submitter: {
      id: submitterOf(cmd.principal),
      via: submittedVia(cmd.principal),
      person: cmd.principal.kind === 'PERSON' ? { name: cmd.principal.name } : null,
      personId: cmd.principal.kind === 'PERSON' || cmd.principal.kind === 'CONNECTION' ? cmd.principal.personId : null,
    },
    origin: cmd.origin,
    metadata: (cmd.body.metadata as Record<string, unknown> | null | undefined) ?? null,
    rawBody: cmd.rawBody,
    idempotency: idemId === null ? null : { _id: idemId, requestHash, createdAt: now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS) },
  };
  // No second look for the key inside the transaction: a request that raced this one to the same key
  // makes the idempotency insert a duplicate, and the committed decision is then replayed.
  let outcome;
  try {
    outcome = await handlePurchaseCommand(deps, cmd.organization._id, (session, at) => loadSubmission(deps, session, cmd, at), command);
  } catch (err) {
    if (!(err instanceof IdempotencyKeyTaken)) throw err;
    return (await replay()) ?? submitPurchase(deps, cmd);
  }
  if (outcome.kind !== 'SUBMITTED') throw new Error(`a submission ended ${outcome.kind}`);
  return { status: 201, body: outcome.body, json: outcome.json ?? JSON.stringify(outcome.body), receipt: outcome.receipt };
}

/**
 * What a submission reads: the configuration stamp, then the budget windows, and the receipt chain head
 * unless the organisation's actor remembers it (the signing key is cached at the stamp); everything else comes
 * from the cache at that stamp (the agent too: the record's fence write makes a concurrent status
 * change conflict). Exported for the command-level store conformance suite (test/store/command-conformance.ts).
 */
export async function loadSubmission(deps: SubmitDeps, session: StoreSession, cmd: SubmitCommand, now: Date): Promise<PurchaseState> {
  const agentId = cmd.principal.agentId!;
  const config = await configView(deps.store.db, session);
  // The organisation and the key as of this transaction, not as authenticated: a manifest applied in between
  // must not give the decision its new policies with its old time zone or approvalTtl, nor decide for a key
  // it revoked or an organisation it suspended (docs/operate/manifests.md).
  const org = await config.get(`organization:${cmd.organization._id}`, () => deps.collections.organizations.findOne({ _id: cmd.organization._id }, { session }));
  if (!org) throw new Error(`organization ${cmd.organization._id} of a valid credential does not exist`);
  if (org.status === 'SUSPENDED') throw organizationSuspended();
  const principal = cmd.principal;
  if (principal.kind === 'API_KEY') {
    const key = await config.get(`api-key:${principal.prefix}`, () => deps.collections.apiKeys.findOne({ prefix: principal.prefix }, { session }));
    if (key?.revokedAt) throw apiKeyRevoked();
  }
  const agent = await config.get(`agent:${agentId}`, () => deps.collections.agents.findOne({ _id: agentId, organizationId: org._id }, { session }));
  if (!agent) throw new Error(`agent ${agentId} of a valid credential does not exist`);
  const candidates = await config.get(`candidates:${org._id}:${agentId}`, () => candidatesFor(deps.collections, org._id, agentId, session));
  const base = engineBase({ mode: 'CURRENT_POLICIES', purchase: cmd.purchase, agent, policies: candidates, now, timeZone: org.timezone });
  const windows = await loadWindows(deps.store.db, windowKeysFor(base), session, [], deps.actors.memory(org._id).windows);
  // From the cache at this stamp: no query unless the configuration changed.
  const shadows = await shadowsOf(config, deps.store.db, org._id, session);
  const receipts = await loadReceiptContext(deps, session, org._id);
  return { organization: org, agent, candidates, windows, purchase: null, approval: null, shadowIds: shadows, receipts };
}
