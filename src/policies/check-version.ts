// Activation's own check of a policy version (docs/reference/contract.md §4.9), pure: issues make a version unacceptable,
// warnings do not. The issue codes are listed in docs/integrate/rest-api.md.
import type { MerchantEntryDoc, PolicyVersionDoc, RuleDoc } from '../store/collections.ts';
import { withCurrentKey } from './candidates.ts';

export interface PolicyIssue {
  code: string;
  message: string;
  path?: string;
}

type Rule = Omit<RuleDoc, 'id'>;
/** What the check reads of a version: a stored one, or the content a manifest is about to write (src/manifests/apply.ts). */
export type VersionContent = Pick<PolicyVersionDoc, 'currencies'> & { rules: Rule[]; merchants: Omit<MerchantEntryDoc, 'id'>[] };

/** Two rules can meet on one purchase when their currencies can be the same. */
const overlap = (a: Rule, b: Rule) => a.currency === null || b.currency === null || a.currency === b.currency;

/** A rule asking more approvals than the organisation has approvers: what it escalates can only expire. */
function quorumWarnings(rules: ReadonlyArray<Pick<RuleDoc, 'effect' | 'approvalsRequired'>>, approvers: number): PolicyIssue[] {
  const warnings: PolicyIssue[] = [];
  rules.forEach((rule, i) => {
    const required = rule.approvalsRequired ?? 1;
    if (rule.effect !== 'REQUIRE_APPROVAL' || required <= approvers) return;
    warnings.push({
      code: 'APPROVALS_REQUIRED_ABOVE_APPROVERS',
      path: `rules.${i}.approvalsRequired`,
      message: `The rule asks ${required} approver${required === 1 ? '' : 's'} and the organisation has ${approvers}: every purchase it sends to a person would expire unanswered.`,
    });
  });
  return warnings;
}

/**
 * Run by validate and by activation (a manifest's apply), so that validate's answer is the one activation keeps.
 * `approvers`: how many people of the organisation may approve (approverCount), for the quorum warning.
 */
export function checkVersion(v: VersionContent, approvers?: number): { issues: PolicyIssue[]; warnings: PolicyIssue[] } {
  const issues: PolicyIssue[] = [];
  const warnings: PolicyIssue[] = [];
  const indexed = v.rules.map((rule, i) => ({ rule, path: `rules.${i}` }));
  const maxima = indexed.filter(({ rule }) => rule.ruleType === 'AMOUNT_LIMIT' && rule.effect === 'BLOCK');
  const thresholds = indexed.filter(({ rule }) => rule.ruleType === 'AMOUNT_LIMIT' && rule.effect === 'REQUIRE_APPROVAL');

  for (const { rule, path } of indexed) {
    if (rule.currency !== null && !v.currencies.includes(rule.currency)) {
      issues.push({ code: 'RULE_CURRENCY_NOT_COVERED', path: `${path}.currency`, message: `The rule is in ${rule.currency}, which this version does not cover (${v.currencies.join(', ')}).` });
    }
  }
  // A threshold can never apply when, in every currency it applies to, a maximum at or below it refuses
  // first: the engine escalates an amount above the threshold and refuses one above the maximum
  // (src/engine/decide.ts, both `amount > limit`), and a refusal wins, so a threshold equal to the
  // maximum escalates nothing the maximum does not refuse.
  const appliesIn = (rule: Rule) => (rule.currency === null ? v.currencies : [rule.currency]);
  const deadUnder = (t: Rule, m: Rule) => t.amountMinor >= m.amountMinor;
  const refusedBelow = (t: Rule, currency: string) => maxima.some(({ rule: m }) => (m.currency === null || m.currency === currency) && deadUnder(t, m));
  for (const t of thresholds) {
    if (!appliesIn(t.rule).every((currency) => refusedBelow(t.rule, currency))) continue;
    for (const m of maxima) {
      if (overlap(t.rule, m.rule) && deadUnder(t.rule, m.rule)) {
        const relation = t.rule.amountMinor === m.rule.amountMinor ? 'equals' : 'is above';
        issues.push({ code: 'APPROVAL_THRESHOLD_ABOVE_MAXIMUM', path: t.path, message: `The approval threshold (${t.rule.amountMinor}) ${relation} the per-purchase maximum (${m.rule.amountMinor}): any amount above it is refused, so it can never apply.` });
      }
    }
  }

  const merchants = v.merchants.map(withCurrentKey);
  const allowed = merchants.filter((m) => m.listType === 'ALLOW');
  const blocked = new Set(merchants.filter((m) => m.listType === 'BLOCK').map((m) => m.merchantKey));
  if (allowed.length > 0 && allowed.every((m) => blocked.has(m.merchantKey))) {
    issues.push({ code: 'RULES_NEVER_APPROVE', path: 'merchants', message: 'Every allow-listed merchant is also blocked, so no purchase could ever be approved.' });
  }
  for (const m of allowed) {
    if (blocked.has(m.merchantKey) && allowed.some((a) => !blocked.has(a.merchantKey))) {
      warnings.push({ code: 'MERCHANT_ON_BOTH_LISTS', path: 'merchants', message: `${m.label} is on both the allow and the block list; the block wins.` });
    }
  }

  const budgets = indexed.filter(({ rule }) => rule.ruleType === 'SPEND_LIMIT' && rule.effect === 'BLOCK');
  for (const b of budgets) {
    for (const m of maxima) {
      if (overlap(b.rule, m.rule) && b.rule.amountMinor < m.rule.amountMinor) {
        warnings.push({ code: 'BUDGET_BELOW_MAXIMUM', path: b.path, message: `The ${b.rule.periodKind === 'DAY' ? 'daily' : 'monthly'} budget (${b.rule.amountMinor}) is below the per-purchase maximum (${m.rule.amountMinor}).` });
      }
    }
    if (b.rule.periodKind === 'MONTH') {
      for (const d of budgets) {
        if (d.rule.periodKind === 'DAY' && overlap(b.rule, d.rule) && b.rule.amountMinor < d.rule.amountMinor) {
          warnings.push({ code: 'MONTHLY_BELOW_DAILY', path: b.path, message: `The monthly budget (${b.rule.amountMinor}) is below the daily budget (${d.rule.amountMinor}).` });
        }
      }
    }
  }
  if (approvers !== undefined) warnings.push(...quorumWarnings(v.rules, approvers));
  if (v.rules.length === 0 && v.merchants.length === 0) {
    warnings.push({ code: 'NO_RULES', message: 'The version has no rules: every purchase in its currencies would be approved.' });
  }
  return { issues, warnings };
}
