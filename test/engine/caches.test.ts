// The engine keeps what depends only on its (read-only) inputs between decisions: the selection per
// candidates array, a plan per rules list and currency with the windows it resolved for the latest
// periods. These tests evaluate the same input objects again and again (warm caches) while the instant,
// the zone, the agent or the currency changes, and compare every answer with a deep copy of the input
// (nothing cached for it) and with windows named by Luxon independently of the engine.
import test from 'ava';
import { DateTime } from 'luxon';
import { decideWithBudgets } from '../../src/engine/decide.ts';
import { windowKeysFor, windowId } from '../../src/engine/periods.ts';
import type { EngineInput, WindowState } from '../../src/engine/types.ts';
import { AGENT, approvalThreshold, block, dailyBudget, input, maxPerPurchase, monthlyBudget, policy } from './fixtures.ts';

const cold = (value: EngineInput): EngineInput => structuredClone(value);

const policies = [
  policy({ id: 'a', rules: [maxPerPurchase(50_000n), dailyBudget(30_000n), monthlyBudget(100_000n), monthlyBudget(90_000n, 'REQUIRE_APPROVAL')], merchants: [block('Shady Goods')] }),
  policy({ id: 'b', currencies: ['EUR', 'USD', 'JPY'], rules: [dailyBudget(20_000n, 'BLOCK', { currency: 'EUR' }), dailyBudget(25_000n), approvalThreshold(15_000n, { currency: 'USD' })] }),
  policy({ id: 'c', scopeType: 'AGENT', agentIds: [AGENT.id], rules: [monthlyBudget(60_000n)] }),
];

/** Every window of every policy, for every instant and zone below, with its own usage: a wrong window shows. */
function windowsFor(steps: ReadonlyArray<readonly [string, string]>, currency = 'EUR'): Map<string, WindowState> {
  const windows = new Map<string, WindowState>();
  let n = 0n;
  for (const [instant, zone] of steps) {
    const local = DateTime.fromISO(instant, { zone });
    for (const { policyId } of policies) {
      for (const id of [`${policyId}:${currency}:DAY:${local.toFormat('yyyy-MM-dd')}`, `${policyId}:${currency}:MONTH:${local.toFormat('yyyy-MM')}`]) {
        if (!windows.has(id)) windows.set(id, { budgetCounterId: `counter-${id}`, committedMinor: 1_000n * ++n, heldMinor: 7n * n, openingBalanceMinor: 0n });
      }
    }
  }
  return windows;
}

const STEPS = [
  ['2026-03-28T12:00:00.000Z', 'Europe/Berlin'],
  // The 23-hour day of March 2026 in Berlin, on both sides of the change of clocks.
  ['2026-03-29T00:59:59.999Z', 'Europe/Berlin'],
  ['2026-03-29T01:00:00.000Z', 'Europe/Berlin'],
  // The last millisecond of March in Berlin, then April there; still March 31 in New York.
  ['2026-03-31T21:59:59.999Z', 'Europe/Berlin'],
  ['2026-03-31T22:00:00.000Z', 'Europe/Berlin'],
  ['2026-03-31T22:00:00.000Z', 'America/New_York'],
  ['2026-03-31T22:00:00.000Z', 'Europe/Berlin'],
  ['2026-04-01T03:59:59.999Z', 'America/New_York'],
  ['2026-04-01T04:00:00.000Z', 'America/New_York'],
  // The 25-hour day of October 2026 in Berlin, an instant written with an offset, and UTC.
  ['2026-10-25T00:30:00.000Z', 'Europe/Berlin'],
  ['2026-10-25T02:30:00.000+01:00', 'Europe/Berlin'],
  ['2026-10-25T22:59:59.999Z', 'Europe/Berlin'],
  ['2026-10-25T23:00:00.000Z', 'Europe/Berlin'],
  ['2026-10-25T23:00:00.000Z', 'UTC'],
  ['2026-03-28T12:00:00.000Z', 'Europe/Berlin'],
] as const;

test('cached plans and windows give the answers of a cold evaluation across days, months, DST and zones', (t) => {
  const windows = windowsFor(STEPS);
  // Twice over, so that every step also meets caches left by a later instant or another zone.
  for (const [instant, timeZone] of [...STEPS, ...STEPS]) {
    const warm = { ...input({ policies, now: instant, timeZone, amount: 4_000n }), windows };
    const decision = decideWithBudgets(warm);
    t.deepEqual(decision, decideWithBudgets(cold(warm)), `${instant} in ${timeZone}`);

    const local = DateTime.fromISO(instant, { zone: timeZone });
    const day = local.toFormat('yyyy-MM-dd');
    const month = local.toFormat('yyyy-MM');
    const expected = [`a:EUR:DAY:${day}`, `a:EUR:MONTH:${month}`, `b:EUR:DAY:${day}`, `c:EUR:MONTH:${month}`];
    t.deepEqual(decision.budgets.map((b) => b.windowId), expected, `${instant} in ${timeZone}`);
    t.deepEqual(windowKeysFor(warm).map(windowId), expected);
    for (const budget of decision.budgets) {
      const state = windows.get(budget.windowId)!;
      t.is(budget.current.committedMinor, state.committedMinor);
      t.is(budget.simulated.projectedMinor, state.committedMinor + state.heldMinor + 4_000n);
      t.is(budget.periodStart, new Date(local.startOf(budget.periodKind === 'DAY' ? 'day' : 'month').toMillis()).toISOString());
    }
  }
});

