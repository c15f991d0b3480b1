// Checking receipts with public keys only (docs/integrate/receipts.md): one receipt's signature, and a run
// of an organisation's receipts in order as a chain. No store, no service code: the offline verifier
// (scripts/verify-receipts.ts) and `npm run admin -- verify-log` share it.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { RECEIPT_TYPE, receiptHash, type ReceiptPayload } from './chain.ts';

export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg?: string;
  use?: string;
}

/** The keys of a JWKS document by kid (Ed25519 ones only; others are ignored). */
export function keysOf(jwks: unknown): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  const list = (jwks as { keys?: unknown })?.keys;
  if (!Array.isArray(list)) throw new Error('not a JWKS document: no "keys" array');
  for (const k of list as PublicJwk[]) {
    if (k?.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.x !== 'string' || typeof k.kid !== 'string') continue;
    keys.set(k.kid, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' }));
  }
  return keys;
}

export class ReceiptError extends Error {}

/** The payload of a receipt whose signature verifies under one of `keys`; throws ReceiptError otherwise. */
export function verifyReceipt(jws: string, keys: Map<string, KeyObject>): ReceiptPayload {
  const parts = typeof jws === 'string' ? jws.split('.') : [];
  if (parts.length !== 3) throw new ReceiptError('not a compact JWS');
  let header: { alg?: unknown; kid?: unknown; typ?: unknown };
  let payload: ReceiptPayload;
  try {
    header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    throw new ReceiptError('its header or payload is not base64url JSON');
  }
  if (header.alg !== 'EdDSA' || header.typ !== RECEIPT_TYPE) throw new ReceiptError(`unexpected header (alg ${String(header.alg)}, typ ${String(header.typ)})`);
  const key = typeof header.kid === 'string' ? keys.get(header.kid) : undefined;
  if (!key) throw new ReceiptError(`signed with key ${String(header.kid)}, which is not in the JWKS`);
  if (!verify(null, Buffer.from(`${parts[0]}.${parts[1]}`, 'ascii'), key, Buffer.from(parts[2], 'base64url'))) throw new ReceiptError('the signature does not verify');
  return payload;
}

export interface LogLine {
  seq: number;
  receipt: string;
}

export type ChainCheck = { ok: true; count: number; first: number | null; last: number | null } | { ok: false; seq: number; reason: string };

/**
 * Checks receipts in file order as one chain: each signature, each `seq` the one after the last (from
 * 1, or from the first line's for an export made with --from), the line's seq the payload's, one
 * organisation throughout, and each `prev` the hash of the receipt before. Names the first bad seq.
 */
export function verifyChain(lines: Iterable<LogLine>, keys: Map<string, KeyObject>, check?: (payload: ReceiptPayload, line: LogLine) => string | null): ChainCheck {
  let expected: number | null = null;
  let previous: string | null = null;
  let organizationId: string | null = null;
  let count = 0;
  let first: number | null = null;
  for (const line of lines) {
    const seq = line.seq;
    if (expected === null) {
      if (!Number.isSafeInteger(seq) || seq < 1) return { ok: false, seq: 1, reason: `the first line has no valid seq (${JSON.stringify(seq)})` };
      expected = seq;
      first = seq;
    } else if (seq !== expected) {
      return { ok: false, seq: expected, reason: `seq ${expected} was expected here, found ${JSON.stringify(seq)}: missing or out of order` };
    }
    let payload: ReceiptPayload;
    try {
      payload = verifyReceipt(line.receipt, keys);
    } catch (err) {
      return { ok: false, seq, reason: (err as Error).message };
    }
    if (payload.seq !== seq) return { ok: false, seq, reason: `the receipt says seq ${payload.seq}` };
    if (organizationId !== null && payload.organizationId !== organizationId) return { ok: false, seq, reason: `the receipt is of organisation ${payload.organizationId}, not ${organizationId}` };
    organizationId = payload.organizationId;
    if (seq === 1 && payload.prev !== null) return { ok: false, seq, reason: 'the first receipt has a prev' };
    if (previous !== null && payload.prev !== previous) return { ok: false, seq, reason: 'prev is not the hash of the receipt before it' };
    const problem = check?.(payload, line) ?? null;
    if (problem !== null) return { ok: false, seq, reason: problem };
    previous = receiptHash(line.receipt);
    expected = seq + 1;
    count++;
  }
  return { ok: true, count, first, last: expected === null ? null : expected - 1 };
}
