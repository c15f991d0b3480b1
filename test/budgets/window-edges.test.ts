// Budget windows at the edges of the organisation's days and months, through the real HTTP surface
// (docs/reference/contract.md §2.6; docs/internals/design.md §4 item 6): DST days of 23 and 25 hours,
// zones with 45-minute offsets, month ends and leap Februaries, a purchase at local midnight exactly.
import test from 'ava';
import fc from 'fast-check';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, onePolicyManifest } from '../helpers/fixtures.ts';
import { periodOf } from '../helpers/windows.ts';

let app: TestApp;
let clock = new Date('2026-03-08T12:00:00.000Z');

test.before(async () => {
  app = await startApp({ now: () => clock });
});
test.after.always(() => app?.close());

const DAY_AND_MONTH = [
  { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '1000000' },
  { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '10000000' },
];
const manifest = (handle: string, timezone: string) => onePolicyManifest(handle, { timezone, currency: 'EUR', rules: DAY_AND_MONTH });

function buyAt(org: { keys: Record<string, string> }, at: string, amountMinor: number) {
  clock = new Date(at);
  return app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor, reason: 'Supplies' } });
}

const windows = (policyId: string) =>
  app.store.db.collection('budget_windows').find({ policyId }).sort({ periodKind: 1, periodKey: 1 }).toArray();

const shape = (w: any) => [w.periodKind, w.periodKey, w.periodStart.toISOString(), w.periodEnd.toISOString(), String(w.committedMinor)];

const cases: Array<{ zone: string; title: string; before: string; at: string; day: [string, string, string]; prevDay: string }> = [
  { zone: 'America/New_York', title: 'spring forward: a 23-hour day', before: '2026-03-08T04:59:59.999Z', at: '2026-03-08T05:00:00.000Z', day: ['2026-03-08', '2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z'], prevDay: '2026-03-07' },
  { zone: 'America/New_York', title: 'fall back: a 25-hour day', before: '2026-11-01T03:59:59.999Z', at: '2026-11-01T04:00:00.000Z', day: ['2026-11-01', '2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z'], prevDay: '2026-10-31' },
  { zone: 'Europe/Berlin', title: 'spring forward in Berlin', before: '2026-03-28T22:59:59.999Z', at: '2026-03-28T23:00:00.000Z', day: ['2026-03-29', '2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z'], prevDay: '2026-03-28' },
  { zone: 'Europe/Berlin', title: 'fall back in Berlin', before: '2026-10-24T21:59:59.999Z', at: '2026-10-24T22:00:00.000Z', day: ['2026-10-25', '2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z'], prevDay: '2026-10-24' },
  { zone: 'Asia/Kathmandu', title: 'a +05:45 zone', before: '2026-06-14T18:14:59.999Z', at: '2026-06-14T18:15:00.000Z', day: ['2026-06-15', '2026-06-14T18:15:00.000Z', '2026-06-15T18:15:00.000Z'], prevDay: '2026-06-14' },
  { zone: 'Australia/Eucla', title: 'a +08:45 zone', before: '2026-06-14T15:14:59.999Z', at: '2026-06-14T15:15:00.000Z', day: ['2026-06-15', '2026-06-14T15:15:00.000Z', '2026-06-15T15:15:00.000Z'], prevDay: '2026-06-14' },
  { zone: 'America/St_Johns', title: 'a -03:30 zone', before: '2026-06-15T02:29:59.999Z', at: '2026-06-15T02:30:00.000Z', day: ['2026-06-15', '2026-06-15T02:30:00.000Z', '2026-06-16T02:30:00.000Z'], prevDay: '2026-06-14' },
];

