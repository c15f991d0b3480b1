// The labels a window's spend is read under (src/budgets/windows.ts periodLabelsOver): every
// analytics row of a request made within the period carries one of them, in whatever zone its
// organisation had when it was decided (its dayKey and monthKey are periodFor('DAY' | 'MONTH', requestedAt, zone)).
import test from 'ava';
import fc from 'fast-check';
import { periodLabelsOver } from '../../src/budgets/windows.ts';
import { periodFor } from '../../src/engine/periods.ts';

// The zones furthest from UTC either way, and some between (with half hours and summer time).
const ZONES = ['Etc/GMT+12', 'Pacific/Pago_Pago', 'America/Los_Angeles', 'America/St_Johns', 'UTC', 'Europe/Berlin', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Auckland', 'Pacific/Kiritimati'];

test('a request made within a period is labelled, in any zone, with one of the period\'s day and month labels', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }),
      fc.constantFrom('DAY' as const, 'MONTH' as const),
      fc.constantFrom(...ZONES),
      fc.constantFrom(...ZONES),
      fc.double({ min: 0, max: 1, noNaN: true }),
      (at, kind, periodZone, requestZone, where) => {
        const period = periodFor(kind, new Date(at).toISOString(), periodZone);
        const start = new Date(period.periodStart);
        const end = new Date(period.periodEnd);
        const requestedAt = new Date(start.getTime() + Math.floor(where * (end.getTime() - start.getTime() - 1)));
        const month = periodFor('MONTH', requestedAt.toISOString(), requestZone).periodKey;
        const day = periodFor('DAY', requestedAt.toISOString(), requestZone).periodKey;
        const months = periodLabelsOver('MONTH', start, end);
        const days = periodLabelsOver('DAY', start, end);
        return months.includes(month) && months.length <= 3 && days.includes(day) && (kind === 'MONTH' || days.length <= 4);
      },
    ),
  );
  // fc.assert throws, with the counterexample, when a request's label is missing.
  t.pass();
});

test('the labels of a day and of a month, at the turn of a year', (t) => {
  t.deepEqual(periodLabelsOver('MONTH', new Date('2026-06-15T00:00:00Z'), new Date('2026-06-16T00:00:00Z')), ['2026-06']);
  t.deepEqual(periodLabelsOver('MONTH', new Date('2026-12-31T10:00:00Z'), new Date('2027-01-01T10:00:00Z')), ['2026-12', '2027-01']);
  t.deepEqual(periodLabelsOver('MONTH', new Date('2026-03-01T00:00:00Z'), new Date('2026-04-01T00:00:00Z')), ['2026-02', '2026-03', '2026-04']);
  t.deepEqual(periodLabelsOver('DAY', new Date('2026-12-31T10:00:00Z'), new Date('2027-01-01T10:00:00Z')), ['2026-12-30', '2026-12-31', '2027-01-01']);
});
