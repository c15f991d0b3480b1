// DAY and MONTH budget windows, resolved in the organisation's time zone with Luxon
// (docs/reference/contract.md §2.6: "windows resolved in the organisation's timezone"). A DST day lasts 23 or 25 hours;
// a day whose midnight falls in a DST gap starts at the first instant that exists, and one whose midnight
// comes twice (the clock put back to it) at the first of the two.
import { DateTime } from 'luxon';
import { selectPolicies, type SelectionInput } from './applicability.ts';
import type { EngineInput, Period, Rule, WindowKey, WindowPeriodKind } from './types.ts';

/** One budget window as a decision sees it: its id and its key, built once per period and reused. */
export interface ResolvedWindow {
  id: string;
  key: WindowKey;
}

interface CachedPeriod {
  period: Period;
  startMs: number;
  endMs: number;
  /** The windows resolved in this period: policyId -> currency -> policyVersionId -> window. */
  windows: Map<string, Map<string, Map<string, ResolvedWindow>>>;
  windowCount: number;
}

// The most recent period per zone and kind. An instant inside [start, end) belongs to that same
// period, so the common case (many purchases in the same day) costs two string comparisons: no
// Date.parse, no Luxon, no string building. Window ids and keys hang off the period, so they are
// built once per policy, currency and period, and dropped with it.
const recent = new Map<string, { DAY?: CachedPeriod; MONTH?: CachedPeriod }>();
const HAS_OFFSET = /(?:Z|[+-]\d\d(?::?\d\d)?)$/i;
const WINDOW_LIMIT = 50_000;

function compute(kind: WindowPeriodKind, instant: string, ms: number, timeZone: string): CachedPeriod {
  const at = Number.isNaN(ms) ? DateTime.fromISO(instant, { zone: timeZone }) : DateTime.fromMillis(ms, { zone: timeZone });
  if (!at.isValid) throw new RangeError(`cannot resolve ${instant} in time zone ${timeZone}: ${at.invalidExplanation}`);
  const unit = kind === 'DAY' ? 'day' : 'month';
  const start = at.startOf(unit);
  const startMs = firstInstant(start, unit);
  // From the local start of the next period, not start.plus(1 unit): a start shifted out of a DST gap
  // (01:00) must not shift the end.
  const endMs = firstInstant(start.plus({ [unit]: 1 }).startOf(unit), unit);
  const period: Period = Object.freeze({
    periodKey: start.toFormat(kind === 'DAY' ? 'yyyy-MM-dd' : 'yyyy-MM'),
    periodStart: new Date(startMs).toISOString(),
    periodEnd: new Date(endMs).toISOString(),
  });
  return { period, startMs, endMs, windows: new Map(), windowCount: 0 };
}

/**
 * The first instant of the period that `start` (a startOf) begins. Luxon resolves a local midnight that
 * comes twice with the offset it had in hand, so where a clock is put back to midnight (Havana, first
 * Sunday of November: 01:00 CDT becomes 00:00 CST) it can answer the second midnight: one period would
 * then have two starts and overlap the one before. The instant just before it is then still in the
 * period, and the first midnight is earlier by the hour (or two) the clock went back.
 */
function firstInstant(start: DateTime, unit: 'day' | 'month'): number {
  const ms = start.toMillis();
  const before = DateTime.fromMillis(ms - 1, { zone: start.zone });
  const samePeriod = before.year === start.year && before.month === start.month && (unit === 'month' || before.day === start.day);
  return samePeriod ? ms - (before.offset - start.offset) * 60_000 : ms;
}

const digit = (s: string, i: number): number => s.charCodeAt(i) - 48;

/**
 * True when instant is written as Date#toISOString writes it ('2026-11-21T10:00:00.000Z') with a
 * plausible time and a day of the month no later than the 28th: such strings compare as their
 * instants do, and within a cached period's bounds they name a real instant. Anything else (an
 * offset, the 29th to 31st, nonsense) takes the parsing path, which validates it.
 */
function isCanonicalUtc(s: string): boolean {
  return (
    s.length === 24 &&
    s.charCodeAt(23) === 90 && // Z
    s.charCodeAt(10) === 84 && // T
    s.charCodeAt(4) === 45 && s.charCodeAt(7) === 45 &&
    s.charCodeAt(13) === 58 && s.charCodeAt(16) === 58 && s.charCodeAt(19) === 46 &&
    digit(s, 8) * 10 + digit(s, 9) <= 28 &&
    digit(s, 11) * 10 + digit(s, 12) <= 23 &&
    digit(s, 14) <= 5 && digit(s, 17) <= 5
  );
}

