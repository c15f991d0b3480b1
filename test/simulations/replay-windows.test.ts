// A replay's budget windows count what the live ones counted (docs/integrate/simulations.md#replay,
// docs/internals/design.md §4 item 6, src/budgets/windows.ts loadWindows): a window opened or first read
// under a new version mid-period counts the spend its policy approved before; a purchase waiting for a
// person is held only in the windows that held it; an approval spends in the windows counting it then.
// Each case replays the version in force throughout, which must change nothing.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { manifest } from '../helpers/replay.ts';

let clock = Date.parse('2026-09-07T06:00:00.000Z');
const at = (time: string) => (clock = Date.parse(`2026-09-07T${time}:00.000Z`));
let app: TestApp;
test.before(async () => {
  app = await startApp({ now: () => new Date(clock) });
});
test.after.always(() => app?.close());

type Rules = { ruleType: string; effect: string; periodKind: string; amountMinor: string; currency?: string }[];
const maximum = { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '100000' };
/** The organisation with `office` (replayed, unchanged) and `extra`, another policy whose rules and status change. */
const withExtra = (handle: string, rules: Rules, status = 'ACTIVE', officeRules: Rules = [maximum]) =>
  manifest(handle, [
    { rules: officeRules, merchants: [], activate: true },
    { handle: 'extra', name: 'Extra', status, rules, merchants: [], activate: true } as unknown as { rules: Rules; merchants: never[]; activate: boolean },
  ]);
const escalateAbove = (amountMinor: string) => ({ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor });
const dayLimit = (amountMinor: string) => ({ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor, currency: 'EUR' });

async function buy(org: AppliedOrg, amountMinor: number) {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: String(amountMinor), reason: 'windows' } });
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return { id: res.body.purchaseRequest.id as string, outcome: res.body.decision.outcome as string };
}
const answer = async (purchaseId: string, verdict: 'APPROVE' | 'REJECT') => {
  const res = await app.admin(`/admin/purchase-requests/${purchaseId}/answer`, { body: { answer: verdict, person: 'ana' } });
  if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
};
const replaySummary = async (org: AppliedOrg, from: string) => {
  const res = await app.request('/v1/simulations/replay', {
    key: org.keys['org-key'],
    body: { policyVersionId: org.policies.office.activeVersionId, from: `2026-09-07T${from}:00.000Z`, to: '2026-09-07T20:00:00.000Z' },
  });
  if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
  return { ...res.body.summary, changes: res.body.changes.map((c: any) => `${c.recorded.outcome}->${c.replayed.outcome}`) };
};

test.serial('a policy that gains a daily limit mid-day counts what it approved earlier that day', async (t) => {
  at('06:00');
  const org = await applyManifest(app, withExtra('windows-gain', []));
  at('08:00');
  t.is((await buy(org, 4000)).outcome, 'APPROVED');
  at('09:00');
  await applyManifest(app, withExtra('windows-gain', [dayLimit('5000')]));
  at('10:00');
  // 4,000 approved at 08:00 count in the window the new version opens: 4,000 + 2,000 > 5,000.
  t.is((await buy(org, 2000)).outcome, 'REJECTED');
  t.like(await replaySummary(org, '07:00'), { evaluated: 2, changed: 0, changes: [] });
});

test.serial('a purchase waiting at the start is held only in the windows that held it', async (t) => {
  at('06:00');
  const org = await applyManifest(app, withExtra('windows-carried', [escalateAbove('3000')]));
  at('08:00');
  const waiting = await buy(org, 4000); // held in no window: no limit read one
  t.is(waiting.outcome, 'REQUIRES_APPROVAL');
  at('09:00');
  await applyManifest(app, withExtra('windows-carried', [escalateAbove('3000'), dayLimit('5000')]));
  at('10:00');
  // The window opened now holds nothing of the 4,000 still waiting: 2,000 is within 5,000.
  t.is((await buy(org, 2000)).outcome, 'APPROVED');
  t.like(await replaySummary(org, '08:30'), { evaluated: 1, changed: 0, changes: [] });
});

