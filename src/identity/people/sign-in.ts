// Checking a person's email and password (the manifest's email, the scrypt hash set through the
// operator API) for both pages that ask for them: the dashboard's sign-in and the OAuth sign-in of an
// authorization request. Both go through one throttle, so a guess counts the same wherever it is sent:
// failed attempts are counted per account (email) and per address (client IP, an IPv6 one by its /64) in 15-minute windows
// (a window starts at the first attempt counted in it); past the limit, attempts are refused without
// checking the password until the window ends, so guessing is slow whichever of the two an attacker
// varies, and whichever page.
//
// An attempt is counted before its password is checked, by one atomic increment per counter that
// returns the new count, and it is refused when that count is over the limit. Guesses sent at the same
// time therefore cannot all pass on a count read before any of them was recorded: however many arrive
// together, at most MAX_FAILURES_PER_ACCOUNT of them are checked per account and window. A counter thus
// holds the failures plus the attempts being checked; an attempt that turns out not to be a failure
// takes its own count back (a refused one, which was not checked, and a right password). A right
// password also clears the account's earlier failures, but only if nothing was counted since its own
// attempt: a failure counted meanwhile is never erased.
//
// The counters live in `dashboard_sign_in_throttle` (src/identity/sessions/documents.ts; a TTL index removes
// them once over, and reads check `expiresAt` too); `failures` holds the count described above.
import type { AppDeps } from '../../app-deps.ts';
import { dashboardCollections, type SignInThrottleDoc } from '../sessions/documents.ts';
import { burnPasswordCheck, verifyPassword } from './password.ts';
import type { PersonDoc } from '../../store/collections.ts';
import { isDuplicateKeyError, type StoreCollection } from '../../store/store.ts';
import { addressBucket } from '../../http/client-address.ts';

export const THROTTLE_WINDOW_MS = 15 * 60 * 1000;
export const MAX_FAILURES_PER_ACCOUNT = 5;
export const MAX_FAILURES_PER_ADDRESS = 20;

export type SignInResult = { ok: true; person: PersonDoc } | { ok: false; reason: 'mismatch' } | { ok: false; reason: 'throttled'; until: Date };

type Throttle = StoreCollection<SignInThrottleDoc>;

const keysOf = (email: string, address: string) => ({ account: `account:${email}`, address: `address:${addressBucket(address)}` });

/** Counts one attempt in the counter's current window (starting one if there is none); returns that window, this attempt included. */
async function countAttempt(throttle: Throttle, id: string, now: Date): Promise<SignInThrottleDoc> {
  const expiresAt = new Date(now.getTime() + THROTTLE_WINDOW_MS);
  for (let turn = 0; turn < 3; turn++) {
    try {
      const counted = await throttle.findOneAndUpdate(
        { _id: id },
        { $inc: { failures: 1 }, $setOnInsert: { firstAt: now, expiresAt } },
        { upsert: true, returnDocument: 'after' },
      );
      if (counted && counted.expiresAt.getTime() > now.getTime()) return counted;
      // That window is over (a TTL index removes documents only eventually): start the next one. Of
      // attempts doing so at once, only one matches; the others count in its window on the next turn.
      const restarted = await throttle.findOneAndUpdate(
        { _id: id, expiresAt: { $lte: now } },
        { $set: { failures: 1, firstAt: now, expiresAt } },
        { returnDocument: 'after' },
      );
      if (restarted) return restarted;
    } catch (error) {
      // Two first attempts upserting at once: MongoDB retries the loser itself, but may still report it.
      if (!isDuplicateKeyError(error)) throw error;
    }
  }
  throw new Error(`sign-in throttle: could not count an attempt on ${id}`);
}

/**
 * Takes one attempt back from the window it was counted in (never from a later window). A window left
 * with no attempt is removed, so that the next one starts at the next failure.
 */
async function uncountAttempt(throttle: Throttle, id: string, window: SignInThrottleDoc): Promise<void> {
  const emptied = await throttle.deleteOne({ _id: id, firstAt: window.firstAt, failures: 1 });
  if (emptied.deletedCount === 0) await throttle.updateOne({ _id: id, firstAt: window.firstAt, failures: { $gt: 0 } }, { $inc: { failures: -1 } });
}

export async function signIn(deps: AppDeps, emailInput: string, password: string, address: string): Promise<SignInResult> {
  const email = emailInput.trim().toLowerCase();
  const now = deps.now();
  const throttle = dashboardCollections(deps.store.db).throttle;
  const keys = keysOf(email, address);
  const [account, from] = await Promise.all([countAttempt(throttle, keys.account, now), countAttempt(throttle, keys.address, now)]);
  const over = [account.failures > MAX_FAILURES_PER_ACCOUNT && account, from.failures > MAX_FAILURES_PER_ADDRESS && from].filter((w) => w !== false);
  if (over.length > 0) {
    // Refused unchecked, so not a failure: a locked account does not also use up its address's attempts.
    await Promise.all([uncountAttempt(throttle, keys.account, account), uncountAttempt(throttle, keys.address, from)]);
    return { ok: false, reason: 'throttled', until: new Date(Math.max(...over.map((w) => w.expiresAt.getTime()))) };
  }

  const candidates = email === '' ? [] : await deps.collections.people.find({ email }).toArray();
  let person: PersonDoc | null = null;
  for (const p of candidates) {
    if (p.passwordHash !== null && (await verifyPassword(password, p.passwordHash))) {
      person = p;
      break;
    }
  }
  // An unknown email costs the same time as a wrong password (no account enumeration by timing).
  if (!candidates.some((p) => p.passwordHash !== null)) await burnPasswordCheck(password, deps.config.passwordScryptN);
  // A failure stays counted on both counters: it was counted before the check.
  if (!person) return { ok: false, reason: 'mismatch' };

  // Not a failure: the address gets its attempt back. The account's failures so far are cleared if
  // its count is still the one this attempt made (nothing counted since); otherwise only this attempt
  // is taken back, so that failures counted meanwhile stay.
  await uncountAttempt(throttle, keys.address, from);
  const cleared = await throttle.deleteOne({ _id: keys.account, firstAt: account.firstAt, failures: account.failures });
  if (cleared.deletedCount === 0) await uncountAttempt(throttle, keys.account, account);
  return { ok: true, person };
}
