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

/**
 * The keys of a JWKS document by kid (Ed25519 ones only; others are ignored). A key with a private part
 * is refused: whoever read that document could have signed any receipt, so none would prove anything.
 */
export function keysOf(jwks: unknown): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  const list = (jwks as { keys?: unknown })?.keys;
  if (!Array.isArray(list)) throw new Error('not a JWKS document: no "keys" array');
  for (const k of list as PublicJwk[]) {
    if (k !== null && typeof k === 'object' && 'd' in k) throw new Error(`key ${String(k.kid)} has a private part ("d"): receipts signed with a published private key prove nothing`);
    if (k?.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.x !== 'string' || typeof k.kid !== 'string') continue;
    keys.set(k.kid, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' }));
  }
  return keys;
}

export class ReceiptError extends Error {}

/**
 * The bytes of a part of a compact JWS, only when it is spelled the one way base64url without padding
 * spells them (RFC 7515 §2): Node's decoder also takes padding, characters outside the alphabet and
 * set unused bits, and a receipt spelled another way than signed is another receipt (its hash, the
 * next one's prev, differs) whose signature would still verify.
 */
function canonicalBase64url(part: string): Buffer | null {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) return null;
  const bytes = Buffer.from(part, 'base64url');
  return bytes.toString('base64url') === part ? bytes : null;
}

function jsonObject(bytes: Buffer | null): Record<string, unknown> | null {
  if (bytes === null) return null;
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The payload of a receipt whose signature verifies under one of `keys`; throws ReceiptError otherwise. */
export function verifyReceipt(jws: string, keys: Map<string, KeyObject>): ReceiptPayload {
  const parts = typeof jws === 'string' ? jws.split('.') : [];
  if (parts.length !== 3) throw new ReceiptError('not a compact JWS');
  const header = jsonObject(canonicalBase64url(parts[0]));
  const payload = jsonObject(canonicalBase64url(parts[1])) as ReceiptPayload | null;
  if (header === null || payload === null) throw new ReceiptError('its header or payload is not a JSON object in base64url');
  if (header.alg !== 'EdDSA' || header.typ !== RECEIPT_TYPE) throw new ReceiptError(`unexpected header (alg ${String(header.alg)}, typ ${String(header.typ)})`);
  // RFC 7515 §4.1.11: a recipient must refuse extensions it does not understand, and this one understands
  // none. With `"crit": ["b64"], "b64": false` (RFC 7797) a JOSE library reads the payload part as the
  // payload itself, not its base64url: the same signature would say two things.
  if ('crit' in header) throw new ReceiptError(`its header names critical extensions (crit ${JSON.stringify(header.crit)}), which receipts do not use`);
  const key = typeof header.kid === 'string' ? keys.get(header.kid) : undefined;
  if (!key) throw new ReceiptError(`signed with key ${String(header.kid)}, which is not in the JWKS`);
  const signature = canonicalBase64url(parts[2]);
  if (signature === null) throw new ReceiptError('its signature is not spelled in base64url as signed (padding, other characters or unused bits set)');
  if (!verify(null, Buffer.from(`${parts[0]}.${parts[1]}`, 'ascii'), key, signature)) throw new ReceiptError('the signature does not verify');
  return payload;
}

/**
 * A `--from <seq>` option's value: decimal digits only, from 1 (no sign, exponent, hex, fraction or
 * spaces, which Number() would take), or null.
 */
export function parseSeqOption(text: string): number | null {
  if (!/^[1-9][0-9]*$/.test(text)) return null;
  const seq = Number(text);
  return Number.isSafeInteger(seq) ? seq : null;
}

export const SEQ_OPTION_MISTAKE = (text: string) => `--from takes a seq, a whole number from 1 written in decimal digits only; not ${JSON.stringify(text)}`;

export interface LogLine {
  seq: number;
  receipt: string;
}

export type ChainCheck = { ok: true; count: number; first: number | null; last: number | null; organizationId: string | null } | { ok: false; seq: number; reason: string };

/**
 * Checks receipts in file order as one chain: each signature, each `seq` the one after the last from
 * `from` (1, or where an export made with --from starts: a file that starts later is missing its
 * first lines), the line's seq the payload's, one organisation throughout, and each `prev` the hash of
 * the receipt before. Names the first bad seq.
 */
export function verifyChain(
  lines: Iterable<LogLine>,
  keys: Map<string, KeyObject>,
  check?: (payload: ReceiptPayload, line: LogLine) => string | null,
  from = 1,
): ChainCheck {
  let expected = from;
  let previous: string | null = null;
  let organizationId: string | null = null;
  let count = 0;
  for (const line of lines) {
    const seq = line.seq;
    if (seq !== expected) {
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
  return { ok: true, count, first: count === 0 ? null : from, last: count === 0 ? null : expected - 1, organizationId };
}
