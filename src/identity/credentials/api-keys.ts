// API keys (docs/reference/contract.md §5.1): `cmp_live_<publicId>_<secret>`. The public half (`cmp_live_<publicId>`) is the
// display prefix and the lookup key; only a SHA-256 digest of the whole key is stored, and it is
// compared in constant time. Keys carry 256 bits of entropy, so a fast hash is the right tool here
// (a slow password hash would only add latency to every request).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../../digest.ts';

export const LIVE_PREFIX = 'cmp_live_';
const PUBLIC_ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const KEY_SHAPE = /^cmp_live_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/;
/** Other environments' keys look like `cmp_test_...`: recognisably ours, but not for this deployment. */
const OTHER_ENVIRONMENT = /^cmp_(test|sandbox|dev|staging)_/;

export interface IssuedKey {
  key: string;
  prefix: string;
  hash: string;
}

function publicId(): string {
  const bytes = randomBytes(12);
  let out = '';
  for (const b of bytes) out += PUBLIC_ID_ALPHABET[b % PUBLIC_ID_ALPHABET.length];
  return out;
}

export const hashKey = sha256Hex;

export function issueApiKey(): IssuedKey {
  const key = `${LIVE_PREFIX}${publicId()}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix: key.slice(0, LIVE_PREFIX.length + 12), hash: hashKey(key) };
}

export type KeyShape = { kind: 'live'; prefix: string } | { kind: 'other-environment' } | { kind: 'unrecognised' };

export function classifyKey(presented: string): KeyShape {
  const match = KEY_SHAPE.exec(presented);
  if (match) return { kind: 'live', prefix: `${LIVE_PREFIX}${match[1]}` };
  if (OTHER_ENVIRONMENT.test(presented)) return { kind: 'other-environment' };
  return { kind: 'unrecognised' };
}

export function hashesMatch(presented: string, storedHash: string): boolean {
  const a = Buffer.from(hashKey(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
