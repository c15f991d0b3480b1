import test from 'ava';
import { decide } from '../../src/engine/decide.ts';
import { reevaluate, type ReevaluationRequest } from '../../src/engine/reevaluate.ts';
import type { EngineInput } from '../../src/engine/types.ts';
import {
  AGENT,
  approvalThreshold,
  block,
  dailyBudget,
  dayWindow,
  input,
  maxPerPurchase,
  monthlyBudget,
  policy,
  windowState,
  type InputOptions,
} from './fixtures.ts';

const AMOUNT = 30_000n;
const threshold = approvalThreshold(20_000n, { id: 'threshold' });
const office = (options: Parameters<typeof policy>[0] = {}) =>
  policy({ id: 'office', name: 'Office supplies', rules: [threshold, dailyBudget(100_000n, 'BLOCK', { id: 'cap' })], ...options });

/** Submits, checks the escalation, and returns what the command would have stored. */
function escalate(options: InputOptions) {
  const submitted = decide(input({ amount: AMOUNT, ...options }));
  if (submitted.outcome !== 'REQUIRES_APPROVAL') throw new Error(`expected an escalation, got ${submitted.outcome}`);
  return {
    escalatedVersionIds: submitted.policiesConsidered.map((p) => p.policyVersionId),
    heldWindowIds: submitted.effects.budget.map((e) => e.windowId),
    escalationReasonCodes: submitted.escalationReasonCodes,
  };
}

const answer = (given: EngineInput, stored: Omit<ReevaluationRequest, 'answer'>, value: ReevaluationRequest['answer']) =>
  reevaluate(given, { ...stored, answer: value });

test('approve, nothing changed: the hold becomes spend', (t) => {
  const stored = escalate({ policies: [office()] });
  t.deepEqual(stored.heldWindowIds, [dayWindow('office')]);
  // The window now holds this purchase (30 000) plus 10 000 committed by others.
  const now = input({ amount: AMOUNT, policies: [office()], windows: { [dayWindow('office')]: windowState(10_000n, AMOUNT, 0n, 'counter') } });
  const result = answer(now, stored, 'APPROVE');
  t.is(result.outcome, 'APPROVED');
  t.is(result.kind, 'APPROVAL_REEVALUATION');
  t.false(result.versionsChanged);
  t.deepEqual(result.reasonCodes, ['APPROVAL_THRESHOLD_EXCEEDED']);
  t.deepEqual(result.effects.budget.map((e) => [e.operation, e.windowId, e.amountMinor, e.budgetCounterId]), [
    ['CONVERT_HOLD', dayWindow('office'), AMOUNT, 'counter'],
  ]);
  t.like(result.effects.budget[0].window, { periodKey: '2026-11-21', policyId: 'office' });
  t.deepEqual(result.effects.crossings, []);
  // The budgets are shown with this purchase's own hold taken out.
  t.like(result.budgets[0].current, { heldMinor: 0n, committedMinor: 10_000n });
  t.is(result.budgets[0].simulated.projectedMinor, 40_000n);
});

test('reject: the hold is released and the escalation reasons are given', (t) => {
  const stored = escalate({ policies: [office()] });
  const now = input({ amount: AMOUNT, policies: [office()], windows: { [dayWindow('office')]: windowState(0n, AMOUNT) } });
  const result = answer(now, stored, 'REJECT');
  t.is(result.outcome, 'REJECTED');
  t.deepEqual(result.reasonCodes, ['APPROVAL_THRESHOLD_EXCEEDED']);
  t.regex(result.explanation, /a person declined 300\.00 EUR at Acme Supplies/);
  t.deepEqual(result.effects.budget.map((e) => [e.operation, e.windowId]), [['RELEASE_HOLD', dayWindow('office')]]);
  t.deepEqual(result.effects.crossings, []);
});

