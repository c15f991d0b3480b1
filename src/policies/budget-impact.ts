// validate's budgetImpact (docs/reference/contract.md §4.9): for each DAY/MONTH spend limit of the version, in each
// currency it applies to, is there spending in the current period that no budget window reserved
// against? That happens when a policy gains a spend limit mid-period: the window that activation
// would start must open with that spending as its opening balance (docs/internals/design.md §4 item 6). Read-only.
import type { AppDeps } from '../app-deps.ts';
import { periodFor, windowId } from '../engine/periods.ts';
import { loadWindows } from '../budgets/windows.ts';
import { fromStored } from '../money.ts';
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
  // Read as the first decision under this version would read them (loadWindows): a window that does not
  // exist yet opens with the spend already attributable; one last written under another version is
  // reconciled with the policy's approved spend it does not count.
  const wanted = [...groups.values()].map((group) => {
    const { periodKey, periodStart, periodEnd } = periodFor(group.periodKind, now, org.timezone);
    return { ...group, key: { policyId: version.policyId, policyVersionId: version._id, currency: group.currency, periodKind: group.periodKind, periodKey, periodStart, periodEnd } };
  });
  const loaded = await loadWindows(deps.store.db, wanted.map((w) => w.key));
  const impact = [];
  for (const { currency, periodKind, rules, key } of wanted) {
    const id = windowId(key);
    const state = loaded.states.get(id)!;
    const stored = loaded.docs.get(id);
    const newlyAttributed = state.openingBalanceMinor - (stored ? fromStored(stored.openingBalanceMinor) : 0n);
    if (newlyAttributed <= 0n) continue; // nothing that its reservations do not already account for
    const reserved = state.committedMinor + state.heldMinor;
    const used = state.openingBalanceMinor + reserved;
    impact.push({
      attributableMinor: (state.openingBalanceMinor + state.committedMinor).toString(),
      currency,
      limits: rules.map((r) => ({ effect: r.effect, limitMinor: String(r.amountMinor), remainingMinor: (BigInt(r.amountMinor) - used).toString() })),
      openingBalanceMinor: state.openingBalanceMinor.toString(),
      periodKey: key.periodKey,
      periodKind,
      reservedMinor: reserved.toString(),
    });
  }
  return impact;
}
