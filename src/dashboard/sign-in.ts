// Signing a person in with the manifest's email and the password set through the operator API (the
// same scrypt hashes as OAuth consent). Failed attempts are counted per account (email) and per
// address (client IP) in 15-minute windows; past the limit, attempts are refused without checking the
// password until the window ends, so guessing is slow whichever of the two an attacker varies.
import type { AppDeps } from '../app-deps.ts';
import type { PersonDoc } from '../store/collections.ts';
import { burnPasswordCheck, verifyPassword } from '../oauth/password.ts';
import { dashboardCollections } from './documents.ts';

export const THROTTLE_WINDOW_MS = 15 * 60 * 1000;
export const MAX_FAILURES_PER_ACCOUNT = 5;
export const MAX_FAILURES_PER_ADDRESS = 20;

export type SignInResult = { ok: true; person: PersonDoc } | { ok: false; reason: 'mismatch' } | { ok: false; reason: 'throttled'; until: Date };

const keysOf = (email: string, address: string) => ({ account: `account:${email}`, address: `address:${address}` });

async function blockedUntil(deps: AppDeps, email: string, address: string, now: Date): Promise<Date | null> {
  const throttle = dashboardCollections(deps.store.db).throttle;
  const keys = keysOf(email, address);
  const docs = await throttle.find({ _id: { $in: [keys.account, keys.address] }, expiresAt: { $gt: now } }).toArray();
  const blocked = docs.filter((d) => d.failures >= (d._id === keys.account ? MAX_FAILURES_PER_ACCOUNT : MAX_FAILURES_PER_ADDRESS));
  if (blocked.length === 0) return null;
  return new Date(Math.max(...blocked.map((d) => d.expiresAt.getTime())));
}

async function countFailure(deps: AppDeps, id: string, now: Date): Promise<void> {
  const throttle = dashboardCollections(deps.store.db).throttle;
  const counted = await throttle.updateOne({ _id: id, expiresAt: { $gt: now } }, { $inc: { failures: 1 } });
  if (counted.matchedCount === 0) {
    // First failure of a window (or the previous window is over): start counting again.
    await throttle.replaceOne({ _id: id }, { failures: 1, firstAt: now, expiresAt: new Date(now.getTime() + THROTTLE_WINDOW_MS) }, { upsert: true });
  }
}

export async function signIn(deps: AppDeps, emailInput: string, password: string, address: string): Promise<SignInResult> {
  const email = emailInput.trim().toLowerCase();
  const now = deps.now();
  const until = await blockedUntil(deps, email, address, now);
  if (until) return { ok: false, reason: 'throttled', until };

  const candidates = email === '' ? [] : await deps.collections.people.find({ email }).toArray();
  let person: PersonDoc | null = null;
  for (const p of candidates) {
    if (p.passwordHash !== null && (await verifyPassword(password, p.passwordHash))) {
      person = p;
      break;
    }
  }
  // An unknown email costs the same time as a wrong password (no account enumeration by timing).
  if (!candidates.some((p) => p.passwordHash !== null)) await burnPasswordCheck(password);
  const keys = keysOf(email, address);
  if (!person) {
    await countFailure(deps, keys.account, now);
    await countFailure(deps, keys.address, now);
    return { ok: false, reason: 'mismatch' };
  }
  await dashboardCollections(deps.store.db).throttle.deleteOne({ _id: keys.account });
  return { ok: true, person };
}
