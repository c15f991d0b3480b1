// Webhook signatures, docs/reference/contract.md §6.4, with the header names and key of docs/reference/decisions.md.
//
//   1. Signed input = "v1:" + timestamp (Unix seconds, decimal) + ":" + the exact raw body bytes.
//   2. Signature = base64url(HMAC-SHA256(key = UTF-8 bytes of the whole secret string, prefix
//      `cmp_whs_` included; message = signed input)).
//   3. The signature header holds one or more `v1=<signature>` entries joined by `,`: two during
//      the 24 hours after a rotation (docs/reference/contract.md §4.17).
//   4. A receiver rejects a timestamp more than 300 s from its clock (docs/reference/contract.md §8) and accepts if any
//      entry matches, comparing in constant time with lengths compared first.
//
// `verifySignature` is the reference receiver code shown in docs/integrate/webhooks.md.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const WEBHOOK_ID_HEADER = 'Service-Webhook-Id';
export const WEBHOOK_TIMESTAMP_HEADER = 'Service-Webhook-Timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'Service-Webhook-Signature';
export const WEBHOOK_ATTEMPT_HEADER = 'Service-Webhook-Attempt';

export const SIGNATURE_VERSION = 'v1';
export const DEFAULT_TOLERANCE_SECONDS = 300;

// A receiver must not be made to do unbounded work by a hostile header.
const MAX_SIGNATURE_ENTRIES = 8;

function assertTimestamp(timestamp: number): void {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new RangeError('webhook timestamp must be a non-negative integer number of Unix seconds');
  }
}

/** Step 1-2: the base64url HMAC-SHA256 of one secret over `v1:<timestamp>:<body>`. */
export function computeSignature(secret: string, timestamp: number, body: Uint8Array): string {
  assertTimestamp(timestamp);
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${SIGNATURE_VERSION}:${timestamp}:`, 'utf8')
    .update(body)
    .digest('base64url');
}

/** Step 3: the signature header value, one `v1=` entry per secret currently signing. */
export function signatureHeader(secrets: string[], timestamp: number, body: Uint8Array): string {
  if (secrets.length === 0) throw new RangeError('at least one signing secret is required');
  return secrets.map((secret) => `${SIGNATURE_VERSION}=${computeSignature(secret, timestamp, body)}`).join(',');
}

export interface DeliveryHeaderInput {
  eventId: string;
  timestamp: number;
  attempt: number;
  secrets: string[];
  body: Uint8Array;
}

/** Every header of one delivery attempt (docs/reference/decisions.md). Custom headers are unsupported (docs/reference/contract.md §6.6). */
export function deliveryHeaders({ eventId, timestamp, attempt, secrets, body }: DeliveryHeaderInput): Record<string, string> {
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new RangeError('attempt is 1-based');
  return {
    'Content-Type': 'application/json',
    [WEBHOOK_ID_HEADER]: eventId,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestamp),
    [WEBHOOK_SIGNATURE_HEADER]: signatureHeader(secrets, timestamp, body),
    [WEBHOOK_ATTEMPT_HEADER]: String(attempt),
  };
}

export interface VerifyInput {
  /** The `Service-Webhook-Signature` header value. */
  header: string | string[] | undefined;
  /** The `Service-Webhook-Timestamp` header value (Unix seconds), as received or as a number. */
  timestamp: string | number | string[] | undefined;
  /** The raw request body bytes, never a re-serialised object. */
  body: Uint8Array;
  /** The endpoint's signing secret, `cmp_whs_...`. */
  secret: string;
  /** The receiver's clock; defaults to now. */
  now?: Date;
  toleranceSeconds?: number;
}

/** Step 4, the receiving side. Returns true only for an authentic, fresh delivery. */
export function verifySignature({
  header,
  timestamp,
  body,
  secret,
  now = new Date(),
  toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
}: VerifyInput): boolean {
  if (typeof header !== 'string' || typeof secret !== 'string' || secret.length === 0) return false;

  let ts: number;
  if (typeof timestamp === 'number') ts = timestamp;
  else if (typeof timestamp === 'string' && /^[0-9]{1,15}$/.test(timestamp)) ts = Number(timestamp);
  else return false;
  if (!Number.isSafeInteger(ts) || ts < 0) return false;

  const nowSeconds = Math.floor(now.getTime() / 1000);
  if (!Number.isFinite(nowSeconds) || Math.abs(nowSeconds - ts) > toleranceSeconds) return false;

  const expected = Buffer.from(computeSignature(secret, ts, body), 'utf8');
  const entries = header.split(',', MAX_SIGNATURE_ENTRIES + 1);
  if (entries.length > MAX_SIGNATURE_ENTRIES) return false;

  let matched = false;
  for (const entry of entries) {
    const trimmed = entry.trim();
    const eq = trimmed.indexOf('=');
    if (eq === -1 || trimmed.slice(0, eq) !== SIGNATURE_VERSION) continue;
    const candidate = Buffer.from(trimmed.slice(eq + 1), 'utf8');
    // timingSafeEqual throws on unequal lengths; the length of a signature is not secret.
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  return matched;
}
