// The exact wording of each rule evaluation's message (not a contract, docs/reference/contract.md §2.3, but the engine
// assembles it from cached parts, so the sentences are pinned here).
import test from 'ava';
import { decide } from '../../src/engine/decide.ts';
import { approvalThreshold, block, dailyBudget, input, maxPerPurchase, monthlyBudget, policy } from './fixtures.ts';

const messages = (amount: bigint, currency = 'EUR') =>
  decide(
    input({
      amount,
      currency,
      policies: [
        policy({
          id: 'office',
          name: 'Office supplies',
          currencies: ['EUR', 'USD'],
          rules: [maxPerPurchase(50_000n), approvalThreshold(20_000n), dailyBudget(100_000n), monthlyBudget(300_000n, 'REQUIRE_APPROVAL', { currency: 'EUR' })],
          merchants: [block('Shady Goods Ltd')],
        }),
      ],
    }),
  ).ruleEvaluations.map((e) => e.message);

test('messages within every limit', (t) => {
  t.deepEqual(messages(10_000n), [
    'Acme Supplies is not on the merchant block list.',
    '100.00 EUR is within the per-purchase maximum of 500.00 EUR.',
    '100.00 EUR is within the approval threshold of 200.00 EUR.',
    'This purchase would bring spending this day to 100.00 EUR, within the daily budget of 1000.00 EUR.',
    'This purchase would bring spending this month to 100.00 EUR, within the monthly approval limit of 3000.00 EUR.',
  ]);
});

test('messages above the limits, and for a rule of another currency; the same rule worded per currency', (t) => {
  t.deepEqual(messages(150_000n), [
    'Acme Supplies is not on the merchant block list.',
    '1500.00 EUR is above the per-purchase maximum of 500.00 EUR.',
    '1500.00 EUR is above the approval threshold of 200.00 EUR.',
    'This purchase would bring spending this day to 1500.00 EUR, above the daily budget of 1000.00 EUR.',
    'This purchase would bring spending this month to 1500.00 EUR, within the monthly approval limit of 3000.00 EUR.',
  ]);
  t.deepEqual(messages(60_000n, 'USD'), [
    'Acme Supplies is not on the merchant block list.',
    '600.00 USD is above the per-purchase maximum of 500.00 USD.',
    '600.00 USD is above the approval threshold of 200.00 USD.',
    'This purchase would bring spending this day to 600.00 USD, within the daily budget of 1000.00 USD.',
    'Applies only to purchases in EUR.',
  ]);
});
