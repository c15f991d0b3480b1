// One read of a period for every policy's recorded spend (attributableSpendByPolicy, what a replay or a
// shadow seeds its windows from) says what a read per policy (attributableSpend) says, policy by policy.
import test from 'ava';
import fc from 'fast-check';
import { attributableSpend, attributableSpendByPolicy } from '../../src/budgets/windows.ts';
import { createIndexes } from '../../src/compose.ts';
import { periodFor } from '../../src/engine/periods.ts';
import { testStore } from '../helpers/store.ts';

const POLICIES = ['p1', 'p2', 'p3', 'p4'];
const DAY_MS = 24 * 60 * 60 * 1000;
const BASE = Date.parse('2026-11-29T00:00:00.000Z');

const row = fc.record({
  organizationId: fc.constantFrom('o1', 'o2'),
  // Duplicates included: a policy named twice in a row still counts the row once.
  policyIds: fc.array(fc.constantFrom(...POLICIES), { maxLength: 5 }),
  currency: fc.constantFrom('EUR', 'USD'),
  status: fc.constantFrom('APPROVED', 'REJECTED', 'PENDING_APPROVAL'),
  amountMinor: fc.integer({ min: 1, max: 1_000_000 }),
  // From two days before the end of November to two days into December, to the second.
  at: fc.integer({ min: -2 * DAY_MS, max: 2 * DAY_MS - 1000 }),
});

test('one read of a period gives each policy the spend a read of its own gives it, for a day and for a month', async (t) => {
  const store = await testStore();
  try {
    await createIndexes(store.db);
    await store.db.collection('policies').insertMany(POLICIES.map((p) => ({ _id: p, organizationId: 'o1', handle: p })) as never);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(row, { maxLength: 40 }), async (rows) => {
        const analytics = store.db.collection('analytics_purchases');
        await analytics.deleteMany({});
        if (rows.length > 0) {
          await analytics.insertMany(
            rows.map(({ at, ...r }) => {
              const requestedAt = new Date(BASE + at);
              const instant = requestedAt.toISOString();
              return { _id: `r${n++}`, ...r, requestedAt, dayKey: periodFor('DAY', instant, 'Europe/Berlin').periodKey, monthKey: periodFor('MONTH', instant, 'Europe/Berlin').periodKey };
            }) as never,
          );
        }
        for (const [periodStart, periodEnd] of [
          ['2026-11-28T23:00:00.000Z', '2026-11-29T23:00:00.000Z'],
          ['2026-10-31T23:00:00.000Z', '2026-11-30T23:00:00.000Z'],
          ['2026-11-30T23:00:00.000Z', '2026-12-31T23:00:00.000Z'],
        ]) {
          for (const currency of ['EUR', 'USD']) {
            const all = await attributableSpendByPolicy(store.db, { organizationId: 'o1', currency, periodStart, periodEnd });
            for (const policyId of POLICIES) {
              const own = await attributableSpend(store.db, { policyId, currency, periodStart, periodEnd });
              if ((all.get(policyId) ?? 0n) !== own) return false;
            }
          }
        }
        return true;
      }),
      { numRuns: 60 },
    );
    t.pass('every policy, period and currency agreed in 60 random sets of rows');
  } finally {
    await store.close();
  }
});
