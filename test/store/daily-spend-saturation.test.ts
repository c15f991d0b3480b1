// A day's Minor totals in analytics_daily_spend saturate (docs/operate/analysts.md): property test of the writes
// projectPurchase adds to a command's batch, run by the store itself in a transaction (the embedded engine, or through
// the driver in the MongoDB lane), against exact BigInt arithmetic. Amounts near 2^53 make the sums the store computes
// round; the totals must not.
import assert from 'node:assert/strict';
import test from 'ava';
import fc from 'fast-check';
import { Compile } from 'typebox/compile';
import { AnalyticsDailySpend } from '../../schemas/analytics.ts';
import { addToDailySpend, dailyIncrements, dailySpendWrites, MAX_DAILY_MINOR } from '../../src/purchases/projection.ts';
import { WriteBatch } from '../../src/store/write-batch.ts';
import type { PurchaseStatus } from '../../src/purchases/documents.ts';
import type { Store } from '../../src/store/store.ts';
import { testStore } from '../helpers/store.ts';

let store: Store;
test.before(async () => {
  store = await testStore();
});
test.after.always(() => store?.close());

const MAX = BigInt(MAX_DAILY_MINOR);
const ORG = '00000000-0000-4000-8000-000000000001';
const AGENT = '00000000-0000-4000-8000-000000000002';

// Small amounts, and amounts near and at 2^53-1, where sums pass it and round.
const amount = fc.oneof(
  fc.integer({ min: 1, max: 10_000 }),
  fc.integer({ min: MAX_DAILY_MINOR - 10_000, max: MAX_DAILY_MINOR }),
  fc.integer({ min: 2 ** 51, max: MAX_DAILY_MINOR }),
);
type Step = { kind: 'new'; status: 'APPROVED' | 'PENDING_APPROVAL' | 'REJECTED'; amount: number } | { kind: 'resolve'; pick: number; to: 'APPROVED' | 'REJECTED' | 'EXPIRED' | 'CANCELLED' };
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('new' as const), status: fc.constantFrom('APPROVED' as const, 'PENDING_APPROVAL' as const, 'REJECTED' as const), amount }),
  fc.record({ kind: fc.constant('resolve' as const), pick: fc.nat(), to: fc.constantFrom('APPROVED' as const, 'REJECTED' as const, 'EXPIRED' as const, 'CANCELLED' as const) }),
);

const checkDaily = Compile(AnalyticsDailySpend);
let day = 0;

test('the Minor totals are exact until one passes 2^53-1; then they hold at 2^53-1 (and 0), and saturated stays true', async (t) => {
  const days = store.db.collection<Record<string, unknown> & { _id: string }>('analytics_daily_spend');
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
      const identity = { organizationId: ORG, agentId: AGENT, currency: 'EUR', dayKey: `2026-11-${String(day++ % 28 + 1).padStart(2, '0')}`, monthKey: '2026-11' };
      const _id = `${ORG}:${AGENT}:EUR:${identity.dayKey}`;
      await days.deleteOne({ _id });
      const pending: number[] = [];
      let approved = 0n;
      let held = 0n;
      let saturated = false;
      const counts: Record<string, number> = { requestedCount: 0, approvedCount: 0, rejectedCount: 0, pendingCount: 0, expiredCount: 0, cancelledCount: 0 };
      for (const s of steps) {
        let previous: PurchaseStatus | null = null;
        let status: PurchaseStatus;
        let amountMinor: number;
        if (s.kind === 'new') {
          status = s.status;
          amountMinor = s.amount;
          counts.requestedCount++;
        } else {
          if (pending.length === 0) continue;
          [amountMinor] = pending.splice(s.pick % pending.length, 1);
          previous = 'PENDING_APPROVAL';
          status = s.to;
          counts.pendingCount--;
          held -= BigInt(amountMinor);
        }
        if (status === 'PENDING_APPROVAL') {
          pending.push(amountMinor);
          held += BigInt(amountMinor);
        }
        if (status === 'APPROVED') approved += BigInt(amountMinor);
        counts[`${status === 'PENDING_APPROVAL' ? 'pending' : status.toLowerCase()}Count`]++;
        if (approved > MAX || held > MAX) saturated = true;
        await store.withTransaction(async (session) => {
          const batch = new WriteBatch(store.db);
          addToDailySpend(batch, identity, dailyIncrements(previous, status, amountMinor));
          await batch.write(session);
        });

        const doc = (await days.findOne({ _id }))!;
        const { approvedMinor, pendingMinor, ...rest } = doc;
        assert.deepEqual(rest, { _id, ...identity, ...counts, saturated });
        assert.ok(checkDaily.Check(doc), JSON.stringify([...checkDaily.Errors(doc)]));
        // approvedMinor only grows: it is the exact total, capped. pendingMinor is exact until saturated, then within [0, 2^53-1].
        assert.equal(approvedMinor, Number(approved < MAX ? approved : MAX));
        if (saturated) assert.ok(Number.isSafeInteger(pendingMinor) && (pendingMinor as number) >= 0 && (pendingMinor as number) <= MAX_DAILY_MINOR, `pendingMinor ${pendingMinor}`);
        else assert.equal(pendingMinor, Number(held));
      }
    }),
    { numRuns: 80 },
  );
  t.pass();
});

test('a change that moves no amount is one plain $inc; a new document says saturated: false', async (t) => {
  const identity = { organizationId: ORG, agentId: AGENT, currency: 'USD', dayKey: '2026-11-19', monthKey: '2026-11' };
  const inc = dailyIncrements(null, 'REJECTED', MAX_DAILY_MINOR);
  t.deepEqual(dailySpendWrites(inc, identity).map((w) => Object.keys(w.update)), [['$inc', '$setOnInsert']]);
  await store.withTransaction(async (session) => {
    const batch = new WriteBatch(store.db);
    addToDailySpend(batch, identity, inc);
    await batch.write(session);
  });
  const days = store.db.collection<Record<string, unknown> & { _id: string }>('analytics_daily_spend');
  t.like(await days.findOne({ _id: `${ORG}:${AGENT}:USD:2026-11-19` }), { requestedCount: 1, rejectedCount: 1, approvedMinor: 0, pendingMinor: 0, saturated: false });
});
