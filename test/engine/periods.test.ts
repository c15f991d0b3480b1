import test from 'ava';
import fc from 'fast-check';
import { DateTime, Settings } from 'luxon';
import { periodFor, periodOfDate, windowId, windowKeysFor } from '../../src/engine/periods.ts';
import { AGENT, dailyBudget, input, maxPerPurchase, monthlyBudget, policy } from './fixtures.ts';

const hours = (period: { periodStart: string; periodEnd: string }): number =>
  (Date.parse(period.periodEnd) - Date.parse(period.periodStart)) / 3_600_000;

const dayCases: Array<[string, string, string, string, string, number]> = [
  // [instant, zone, key, start, end, hours]
  ['2026-11-21T10:00:00.000Z', 'Europe/Berlin', '2026-11-21', '2026-11-20T23:00:00.000Z', '2026-11-21T23:00:00.000Z', 24],
  // Last Sunday of March: 02:00 CET becomes 03:00 CEST.
  ['2026-03-29T12:00:00.000Z', 'Europe/Berlin', '2026-03-29', '2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z', 23],
  ['2026-03-29T00:59:59.999Z', 'Europe/Berlin', '2026-03-29', '2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z', 23],
  // Last Sunday of October: 03:00 CEST becomes 02:00 CET.
  ['2026-10-25T12:00:00.000Z', 'Europe/Berlin', '2026-10-25', '2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z', 25],
  ['2026-10-25T22:59:59.999Z', 'Europe/Berlin', '2026-10-25', '2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z', 25],
  ['2026-10-25T23:00:00.000Z', 'Europe/Berlin', '2026-10-26', '2026-10-25T23:00:00.000Z', '2026-10-26T23:00:00.000Z', 24],
  // America/New_York: second Sunday of March and first Sunday of November.
  ['2026-03-08T12:00:00.000Z', 'America/New_York', '2026-03-08', '2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z', 23],
  ['2026-11-01T12:00:00.000Z', 'America/New_York', '2026-11-01', '2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z', 25],
  ['2026-11-02T04:59:59.999Z', 'America/New_York', '2026-11-01', '2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z', 25],
  // Santiago's clocks jumped from 00:00 to 01:00: the day starts at 01:00 and ends at the next midnight.
  ['2022-09-11T12:00:00.000Z', 'America/Santiago', '2022-09-11', '2022-09-11T04:00:00.000Z', '2022-09-12T03:00:00.000Z', 23],
  ['2026-11-21T10:00:00.000Z', 'UTC', '2026-11-21', '2026-11-21T00:00:00.000Z', '2026-11-22T00:00:00.000Z', 24],
  // Havana puts its clocks back from 01:00 to 00:00: 1 November starts at the first midnight, also for
  // an instant after the second one, and 31 October ends there.
  ['2026-11-01T05:30:00.000Z', 'America/Havana', '2026-11-01', '2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z', 25],
  ['2026-10-31T12:00:00.000Z', 'America/Havana', '2026-10-31', '2026-10-31T04:00:00.000Z', '2026-11-01T04:00:00.000Z', 24],
  // Lord Howe Island moves its clocks by half an hour.
  ['2026-10-04T12:00:00.000Z', 'Australia/Lord_Howe', '2026-10-04', '2026-10-03T13:30:00.000Z', '2026-10-04T13:00:00.000Z', 23.5],
  // An instant written with an offset is the same instant.
  ['2026-11-21T23:30:00.000+01:00', 'Europe/Berlin', '2026-11-21', '2026-11-20T23:00:00.000Z', '2026-11-21T23:00:00.000Z', 24],
];

for (const [instant, zone, key, start, end, length] of dayCases) {
  test(`DAY period of ${instant} in ${zone}`, (t) => {
    const period = periodFor('DAY', instant, zone);
    t.deepEqual(period, { periodKey: key, periodStart: start, periodEnd: end });
    t.is(hours(period), length);
  });
}

const monthCases: Array<[string, string, string, string, string]> = [
  ['2026-11-21T10:00:00.000Z', 'Europe/Berlin', '2026-11', '2026-10-31T23:00:00.000Z', '2026-11-30T23:00:00.000Z'],
  // The month holding the spring change is an hour short.
  ['2026-03-15T10:00:00.000Z', 'Europe/Berlin', '2026-03', '2026-02-28T23:00:00.000Z', '2026-03-31T22:00:00.000Z'],
  ['2028-02-29T22:59:59.999Z', 'Europe/Berlin', '2028-02', '2028-01-31T23:00:00.000Z', '2028-02-29T23:00:00.000Z'],
  ['2028-02-29T23:00:00.000Z', 'Europe/Berlin', '2028-03', '2028-02-29T23:00:00.000Z', '2028-03-31T22:00:00.000Z'],
  ['2026-12-31T22:59:59.999Z', 'Europe/Berlin', '2026-12', '2026-11-30T23:00:00.000Z', '2026-12-31T23:00:00.000Z'],
  ['2026-12-31T23:00:00.000Z', 'Europe/Berlin', '2027-01', '2026-12-31T23:00:00.000Z', '2027-01-31T23:00:00.000Z'],
  // 23:30 on 30 November in New York is already December in UTC.
  ['2026-12-01T04:30:00.000Z', 'America/New_York', '2026-11', '2026-11-01T04:00:00.000Z', '2026-12-01T05:00:00.000Z'],
  ['2026-04-30T12:00:00.000Z', 'UTC', '2026-04', '2026-04-01T00:00:00.000Z', '2026-05-01T00:00:00.000Z'],
];