test('the same candidates answer for each agent, agent status, currency and mode as a cold evaluation', (t) => {
  const windows = new Map([...windowsFor([['2026-11-21T10:00:00.000Z', 'Europe/Berlin']]), ...windowsFor([['2026-11-21T10:00:00.000Z', 'Europe/Berlin']], 'USD')]);
  const cases: Array<Parameters<typeof input>[0]> = [
    {},
    { agent: { id: 'agent-2', status: 'ENABLED' } },
    { agent: { ...AGENT, status: 'DISABLED' } },
    { currency: 'USD', amount: 16_000n },
    { currency: 'JPY', amount: 16_000n },
    { currency: 'GBP' },
    { mode: 'POLICY_VERSION', agent: null },
    { merchant: 'Shady Goods' },
    { amount: 60_000n },
    {},
  ];
  const seen: string[] = [];
  for (const options of [...cases, ...cases]) {
    const warm = { ...input({ policies, ...options }), windows };
    const decision = decideWithBudgets(warm);
    t.deepEqual(decision, decideWithBudgets(cold(warm)), String(seen.length));
    seen.push(`${decision.outcome} ${decision.reasonCodes.join(',')} ${decision.policiesConsidered.map((p) => p.policyId).join('')}`);
  }
  t.deepEqual(seen.slice(0, cases.length), [
    'APPROVED WITHIN_POLICY abc',
    'APPROVED WITHIN_POLICY ab',
    'REJECTED AGENT_DISABLED ',
    'REQUIRES_APPROVAL APPROVAL_THRESHOLD_EXCEEDED b',
    'APPROVED WITHIN_POLICY b',
    'REJECTED CURRENCY_NOT_COVERED ',
    'APPROVED WITHIN_POLICY abc',
    'REJECTED MERCHANT_BLOCKED abc',
    'REJECTED AMOUNT_EXCEEDS_MAX,DAILY_LIMIT_EXCEEDED,MONTHLY_LIMIT_EXCEEDED abc',
    'APPROVED WITHIN_POLICY abc',
  ]);
  t.deepEqual(seen.slice(cases.length), seen.slice(0, cases.length));
});

test('a rules list evaluated in several currencies keeps each currency its own texts and windows', (t) => {
  const shared = [policies[1]];
  for (const currency of ['EUR', 'USD', 'JPY', 'EUR', 'JPY']) {
    const warm = input({ policies: shared, currency, amount: 21_000n });
    const decision = decideWithBudgets(warm);
    t.deepEqual(decision, decideWithBudgets(cold(warm)), currency);
    t.deepEqual(decision.budgets.map((b) => b.windowId), [`b:${currency}:DAY:2026-11-21`]);
    const daily = decision.ruleEvaluations.filter((e) => e.rule === 'SPEND_LIMIT');
    const limit = currency === 'JPY' ? '25000 JPY' : `250.00 ${currency}`;
    t.true(daily.some((e) => e.outcome !== 'NOT_APPLICABLE' && e.message!.endsWith(`of ${limit}.`)), `${currency}: ${daily.map((e) => e.message).join(' | ')}`);
    t.is(daily.find((e) => e.policyRuleId === shared[0].version.rules[0].id)!.outcome, currency === 'EUR' ? 'BLOCK' : 'NOT_APPLICABLE');
  }
});

test('two versions of one policy share its windows: one budget per window with the limits of both', (t) => {
  const first = policy({ id: 'p', versionId: 'p-v1', rules: [dailyBudget(30_000n)] });
  const second = { ...first, version: { ...first.version, id: 'p-v2', versionNumber: 2, rules: [dailyBudget(20_000n), monthlyBudget(50_000n)] } };
  const other = policy({ id: 'q', rules: [dailyBudget(40_000n)] });
  const windows = { 'p:EUR:DAY:2026-11-21': { budgetCounterId: 'c1', committedMinor: 15_000n, heldMinor: 0n, openingBalanceMinor: 0n } };
  for (const order of [[second, other, first], [first, second, other]]) {
    const decision = decideWithBudgets(input({ policies: order, amount: 10_000n, windows }));
    t.deepEqual(
      decision.budgets.map((b) => [b.windowId, b.policyVersionId, b.limits.map((l) => l.limitMinor)]),
      [
        ['p:EUR:DAY:2026-11-21', 'p-v1', [30_000n, 20_000n]],
        ['p:EUR:MONTH:2026-11', 'p-v2', [50_000n]],
        ['q:EUR:DAY:2026-11-21', 'q-v1', [40_000n]],
      ],
    );
    t.deepEqual(decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  }
});

test('a rules list shared by two versions and two policies: each window names its own policy and version', (t) => {
  const first = policy({ id: 'p', versionId: 'p-v1', rules: [dailyBudget(30_000n)] });
  const copies = [first, { ...first, version: { ...first.version, id: 'p-v2' } }, { ...first, policyId: 'r' }];
  for (const candidate of [...copies, ...copies]) {
    const [budget] = decideWithBudgets(input({ policies: [candidate] })).budgets;
    t.deepEqual([budget.windowId, budget.policyId, budget.policyVersionId], [`${candidate.policyId}:EUR:DAY:2026-11-21`, candidate.policyId, candidate.version.id]);
  }
});