for (const [i, c] of cases.entries()) {
  test.serial(`local midnight splits the days: ${c.zone}, ${c.title}`, async (t) => {
    const org = await applyManifest(app, manifest(`edge-${i}`, c.zone));
    t.is((await buyAt(org, c.before, 100)).body.decision.outcome, 'APPROVED');
    t.is((await buyAt(org, c.at, 200)).body.decision.outcome, 'APPROVED');
    const days = (await windows(org.policies.budget.id)).filter((w) => w.periodKind === 'DAY');
    t.deepEqual(days.map((w) => w.periodKey), [c.prevDay, c.day[0]]);
    t.deepEqual(shape(days[1]), ['DAY', ...c.day, '200']);
    t.is(days[0].periodEnd.toISOString(), c.day[1], 'the day before ends where this one starts');
  });
}

test.serial('month ends: the 31st to the 1st, and a leap February', async (t) => {
  const org = await applyManifest(app, manifest('edge-month', 'Europe/Berlin'));
  await buyAt(org, '2028-01-31T22:59:59.999Z', 1); // 23:59:59.999 on 31 January in Berlin
  await buyAt(org, '2028-01-31T23:00:00.000Z', 2); // 00:00 on 1 February
  await buyAt(org, '2028-02-29T22:59:59.999Z', 4); // the 29th of a leap February
  await buyAt(org, '2028-02-29T23:00:00.000Z', 8); // 00:00 on 1 March
  const months = (await windows(org.policies.budget.id)).filter((w) => w.periodKind === 'MONTH');
  t.deepEqual(months.map(shape), [
    ['MONTH', '2028-01', '2027-12-31T23:00:00.000Z', '2028-01-31T23:00:00.000Z', '1'],
    ['MONTH', '2028-02', '2028-01-31T23:00:00.000Z', '2028-02-29T23:00:00.000Z', '6'],
    ['MONTH', '2028-03', '2028-02-29T23:00:00.000Z', '2028-03-31T22:00:00.000Z', '8'],
  ]);
  const days = (await windows(org.policies.budget.id)).filter((w) => w.periodKind === 'DAY');
  t.deepEqual(days.map((w) => w.periodKey), ['2028-01-31', '2028-02-01', '2028-02-29', '2028-03-01']);
});

// Havana puts its clocks back from 01:00 to 00:00 on the first Sunday of November: midnight, and with
// it 1 November and the month, starts twice. The day and the month start at the first midnight
// (04:00 UTC); the hour after it is theirs, not 31 October's, whatever the service resolved before.
test.serial('where midnight comes twice (Havana, 1 November 2026), the day and the month start at the first', async (t) => {
  const org = await applyManifest(app, onePolicyManifest('edge-havana', {
    timezone: 'America/Havana',
    currency: 'EUR',
    rules: [
      { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '1000' },
      { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '100000' },
    ],
  }));
  t.is((await buyAt(org, '2026-10-31T12:00:00.000Z', 800)).body.decision.outcome, 'APPROVED'); // 08:00 on 31 October
  t.is((await buyAt(org, '2026-11-01T04:30:00.000Z', 800)).body.decision.outcome, 'APPROVED', '00:30 CDT is 1 November: a new day');
  t.is((await buyAt(org, '2026-11-01T05:30:00.000Z', 300)).body.decision.outcome, 'REJECTED', '00:30 CST is the same 1 November: 800 + 300 is over 1,000');
  t.is((await buyAt(org, '2026-11-01T06:30:00.000Z', 200)).body.decision.outcome, 'APPROVED');
  t.deepEqual((await windows(org.policies.budget.id)).map(shape), [
    ['DAY', '2026-10-31', '2026-10-31T04:00:00.000Z', '2026-11-01T04:00:00.000Z', '800'],
    ['DAY', '2026-11-01', '2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z', '1000'],
    ['MONTH', '2026-10', '2026-10-01T04:00:00.000Z', '2026-11-01T04:00:00.000Z', '800'],
    ['MONTH', '2026-11', '2026-11-01T04:00:00.000Z', '2026-12-01T05:00:00.000Z', '1000'],
  ]);
});

/** manifest() with an approval threshold of 20,000: larger purchases wait for a person. */
function withApprovals(handle: string, timezone: string) {
  return onePolicyManifest(handle, { timezone, currency: 'EUR', rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '20000' }, ...DAY_AND_MONTH] });
}

