// validate's budgetImpact (docs/reference/contract.md §4.9): for each DAY/MONTH spend limit of the version, in each
// currency it applies to, is there spending in the current period that no budget window reserved
// against? That happens when a policy gains a spend limit mid-period: the window that activation
// would start must open with that spending as its opening balance (docs/internals/design.md §4 item 6). Read-only.
import type { AppDeps } from '../app-deps.ts';
import { periodFor, windowId } from '../engine/periods.ts';
import { attributableSpend, windowsCollection } from '../budgets/windows.ts';
import type { OrganizationDoc, PolicyVersionDoc, RuleDoc } from '../store/collections.ts';

export async function budgetImpact(deps: AppDeps, org: OrganizationDoc, version: PolicyVersionDoc) {
  const now = deps.now().toISOString();
  const groups = new Map<string, { currency: string; periodKind: 'DAY' | 'MONTH'; rules: RuleDoc[] }>();
  for (const rule of version.rules) {
    if (rule.ruleType !== 'SPEND_LIMIT' || rule.periodKind === 'PER_REQUEST') continue;
    for (const currency of rule.currency ? [rule.currency] : version.currencies) {
      const key = `${currency}:${rule.periodKind}`;
      const group = groups.get(key) ?? { currency, periodKind: rule.periodKind, rules: [] };
      group.rules.push(rule);
      groups.set(key, group);
    }
  }
  const impact = [];
  for (const { currency, periodKind, rules } of groups.values()) {
    const { periodKey, periodStart, periodEnd } = periodFor(periodKind, now, org.timezone);
    const key = { policyId: version.policyId, currency, periodKind, periodKey, periodStart, periodEnd };
    if (await windowsCollection(deps.store.db).findOne({ _id: windowId(key) })) continue; // already reserved against
    const attributable = await attributableSpend(deps.store.db, key);
    if (attributable === 0n) continue;
    impact.push({
      attributableMinor: attributable.toString(),
      currency,
      limits: rules.map((r) => ({ effect: r.effect, limitMinor: String(r.amountMinor), remainingMinor: (BigInt(r.amountMinor) - attributable).toString() })),
      openingBalanceMinor: attributable.toString(),
      periodKey,
      periodKind,
      reservedMinor: '0',
    });
  }
  return impact;
}
