// The receipt of one decision and the hash chain of an organisation's receipts (docs/integrate/receipts.md):
// pure, so that it runs wherever the chain's head is kept (today: remembered by the organisation's actor,
// else read in the command's transaction, src/receipts/load.ts, and moved by src/purchases/record-writer.ts). A receipt is a compact JWS
// (RFC 7515) signed with Ed25519 (RFC 8037, alg EdDSA); `prev` is the base64url SHA-256 of the previous
// receipt's compact JWS, null for the first, and `seq` counts from 1 without gaps.
import { createHash, sign, type KeyObject } from 'node:crypto';
import { sha256Hex } from '../digest.ts';

export const RECEIPT_TYPE = 'decision-receipt+jwt';

/** An organisation's chain as the last receipt left it: seq 0 and head null before the first. */
export interface ChainHead {
  seq: number;
  /** base64url SHA-256 of the last receipt's compact JWS. */
  head: string | null;
}

export const EMPTY_CHAIN: ChainHead = { seq: 0, head: null };

/** What a receipt says about one decision (the payload without seq and prev). */
export interface DecisionFacts {
  /** The deployment's BASE_URL. */
  iss: string;
  organizationId: string;
  agentId: string;
  purchaseRequestId: string;
  decisionId: string;
  kind: 'INITIAL' | 'APPROVAL_REEVALUATION';
  outcome: string;
  reasonCodes: string[];
  /** Whole minor units, a decimal string (as on the wire). */
  amountMinor: string;
  currency: string;
  merchant: string;
  /** ISO 8601, milliseconds, UTC. */
  evaluatedAt: string;
  /** The policy versions the decision considered. */
  policyVersionIds: string[];
  /** Lower-case hex SHA-256 of the request body as stored (the bytes received, UTF-8). */
  requestSha256: string;
}

export interface ReceiptPayload extends DecisionFacts {
  seq: number;
  prev: string | null;
}

export interface ReceiptKey {
  kid: string;
  privateKey: KeyObject;
}

/** base64url SHA-256 of a compact JWS: what the next receipt's `prev` holds. */
export const receiptHash = (jws: string): string => createHash('sha256').update(jws, 'utf8').digest('base64url');

/** Lower-case hex SHA-256 of a stored request body. */
export const bodySha256 = sha256Hex;

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** The receipt after `head` for a decision: its compact JWS and the chain's new head. */
export function nextReceipt(head: ChainHead, facts: DecisionFacts, key: ReceiptKey): { jws: string; head: ChainHead; payload: ReceiptPayload } {
  const { iss, ...rest } = facts;
  const payload: ReceiptPayload = { iss, seq: head.seq + 1, prev: head.head, ...rest };
  const signingInput = `${b64({ alg: 'EdDSA', kid: key.kid, typ: RECEIPT_TYPE })}.${b64(payload)}`;
  const jws = `${signingInput}.${sign(null, Buffer.from(signingInput, 'ascii'), key.privateKey).toString('base64url')}`;
  return { jws, head: { seq: payload.seq, head: receiptHash(jws) }, payload };
}
