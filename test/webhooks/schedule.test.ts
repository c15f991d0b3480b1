import test from 'ava';
import fc from 'fast-check';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS, nextAttemptAt } from '../../src/webhooks/schedule.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = new Date('2026-09-01T00:00:00.000Z');

// docs/reference/contract.md §6.5: +1 min, +5 min, +25 min, +2 h, +6 h, +15 h between attempts 1..7.
const NOMINAL = [1 * MIN, 5 * MIN, 25 * MIN, 2 * HOUR, 6 * HOUR, 15 * HOUR];

test('seven attempts; nominal gaps as in docs/reference/contract.md §6.5', (t) => {
  t.is(MAX_ATTEMPTS, 7);
  t.deepEqual([...RETRY_DELAYS_MS], NOMINAL);
});

test('random 0.5 gives the nominal gap exactly', (t) => {
  for (let n = 1; n <= 6; n++) {
    t.is(nextAttemptAt(n, T0, () => 0.5)!.getTime() - T0.getTime(), NOMINAL[n - 1]);
  }
});

test('extremes of the random source give -20% and (almost) +20%', (t) => {
  for (let n = 1; n <= 6; n++) {
    t.is(nextAttemptAt(n, T0, () => 0)!.getTime() - T0.getTime(), Math.round(NOMINAL[n - 1] * 0.8));
    const high = nextAttemptAt(n, T0, () => 0.999999)!.getTime() - T0.getTime();
    t.true(high <= NOMINAL[n - 1] * 1.2 && high > NOMINAL[n - 1] * 1.19);
  }
});

test('property: each jittered gap stays within ±20% of its nominal value', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 6 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (n, r) => {
      const gap = nextAttemptAt(n, T0, () => r)!.getTime() - T0.getTime();
      return gap >= NOMINAL[n - 1] * 0.8 && gap <= NOMINAL[n - 1] * 1.2;
    }),
  );
  t.pass();
});

test('a misbehaving random source is clamped into the band', (t) => {
  t.is(nextAttemptAt(1, T0, () => 5)!.getTime() - T0.getTime(), Math.round(MIN * 1.2));
  t.is(nextAttemptAt(1, T0, () => -3)!.getTime() - T0.getTime(), Math.round(MIN * 0.8));
});

test('null after the seventh attempt', (t) => {
  t.is(nextAttemptAt(7, T0), null);
  t.is(nextAttemptAt(8, T0), null);
  t.not(nextAttemptAt(6, T0), null);
});

test('the whole schedule spans about 24 hours (19 h to 28.3 h with jitter)', (t) => {
  for (const r of [0, 0.5, 0.999999]) {
    let at = T0;
    let attempts = 1;
    for (let next = nextAttemptAt(attempts, at, () => r); next; next = nextAttemptAt(attempts, at, () => r)) {
      t.true(next.getTime() > at.getTime());
      at = next;
      attempts++;
    }
    t.is(attempts, 7);
    const span = at.getTime() - T0.getTime();
    t.true(span >= 23.5 * HOUR * 0.8 && span <= 23.52 * HOUR * 1.2, `${span / HOUR} h`);
  }
});

test('refuses attempt numbers that are not 1-based integers', (t) => {
  t.throws(() => nextAttemptAt(0, T0), { instanceOf: RangeError });
  t.throws(() => nextAttemptAt(1.5, T0), { instanceOf: RangeError });
});