function cachedPeriod(kind: WindowPeriodKind, instant: string, timeZone: string): CachedPeriod {
  let zone = recent.get(timeZone);
  const cached = zone?.[kind];
  if (cached !== undefined && isCanonicalUtc(instant) && instant >= cached.period.periodStart && instant < cached.period.periodEnd) {
    return cached;
  }
  const ms = HAS_OFFSET.test(instant) ? Date.parse(instant) : Number.NaN;
  if (cached !== undefined && ms >= cached.startMs && ms < cached.endMs) return cached;
  const period = compute(kind, instant, ms, timeZone);
  if (zone === undefined) {
    if (recent.size >= 512) recent.clear();
    recent.set(timeZone, (zone = {}));
  }
  zone[kind] = period;
  return period;
}

/** The DAY or MONTH period containing instant in timeZone. Throws RangeError for an unknown zone or a bad instant. */
export function periodFor(kind: WindowPeriodKind, instant: string, timeZone: string): Period {
  return cachedPeriod(kind, instant, timeZone).period;
}

/**
 * The DAY period of a local date ('2026-11-01') in timeZone. Not DateTime.fromISO(date).startOf('day'):
 * Luxon resolves a midnight that comes twice with the offset the zone has today, so that bound would
 * change with the season. Noon is in the date whatever the clocks do around it.
 */
export function periodOfDate(date: string, timeZone: string): Period {
  const noon = DateTime.fromISO(`${date}T12:00`, { zone: timeZone });
  if (!noon.isValid) throw new RangeError(`${date} is not a date in time zone ${timeZone}: ${noon.invalidExplanation}`);
  return periodFor('DAY', noon.toISO()!, timeZone);
}

/** A period and the windows resolved in it, for one decision to resolve several windows from. */
export type PeriodWindows = Readonly<CachedPeriod>;

export const periodWindows = (kind: WindowPeriodKind, instant: string, timeZone: string): PeriodWindows => cachedPeriod(kind, instant, timeZone);

/** The window of a policy's limit rules over `period`. Shared between decisions: never change it. */
export function windowIn(period: PeriodWindows, kind: WindowPeriodKind, policyId: string, policyVersionId: string, currency: string): ResolvedWindow {
  const cached = period as CachedPeriod;
  let byCurrency = cached.windows.get(policyId);
  if (byCurrency === undefined) {
    if (cached.windowCount >= WINDOW_LIMIT) {
      cached.windows.clear();
      cached.windowCount = 0;
    }
    cached.windows.set(policyId, (byCurrency = new Map()));
  }
  let byVersion = byCurrency.get(currency);
  if (byVersion === undefined) byCurrency.set(currency, (byVersion = new Map()));
  let window = byVersion.get(policyVersionId);
  if (window === undefined) {
    const { periodKey, periodStart, periodEnd } = cached.period;
    const key: WindowKey = Object.freeze({ policyId, policyVersionId, currency, periodKind: kind, periodKey, periodStart, periodEnd });
    window = Object.freeze({ id: windowId(key), key });
    resolved.set(key, { id: window.id, startMs: cached.startMs, endMs: cached.endMs });
    byVersion.set(policyVersionId, window);
    cached.windowCount++;
  }
  return window;
}

// The ids and bounds of the keys windowIn hands out, so that callers holding such a key (loadWindows asks
// for every window of every decision) get them without building or parsing them again.
const resolved = new WeakMap<object, { id: string; startMs: number; endMs: number }>();

/** Stable identity of a budget window: the policy's, not the version's (docs/internals/design.md §4 item 6). */
export const windowId = (key: Pick<WindowKey, 'policyId' | 'currency' | 'periodKind' | 'periodKey'>): string =>
  resolved.get(key)?.id ?? `${key.policyId}:${key.currency}:${key.periodKind}:${key.periodKey}`;

/** The series a window id belongs to: its policy, currency and period kind, without the period ('p:EUR:DAY'). */
export const windowSeries = (id: string): string => id.slice(0, id.lastIndexOf(':'));

/** A window's period as instants (ms): [startMs, endMs). */
export function windowBounds(key: Pick<WindowKey, 'periodStart' | 'periodEnd'>): { startMs: number; endMs: number } {
  return resolved.get(key) ?? { startMs: Date.parse(key.periodStart), endMs: Date.parse(key.periodEnd) };
}

/** A rule with a currency applies only to purchases in that currency (docs/internals/design.md §4 item 4). */
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
      const window = windowIn(periodWindows(rule.periodKind, instant, input.timeZone), rule.periodKind, candidate.policyId, candidate.version.id, currency);
      if (seen.has(window.id)) continue;
      seen.add(window.id);
      keys.push(window.key);
    }
  }
  return keys;
}
