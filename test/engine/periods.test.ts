import test from 'ava';
import fc from 'fast-check';
import { DateTime } from 'luxon';
import { periodFor, windowId, windowKeysFor } from '../../src/engine/periods.ts';
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
