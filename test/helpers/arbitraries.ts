// fast-check arbitraries shared by the property tests that drive whole organisations through HTTP
// (test/simulations/simulate-vs-submit.test.ts, replay-vs-fresh.test.ts).
import fc from 'fast-check';

/** A manifest rule: a per-purchase limit (block or escalate), or a day or month budget, maybe in one currency. */
export function ruleArbitrary(currencies: string[], amountLimit: { min: number; max: number }, spendLimit: { min: number; max: number }) {
  return fc.oneof(
    fc.record({ ruleType: fc.constant('AMOUNT_LIMIT'), effect: fc.constantFrom('BLOCK', 'REQUIRE_APPROVAL'), periodKind: fc.constant('PER_REQUEST'), amountMinor: fc.integer(amountLimit).map(String) }),
    fc.record(
      {
        ruleType: fc.constant('SPEND_LIMIT'),
        effect: fc.constantFrom('BLOCK', 'REQUIRE_APPROVAL'),
        periodKind: fc.constantFrom('DAY', 'MONTH'),
        amountMinor: fc.integer(spendLimit).map(String),
        currency: fc.constantFrom(...currencies),
      },
      { requiredKeys: ['ruleType', 'effect', 'periodKind', 'amountMinor'] },
    ),
  );
}