test.serial('a purchase held before the organisation changes zone is spent once, in the day of its request in the new zone', async (t) => {
  const zoned = (timezone: string) => withApprovals('edge-zone', timezone);
  const org = await applyManifest(app, zoned('Europe/Berlin'));
  // 02:00 UTC on 15 June: Berlin's 15th, New York's 14th.
  const held = await buyAt(org, '2026-06-15T02:00:00.000Z', 30_000);
  t.is(held.body.decision.outcome, 'REQUIRES_APPROVAL');
  await applyManifest(app, zoned('America/New_York'));
  // New York's 15th: its window (the same id as Berlin's 15th) moves to New York's hours.
  t.is((await buyAt(org, '2026-06-15T10:00:00.000Z', 100)).body.decision.outcome, 'APPROVED');
  clock = new Date('2026-06-15T11:00:00.000Z');
  const answered = await app.admin(`/admin/purchase-requests/${held.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(answered.status, 200, answered.text);
  const days = (await windows(org.policies.budget.id)).filter((w) => w.periodKind === 'DAY');
  const counted = (key: string) => { const w = days.find((d) => d.periodKey === key); return w ? Number(w.openingBalanceMinor) + Number(w.committedMinor) + Number(w.heldMinor) : 0; };
  t.is(counted('2026-06-14') + counted('2026-06-15'), 30_100, 'the 30,000 counts once over both days');
  t.is(counted('2026-06-15'), 100);
});

const ZONES = ['Europe/Berlin', 'America/New_York', 'Asia/Kathmandu', 'Pacific/Kiritimati', 'Pacific/Honolulu', 'America/St_Johns'];

test.serial('property: a purchase held, the zone changed, then approved commits into one day and one month: its request\'s in the new zone', async (t) => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ZONES), fc.constantFrom(...ZONES), fc.integer({ min: 0, max: 3 * 24 * 60 - 1 }), async (from, to, minutes) => {
      const handle = `edge-zone-prop-${run++}`;
      const org = await applyManifest(app, withApprovals(handle, from));
      // Around the end of June: the days and the month change at different instants in each zone.
      const at = new Date(Date.parse('2026-06-29T00:00:00.000Z') + minutes * 60_000).toISOString();
      const held = await buyAt(org, at, 30_000);
      if (held.body.decision?.outcome !== 'REQUIRES_APPROVAL') return false;
      await applyManifest(app, withApprovals(handle, to));
      clock = new Date(Date.parse(at) + 60_000);
      const answered = await app.admin(`/admin/purchase-requests/${held.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
      if (answered.body.purchase?.decision?.outcome !== 'APPROVED') return false;
      const policyId = org.policies.budget.id;
      const row = await app.store.db.collection('analytics_purchases').findOne({ _id: held.body.purchaseRequest.id as never });
      const expected = [`${policyId}:EUR:DAY:${periodOf('DAY', at, to)}`, `${policyId}:EUR:MONTH:${periodOf('MONTH', at, to)}`];
      const stored = await windows(policyId);
      const total = (kind: string, field: string) => stored.filter((w) => w.periodKind === kind).reduce((sum, w) => sum + Number(w[field]), 0);
      const purchase = await app.store.db.collection('purchases').findOne({ _id: held.body.purchaseRequest.id as never });
      t.deepEqual([...row!.committedWindowIds].sort(), expected.sort(), `${from} -> ${to} at ${at}`);
      t.deepEqual([...purchase!.windowIds].sort(), expected.sort(), 'the purchase names the windows it is spent in');
      t.deepEqual([total('DAY', 'committedMinor'), total('MONTH', 'committedMinor'), total('DAY', 'heldMinor'), total('MONTH', 'heldMinor')], [30_000, 30_000, 0, 0], `${from} -> ${to} at ${at}`);
      return true;
    }),
    { numRuns: 15 },
  );
});
