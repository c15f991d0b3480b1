// DAY and MONTH budget windows, resolved in the organisation's time zone with Luxon
// (SPEC.md 2.6: "windows resolved in the organisation's timezone"). A DST day lasts 23 or 25 hours;
// a day whose midnight falls in a DST gap starts at the first instant that exists.
import { DateTime } from 'luxon';
import { selectPolicies, type SelectionInput } from './applicability.ts';
import type { EngineInput, Period, Rule, WindowKey, WindowPeriodKind } from './types.ts';

interface CachedPeriod extends Period {
  startMs: number;
  endMs: number;
}

// The most recent period per (kind, zone). An instant inside [start, end) belongs to that same period,
// so the common case (many purchases in the same day) costs a Date.parse and two comparisons.
const recent = new Map<string, CachedPeriod>();
const HAS_OFFSET = /(?:Z|[+-]\d\d(?::?\d\d)?)$/i;

function compute(kind: WindowPeriodKind, instant: string, ms: number, timeZone: string): CachedPeriod {
  const at = Number.isNaN(ms) ? DateTime.fromISO(instant, { zone: timeZone }) : DateTime.fromMillis(ms, { zone: timeZone });
  if (!at.isValid) throw new RangeError(`cannot resolve ${instant} in time zone ${timeZone}: ${at.invalidExplanation}`);
  const unit = kind === 'DAY' ? 'day' : 'month';
  const start = at.startOf(unit);
  // endOf + 1 ms rather than start.plus(1 unit): a start shifted out of a DST gap must not shift the end.
  const end = at.endOf(unit).plus({ milliseconds: 1 });
  const startMs = start.toMillis();
  const endMs = end.toMillis();
  return {
    periodKey: start.toFormat(kind === 'DAY' ? 'yyyy-MM-dd' : 'yyyy-MM'),
    periodStart: new Date(startMs).toISOString(),
    periodEnd: new Date(endMs).toISOString(),
    startMs,
    endMs,
  };
}

/** The DAY or MONTH period containing instant in timeZone. Throws RangeError for an unknown zone or a bad instant. */
export function periodFor(kind: WindowPeriodKind, instant: string, timeZone: string): Period {
  const ms = HAS_OFFSET.test(instant) ? Date.parse(instant) : Number.NaN;
  const cacheKey = `${kind} ${timeZone}`;
  let period = recent.get(cacheKey);
  if (period === undefined || !(ms >= period.startMs && ms < period.endMs)) {
    period = compute(kind, instant, ms, timeZone);
    if (recent.size >= 512) recent.clear();
    recent.set(cacheKey, period);
  }
  return { periodKey: period.periodKey, periodStart: period.periodStart, periodEnd: period.periodEnd };
}

/** Stable identity of a budget window: the policy's, not the version's (DESIGN.md 4 item 6). */
export const windowId = (key: Pick<WindowKey, 'policyId' | 'currency' | 'periodKind' | 'periodKey'>): string =>
  `${key.policyId}:${key.currency}:${key.periodKind}:${key.periodKey}`;

/** A rule with a currency applies only to purchases in that currency (DESIGN.md 4 item 4). */
export const ruleAppliesTo = (rule: Rule, currency: string): boolean => rule.currency === null || rule.currency === currency;

/** SPEND_LIMIT over a DAY or MONTH: the rules that read and write budget windows. */
export const isWindowRule = (rule: Rule): rule is Rule & { periodKind: WindowPeriodKind } =>
  rule.ruleType === 'SPEND_LIMIT' && (rule.periodKind === 'DAY' || rule.periodKind === 'MONTH');

export type WindowKeysInput = SelectionInput & Pick<EngineInput, 'now' | 'timeZone' | 'periodInstant'>;

/**
 * The windows a purchase would touch: one per (covering policy, currency, periodKind, periodKey) that has
 * a SPEND_LIMIT applying to the purchase currency. The command loads these before calling decide().
 */
export function windowKeysFor(input: WindowKeysInput): WindowKey[] {
  const { covering } = selectPolicies(input);
  const currency = input.purchase.currency;
  const instant = input.periodInstant ?? input.now;
  const keys: WindowKey[] = [];
  const seen = new Set<string>();
  for (const { candidate } of covering) {
    for (const rule of candidate.version.rules) {
      if (!isWindowRule(rule) || !ruleAppliesTo(rule, currency)) continue;
      const period = periodFor(rule.periodKind, instant, input.timeZone);
      const key: WindowKey = {
        policyId: candidate.policyId,
        policyVersionId: candidate.version.id,
        currency,
        periodKind: rule.periodKind,
        ...period,
      };
      const id = windowId(key);
      if (seen.has(id)) continue;
      seen.add(id);
      keys.push(key);
    }
  }
  return keys;
}