test('reject a purchase that would now pass: the stored escalation reasons are given', (t) => {
  const stored = escalate({ policies: [office()] });
  const relaxed = office({ versionNumber: 2, rules: [approvalThreshold(50_000n), dailyBudget(100_000n)] });
  const result = answer(input({ amount: AMOUNT, policies: [relaxed] }), stored, 'REJECT');
  t.is(result.outcome, 'REJECTED');
  t.deepEqual(result.reasonCodes, ['APPROVAL_THRESHOLD_EXCEEDED']);
});

test('the own hold is not counted twice', (t) => {
  const stored = escalate({ policies: [office()], windows: { [dayWindow('office')]: windowState(70_000n) } });
  // 70 000 + own 30 000 = exactly the cap: approved. Counting the hold again would make it 130 000.
  const now = input({ amount: AMOUNT, policies: [office()], windows: { [dayWindow('office')]: windowState(70_000n, AMOUNT) } });
  t.is(answer(now, stored, 'APPROVE').outcome, 'APPROVED');
});

test('approve after the budget filled up meanwhile: rejected, policy changed since escalation', (t) => {
  const stored = escalate({ policies: [office()] });
  const now = input({ amount: AMOUNT, policies: [office()], windows: { [dayWindow('office')]: windowState(80_000n, AMOUNT) } });
  const result = answer(now, stored, 'APPROVE');
  t.is(result.outcome, 'REJECTED');
  t.deepEqual(result.reasonCodes, ['DAILY_LIMIT_EXCEEDED', 'POLICY_CHANGED_SINCE_ESCALATION']);
  t.regex(result.explanation, /^Rejected although a person approved it, because a block applies now: 300\.00 EUR at Acme Supplies would bring/);
  t.deepEqual(result.effects.budget.map((e) => e.operation), ['RELEASE_HOLD']);
});

test('approve after a new version added a block: rejected', (t) => {
  const stored = escalate({ policies: [office()] });
  const stricter = office({ versionNumber: 2, rules: [threshold], merchants: [block('Acme Supplies')] });
  const result = answer(input({ amount: AMOUNT, policies: [stricter] }), stored, 'APPROVE');
  t.is(result.outcome, 'REJECTED');
  t.deepEqual(result.reasonCodes, ['MERCHANT_BLOCKED', 'POLICY_CHANGED_SINCE_ESCALATION']);
  t.true(result.versionsChanged);
});

test('approve after the agent was disabled: rejected', (t) => {
  const stored = escalate({ policies: [office()] });
  const result = answer(input({ amount: AMOUNT, policies: [office()], agent: { ...AGENT, status: 'DISABLED' } }), stored, 'APPROVE');
  t.is(result.outcome, 'REJECTED');
  t.deepEqual(result.reasonCodes, ['AGENT_DISABLED', 'POLICY_CHANGED_SINCE_ESCALATION']);
  t.deepEqual(result.effects.budget.map((e) => [e.operation, e.window]), [['RELEASE_HOLD', null]]);
});

test('approve after a new version that would approve outright: approved', (t) => {
  const stored = escalate({ policies: [office()] });
  const relaxed = office({ versionNumber: 2, rules: [approvalThreshold(50_000n), dailyBudget(100_000n)] });
  const result = answer(input({ amount: AMOUNT, policies: [relaxed], windows: { [dayWindow('office')]: windowState(0n, AMOUNT) } }), stored, 'APPROVE');
  t.true(result.versionsChanged);
  t.is(result.outcome, 'APPROVED');
  t.deepEqual(result.reasonCodes, ['WITHIN_POLICY']);
  t.deepEqual(result.effects.budget.map((e) => e.operation), ['CONVERT_HOLD']);
});

test('approve after a new version that still escalates: rejected, the person did not see it', (t) => {
  const stored = escalate({ policies: [office()] });
  const changed = office({ versionNumber: 2, rules: [approvalThreshold(10_000n)] });
  const result = answer(input({ amount: AMOUNT, policies: [changed] }), stored, 'APPROVE');
  t.is(result.outcome, 'REJECTED');
  t.deepEqual(result.reasonCodes, ['POLICY_CHANGED_SINCE_ESCALATION']);
  t.regex(result.explanation, /Office supplies now asks for an approval the person did not give/);
  t.deepEqual(result.effects.budget.map((e) => e.operation), ['RELEASE_HOLD']);
});