test.serial('a purchase waiting at the start stays held in its windows, whatever its answer\'s decision named', async (t) => {
  at('06:00');
  const org = await applyManifest(app, withExtra('windows-answered', [escalateAbove('3000'), dayLimit('5000')]));
  at('08:00');
  const waiting = await buy(org, 4000); // held in the day's window
  t.is(waiting.outcome, 'REQUIRES_APPROVAL');
  at('09:00');
  t.is((await buy(org, 1500)).outcome, 'REJECTED'); // 4,000 held + 1,500 > 5,000
  at('10:00');
  // Disabled, then the approval: no policy governs the purchase any more, so its answer's decision names none.
  await applyManifest(app, withExtra('windows-answered', [escalateAbove('3000'), dayLimit('5000')], 'DISABLED'));
  await answer(waiting.id, 'APPROVE');
  t.like(await replaySummary(org, '08:30'), { evaluated: 1, changed: 0, changes: [] });
});

test.serial('an approval spends in the windows that count it then, though they did not hold it', async (t) => {
  at('06:00');
  // The office escalates above 3,000 throughout; the extra policy gains a daily limit while a purchase waits.
  const officeRules = [maximum, escalateAbove('3000')];
  const org = await applyManifest(app, withExtra('windows-approved', [], 'ACTIVE', officeRules));
  at('08:00');
  const waiting = await buy(org, 4000); // held in no window
  t.is(waiting.outcome, 'REQUIRES_APPROVAL');
  at('09:00');
  await applyManifest(app, withExtra('windows-approved', [dayLimit('6000')], 'ACTIVE', officeRules));
  at('10:00');
  t.is((await buy(org, 1000)).outcome, 'APPROVED'); // opens the day's window: 1,000
  at('11:00');
  await answer(waiting.id, 'APPROVE'); // the re-evaluation commits the 4,000 into it: 5,000
  at('12:00');
  t.is((await buy(org, 1500)).outcome, 'REJECTED'); // 5,000 + 1,500 > 6,000
  t.like(await replaySummary(org, '07:00'), { evaluated: 3, changed: 0, changes: [] });
});

test.serial('a shadow keeps the same windows between its evaluations, and reports what a replay over its lifetime does', async (t) => {
  at('06:00');
  const officeRules = [maximum, escalateAbove('3000')];
  const org = await applyManifest(app, withExtra('windows-shadow', [], 'ACTIVE', officeRules));
  // The draft differs only by a merchant no purchase names: it changes nothing, if its windows are right.
  const draft = manifest('windows-shadow', [
    { rules: officeRules, merchants: [{ listType: 'BLOCK', label: 'Cheap Stuff' }], activate: false },
    { handle: 'extra', name: 'Extra', status: 'ACTIVE', rules: [], merchants: [], activate: true } as never,
  ]);
  const draftId = (await applyManifest(app, draft)).policies.office.draftVersionId!;
  t.is((await app.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: true } })).status, 200);
  // Each step evaluated on its own, so that the shadow's state goes through its document in between.
  const step = async <T>(time: string, action: () => Promise<T>) => {
    at(time);
    const result = await action();
    await app.deps.shadows!.idle();
    return result;
  };
  t.is((await step('07:00', () => buy(org, 500))).outcome, 'APPROVED'); // counted by no window yet
  const waiting = await step('08:00', () => buy(org, 4000));
  await step('09:00', () => applyManifest(app, withExtra('windows-shadow', [dayLimit('6000')], 'ACTIVE', officeRules)));
  t.is((await step('10:00', () => buy(org, 1000))).outcome, 'APPROVED'); // the window opens: 500 + 1,000
  await step('11:00', () => answer(waiting.id, 'APPROVE')); // + 4,000
  t.is((await step('12:00', () => buy(org, 800))).outcome, 'REJECTED'); // 5,500 + 800 > 6,000
  t.is((await step('13:00', () => buy(org, 100))).outcome, 'APPROVED');
  at('20:00');
  const report = await app.request(`/v1/policies/${org.policies.office.id}/versions/${draftId}/shadow`, { key: org.keys['org-key'] });
  t.is(report.status, 200, report.text);
  t.like(report.body.shadow, { pending: 0 });
  const replay = await app.request('/v1/simulations/replay', {
    key: org.keys['org-key'],
    body: { policyVersionId: draftId, from: report.body.shadow.startedAt, to: '2026-09-07T20:00:00.000Z' },
  });
  t.deepEqual(report.body.summary, replay.body.summary);
  t.like(report.body.summary, { evaluated: 5, changed: 0 });
});
