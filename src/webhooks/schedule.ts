// Retry schedule, docs/reference/contract.md §6.5: "Seven attempts over about 24 hours at offsets 0, +1 minute,
// +5 minutes, +25 minutes, +2 hours, +6 hours, +15 hours, each jittered by about plus or minus 20%."
//
// The offsets are read as gaps between consecutive attempts: summed they span 23 h 31 min, which
// is "about 24 hours"; read as offsets from the event the last attempt would come at 15 h. The
// first attempt (offset 0) is immediate and is not jittered.

export const MAX_ATTEMPTS = 7;
export const JITTER_FRACTION = 0.2;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** RETRY_DELAYS_MS[n - 1] is the nominal wait after attempt n (1-based) before attempt n + 1. */
export const RETRY_DELAYS_MS: readonly number[] = [1 * MINUTE, 5 * MINUTE, 25 * MINUTE, 2 * HOUR, 6 * HOUR, 15 * HOUR];

/**
 * When attempt `attemptNumberJustMade + 1` is due, or null when the attempt just made was the
 * seventh and last. `random` returns a number in [0, 1) (Math.random's contract); the delay is
 * nominal * (1 + 0.2 * (2 * random - 1)), so within [0.8, 1.2) of the nominal gap.
 */
export function nextAttemptAt(attemptNumberJustMade: number, lastAttemptAt: Date, random: () => number = Math.random): Date | null {
  if (!Number.isInteger(attemptNumberJustMade) || attemptNumberJustMade < 1) {
    throw new RangeError('attemptNumberJustMade is a 1-based attempt number');
  }
  if (attemptNumberJustMade >= MAX_ATTEMPTS) return null;
  return jittered(lastAttemptAt, RETRY_DELAYS_MS[attemptNumberJustMade - 1], random);
}

/**
 * While the service cannot sign (no usable WEBHOOK_ENCRYPTION_KEY), a delivery is tried again this
 * often, jittered likewise, without using up any of the destination's seven attempts
 * (docs/reference/decisions.md).
 */
export const SIGNING_RETRY_MS = 5 * MINUTE;

export const signingRetryAt = (triedAt: Date, random: () => number = Math.random): Date => jittered(triedAt, SIGNING_RETRY_MS, random);

function jittered(from: Date, nominal: number, random: () => number): Date {
  // Clamp so a faulty random source cannot push the jitter outside its band.
  const r = Math.min(Math.max(random(), 0), 1);
  return new Date(from.getTime() + Math.round(nominal * (1 + JITTER_FRACTION * (2 * r - 1))));
}
