// fast-check arbitraries shared by the property tests that drive whole organisations through HTTP
// (test/simulations/simulate-vs-submit.test.ts, replay-vs-fresh.test.ts).
import fc from 'fast-check';
import { versionContent } from '../../src/manifests/apply.ts';
import { checkVersion } from '../../src/policies/check-version.ts';
import type { ManifestPolicy } from '../../schemas/manifest.ts';

/**
 * Whether activation accepts a policy's content: a manifest may not activate a version with issues
 * (checkVersion). The engine's decisions on rules with issues are tested directly (test/engine/properties.test.ts).
 */
export function activatable(content: { currencies: readonly string[]; rules: readonly unknown[]; merchants?: readonly unknown[] }): boolean {
  return checkVersion(versionContent(content as ManifestPolicy)).issues.length === 0;
}

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