test('approve after another policy changed but passes: approved', (t) => {
  const other = (versionNumber: number) => policy({ id: 'travel', name: 'Travel', versionNumber, rules: [maxPerPurchase(100_000n * BigInt(versionNumber))] });
  const stored = escalate({ policies: [office(), other(1)] });
  const result = answer(input({ amount: AMOUNT, policies: [office(), other(2)] }), stored, 'APPROVE');
  t.true(result.versionsChanged);
  t.is(result.outcome, 'APPROVED');
  t.deepEqual(result.reasonCodes, ['APPROVAL_THRESHOLD_EXCEEDED']);
});

test('approve after a new policy with a budget came into force: the spend is committed there too', (t) => {
  const stored = escalate({ policies: [office()] });
  const added = policy({ id: 'travel', name: 'Travel', rules: [monthlyBudget(35_000n, 'BLOCK', { id: 'month' })] });
  const now = input({ amount: AMOUNT, policies: [office(), added], windows: { [dayWindow('office')]: windowState(0n, AMOUNT) } });
  const result = answer(now, stored, 'APPROVE');
  t.is(result.outcome, 'APPROVED');
  t.deepEqual(result.effects.budget.map((e) => [e.operation, e.windowId]), [
    ['CONVERT_HOLD', dayWindow('office')],
    ['COMMIT', 'travel:EUR:MONTH:2026-11'],
  ]);
  t.deepEqual(result.effects.crossings.map((c) => [c.kind, c.windowId]), [['THRESHOLD_REACHED', 'travel:EUR:MONTH:2026-11']]);
});

test('a hold made yesterday is re-evaluated in yesterday\'s window', (t) => {
  const heldAt = '2026-11-21T22:30:00.000Z'; // 23:30 in Berlin
  const stored = escalate({ policies: [office()], now: heldAt });
  t.deepEqual(stored.heldWindowIds, ['office:EUR:DAY:2026-11-21']);
  const now = input({
    amount: AMOUNT,
    policies: [office()],
    now: '2026-11-22T09:00:00.000Z',
    periodInstant: heldAt,
    windows: { 'office:EUR:DAY:2026-11-21': windowState(70_000n, AMOUNT), 'office:EUR:DAY:2026-11-22': windowState(90_000n) },
  });
  const result = answer(now, stored, 'APPROVE');
  t.is(result.outcome, 'APPROVED');
  t.deepEqual(result.effects.budget.map((e) => [e.operation, e.windowId]), [['CONVERT_HOLD', 'office:EUR:DAY:2026-11-21']]);
  t.is(result.evaluatedAt, '2026-11-22T09:00:00.000Z');
});

test('a hold in a window the policies no longer read is still turned into spend on approval', (t) => {
  const asks = policy({ id: 'office', name: 'Office supplies', rules: [threshold] });
  const budget = (status: 'ACTIVE' | 'DISABLED') => policy({ id: 'budget', name: 'Budget', status, rules: [dailyBudget(100_000n)] });
  const stored = escalate({ policies: [asks, budget('ACTIVE')] });
  t.deepEqual(stored.heldWindowIds, [dayWindow('budget')]);
  const now = input({ amount: AMOUNT, policies: [asks, budget('DISABLED')], windows: { [dayWindow('budget')]: windowState(0n, AMOUNT, 0n, 'counter') } });
  const result = answer(now, stored, 'APPROVE');
  t.is(result.outcome, 'APPROVED');
  t.true(result.versionsChanged);
  t.deepEqual(result.effects.budget.map((e) => [e.operation, e.windowId, e.window, e.budgetCounterId]), [
    ['CONVERT_HOLD', dayWindow('budget'), null, 'counter'],
  ]);
});