for (const [instant, zone, key, start, end] of monthCases) {
  test(`MONTH period of ${instant} in ${zone}`, (t) => {
    t.deepEqual(periodFor('MONTH', instant, zone), { periodKey: key, periodStart: start, periodEnd: end });
  });
}

test('periodFor refuses an unknown zone and a malformed instant', (t) => {
  t.throws(() => periodFor('DAY', '2026-11-21T10:00:00.000Z', 'Mars/Olympus_Mons'), { instanceOf: RangeError });
  t.throws(() => periodFor('DAY', 'yesterday', 'UTC'), { instanceOf: RangeError });
});

const ZONES = ['Europe/Berlin', 'America/New_York', 'America/Santiago', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Asia/Kathmandu', 'Pacific/Chatham', 'UTC'];

test('property: the period contains the instant, and its key is the local date (cache agrees with Luxon)', (t) => {
  fc.assert(
    fc.property(
      fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-12-31T00:00:00Z'), noInvalidDate: true }),
      fc.constantFrom(...ZONES),
      fc.constantFrom('DAY' as const, 'MONTH' as const),
      (date, zone, kind) => {
        const instant = date.toISOString();
        const period = periodFor(kind, instant, zone);
        const local = DateTime.fromJSDate(date, { zone });
        const ms = date.getTime();
        return (
          Date.parse(period.periodStart) <= ms &&
          ms < Date.parse(period.periodEnd) &&
          period.periodKey === local.toFormat(kind === 'DAY' ? 'yyyy-MM-dd' : 'yyyy-MM') &&
          // The next period starts where this one ends.
          periodFor(kind, new Date(Date.parse(period.periodEnd)).toISOString(), zone).periodStart === period.periodEnd &&
          periodFor(kind, new Date(Date.parse(period.periodStart) - 1).toISOString(), zone).periodEnd === period.periodStart
        );
      },
    ),
    { numRuns: 400 },
  );
  t.pass();
});

test('windowId belongs to the policy, not the version', (t) => {
  t.is(windowId({ policyId: 'p', currency: 'EUR', periodKind: 'DAY', periodKey: '2026-11-21' }), 'p:EUR:DAY:2026-11-21');
});

test('windowKeysFor: one key per policy, currency and period; only covering, applicable policies', (t) => {
  const keys = windowKeysFor(
    input({
      policies: [
        policy({ id: 'a', rules: [dailyBudget(10n), dailyBudget(20n, 'REQUIRE_APPROVAL'), monthlyBudget(30n), maxPerPurchase(5n)] }),
        policy({ id: 'b', currencies: ['EUR', 'USD'], rules: [dailyBudget(10n, 'BLOCK', { currency: 'USD' }), monthlyBudget(10n, 'BLOCK', { currency: 'EUR' })] }),
        policy({ id: 'c', currencies: ['USD'], rules: [dailyBudget(10n)] }),
        policy({ id: 'd', status: 'DISABLED', rules: [dailyBudget(10n)] }),
        policy({ id: 'e', scopeType: 'AGENT', agentIds: ['someone-else'], rules: [dailyBudget(10n)] }),
      ],
    }),
  );
  t.deepEqual(keys.map(windowId), ['a:EUR:DAY:2026-11-21', 'a:EUR:MONTH:2026-11', 'b:EUR:MONTH:2026-11']);
  t.deepEqual(keys[0], {
    policyId: 'a',
    policyVersionId: 'a-v1',
    currency: 'EUR',
    periodKind: 'DAY',
    periodKey: '2026-11-21',
    periodStart: '2026-11-20T23:00:00.000Z',
    periodEnd: '2026-11-21T23:00:00.000Z',
  });
});

test('windowKeysFor: none for a disabled agent; periodInstant chooses the period', (t) => {
  const policies = [policy({ id: 'a', rules: [dailyBudget(10n)] })];
  t.deepEqual(windowKeysFor(input({ policies, agent: { ...AGENT, status: 'DISABLED' } })), []);
  const keys = windowKeysFor(input({ policies, now: '2026-11-22T08:00:00.000Z', periodInstant: '2026-11-21T22:00:00.000Z' }));
  t.deepEqual(keys.map(windowId), ['a:EUR:DAY:2026-11-21']);
});

test('windowKeysFor in a version mode ignores status and scope', (t) => {
  const keys = windowKeysFor(
    input({ mode: 'DRAFT_POLICY', policies: [policy({ id: 'a', status: 'DISABLED', versionStatus: 'DRAFT', scopeType: 'AGENT', rules: [monthlyBudget(10n)] })] }),
  );
  t.deepEqual(keys.map(windowId), ['a:EUR:MONTH:2026-11']);
});

/** The instants a zone's offset changes at between from and to (a scan by the hour, then to the millisecond). */
function clockChanges(zone: string, from: string, to: string): number[] {
  const offset = (ms: number) => DateTime.fromMillis(ms, { zone }).offset;
  const changes: number[] = [];
  for (let ms = Date.parse(from); ms < Date.parse(to); ms += 3_600_000) {
    if (offset(ms) === offset(ms + 3_600_000)) continue;
    let [lo, hi] = [ms, ms + 3_600_000];
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offset(mid) === offset(lo)) lo = mid;
      else hi = mid;
    }
    changes.push(hi);
  }
  return changes;
}

