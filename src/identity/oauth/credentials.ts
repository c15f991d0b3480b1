// OAuth credentials (docs/reference/contract.md §2.1, §5.2): a permanent namespace prefix, then 32 random bytes in
// base64url. Only the SHA-256 digest is stored and looked up, so a leaked database reveals no
// usable token.
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../digest.ts';

export const ACCESS_TOKEN_PREFIX = 'cmp_oat_';
export const REFRESH_TOKEN_PREFIX = 'cmp_ort_';
export const CODE_PREFIX = 'cmp_oac_';

export type CredentialPrefix = typeof ACCESS_TOKEN_PREFIX | typeof REFRESH_TOKEN_PREFIX | typeof CODE_PREFIX;

/** docs/reference/contract.md §5.2 and §8. */
export const ACCESS_TOKEN_TTL_MS = 60 * 60 * 1000;
export const REFRESH_TOKEN_TTL_MS = 90 * 24 * 60 * 60 * 1000;
/** RFC 6749 4.1.2 recommends at most 10 minutes; a redirect and one token request need seconds. */
export const CODE_TTL_MS = 60 * 1000;

const SHAPE = /^cmp_(oat|ort|oac)_[A-Za-z0-9_-]{43}$/;

export function newCredential(prefix: CredentialPrefix): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** The stored form and lookup key of a credential (hex SHA-256). */
export function credentialDigest(credential: string): string {
  return sha256Hex(credential);
}

/** True when the string has the shape of a credential of that kind (cheap pre-check before a lookup). */
export function hasShape(credential: string, prefix: CredentialPrefix): boolean {
  return credential.startsWith(prefix) && SHAPE.test(credential);
}
