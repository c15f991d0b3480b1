// People's passwords (issue 6: set through the operator API, hashed with scrypt). Stored as
// `scrypt$N$r$p$salt$hash` (base64url) so the cost can be raised later without breaking old hashes.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

// OWASP's scrypt floor (N=2^17, r=8, p=1) needs 128 MiB; maxmem is raised to allow it. N is PASSWORD_SCRYPT_N
// (src/config.ts): this floor or above, lower only where NODE_ENV names development or tests.
export const DEFAULT_SCRYPT_N = 2 ** 17;
const COST = { r: 8, p: 1 };
const KEY_LENGTH = 32;

function scrypt(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password.normalize('NFC'), salt, keyLength, { ...options, maxmem: 256 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string, N = DEFAULT_SCRYPT_N): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LENGTH, { N, ...COST });
  return ['scrypt', N, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Constant-time comparison of the derived key; a malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0) || N > 2 ** 20 || r > 32 || p > 16) return false;
  const salt = Buffer.from(parts[4], 'base64url');
  const expected = Buffer.from(parts[5], 'base64url');
  if (expected.length < 16) return false;
  const actual = await scrypt(password, salt, expected.length, { N, r, p });
  return timingSafeEqual(actual, expected);
}

// A fixed hash verified when no person matches the email, so that an unknown email costs the same
// time as a wrong password (no account enumeration by timing).
// Made at the cost new passwords are hashed at (N).
const decoys = new Map<number, Promise<string>>();
export async function burnPasswordCheck(password: string, N = DEFAULT_SCRYPT_N): Promise<void> {
  if (!decoys.has(N)) decoys.set(N, hashPassword('decoy password that matches nothing', N));
  await verifyPassword(password, await decoys.get(N)!);
}