// Zones whose clocks change at or next to midnight (Havana, Nuuk and the Azores put them back to midnight, so that
// it comes twice), by half an hour (Lord Howe), at +12:45 (Chatham), or across midnight (Santiago).
const CHANGING = ['America/New_York', 'America/Havana', 'America/Nuuk', 'Atlantic/Azores', 'America/Santiago', 'Australia/Lord_Howe', 'Pacific/Chatham', 'Asia/Gaza', 'Europe/Berlin'];
const changes = CHANGING.flatMap((zone) => clockChanges(zone, '2026-01-01T00:00:00.000Z', '2029-01-01T00:00:00.000Z').map((at) => [zone, at] as const));

test('property: near every clock change, periods tile time: each starts at the first instant of its local date or month and ends where the next starts', (t) => {
  t.true(changes.length > 40);
  const label = (kind: 'DAY' | 'MONTH', ms: number, zone: string) => DateTime.fromMillis(ms, { zone }).toFormat(kind === 'DAY' ? 'yyyy-MM-dd' : 'yyyy-MM');
  fc.assert(
    fc.property(
      fc.constantFrom(...changes),
      fc.oneof(fc.constantFrom(-1, 0, 1, -3_600_000, 3_600_000), fc.integer({ min: -2 * 86_400_000, max: 2 * 86_400_000 })),
      fc.constantFrom('DAY' as const, 'MONTH' as const),
      ([zone, change], delta, kind) => {
        const ms = change + delta;
        const period = periodFor(kind, new Date(ms).toISOString(), zone);
        const [start, end] = [Date.parse(period.periodStart), Date.parse(period.periodEnd)];
        const next = periodFor(kind, period.periodEnd, zone);
        const previous = periodFor(kind, new Date(start - 1).toISOString(), zone);
        t.true(start <= ms && ms < end, `${zone} ${kind} ${new Date(ms).toISOString()}`);
        t.is(period.periodKey, label(kind, ms, zone));
        t.is(label(kind, start, zone), period.periodKey, 'the start is in the period');
        t.not(label(kind, start - 1, zone), period.periodKey, 'the instant before the start is not');
        t.is(next.periodStart, period.periodEnd);
        t.not(next.periodKey, period.periodKey);
        t.is(previous.periodEnd, period.periodStart);
      },
    ),
    { numRuns: 3000 },
  );
});

test.serial('periodOfDate: a local date\'s day, the same in every season, where midnight comes twice', (t) => {
  const luxonNow = Settings.now;
  t.teardown(() => (Settings.now = luxonNow));
  for (const asked of ['2026-07-01T12:00:00.000Z', '2026-12-15T12:00:00.000Z']) {
    Settings.now = () => Date.parse(asked);
    t.deepEqual(periodOfDate('2026-11-01', 'America/Havana'), { periodKey: '2026-11-01', periodStart: '2026-11-01T04:00:00.000Z', periodEnd: '2026-11-02T05:00:00.000Z' }, asked);
    t.deepEqual(periodOfDate('2026-10-31', 'America/Havana'), { periodKey: '2026-10-31', periodStart: '2026-10-31T04:00:00.000Z', periodEnd: '2026-11-01T04:00:00.000Z' }, asked);
  }
  t.is(periodOfDate('2028-02-29', 'Europe/Berlin').periodStart, '2028-02-28T23:00:00.000Z');
  t.throws(() => periodOfDate('2027-02-29', 'Europe/Berlin'), { instanceOf: RangeError });
});
