// Replay over what stood at its start and what changed within it (docs/integrate/simulations.md#replay):
// a purchase still waiting for a person at `from` holds its amount in the replayed windows until its
// recorded answer, and a policy disabled for part of the range decides nothing in that part. Both are
// proven by replays of the active version itself, which must change nothing: without the carried hold
// or the status history, a purchase in the range would be replayed otherwise than it was decided.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { manifest } from '../helpers/replay.ts';

const DAY1 = '2026-07-06';
const DAY2 = '2026-07-07';
let clock = Date.parse(`${DAY1}T06:00:00.000Z`);
const now = () => new Date(clock);
const at = (day: string, time: string) => (clock = Date.parse(`${day}T${time}:00.000Z`));

let app: TestApp;
test.before(async () => {
  app = await startApp({ now });
});
test.after.always(() => app?.close());

async function buy(org: AppliedOrg, merchant: string, amountMinor: number) {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant, amountMinor: String(amountMinor), reason: 'replay history' } });
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return { id: res.body.purchaseRequest.id as string, outcome: res.body.decision.outcome as string, reasonCodes: res.body.decision.reasonCodes as string[] };
}

const answer = async (purchaseId: string, verdict: 'APPROVE' | 'REJECT') => {
  const res = await app.admin(`/admin/purchase-requests/${purchaseId}/answer`, { body: { answer: verdict, person: 'ana' } });
  if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
};

/** The replay manifest with the organisation's fields changed. */
function withOrganization(handle: string, policies: Parameters<typeof manifest>[1], fields: Record<string, string>) {
  const m = manifest(handle, policies);
  return { ...m, organization: { ...m.organization, ...fields } };
}

const replay = (org: AppliedOrg, from: string, to: string, policyVersionId = org.policies.office.activeVersionId) =>
  app.request('/v1/simulations/replay', { key: org.keys['org-key'], body: { policyVersionId, from, to } });

test.serial('a purchase pending at `from` holds its amount in the replayed windows until its recorded answer', async (t) => {
  at(DAY1, '06:00');
  // Approval above 50,000; 100,000 a day.
  const rules = [
    { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '50000' },
    { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '100000', currency: 'EUR' },
  ];
  const org = await applyManifest(app, manifest('replay-carried', [{ rules, merchants: [], activate: true }]));
  const decided: Record<string, { id: string; outcome: string; reasonCodes: string[] }> = {};
  // Day 1: held at 09:00, rejected at 12:00.
  at(DAY1, '09:00');
  const p1 = await buy(org, 'Paper Co', 60000);
  at(DAY1, '10:00');
  decided.p2 = await buy(org, 'Paper Co', 30000);
  at(DAY1, '11:00');
  decided.p3 = await buy(org, 'Paper Co', 30000);
  at(DAY1, '12:00');
  await answer(p1.id, 'REJECT');
  at(DAY1, '13:00');
  decided.p4 = await buy(org, 'Paper Co', 30000);
  // Day 2: held at 09:00, approved at 11:00.
  at(DAY2, '09:00');
  const q1 = await buy(org, 'Paper Co', 60000);
  at(DAY2, '10:00');
  decided.q2 = await buy(org, 'Paper Co', 30000);
  at(DAY2, '11:00');
  await answer(q1.id, 'APPROVE');
  at(DAY2, '12:00');
  decided.q3 = await buy(org, 'Paper Co', 30000);
  at(DAY2, '13:00');
  decided.q4 = await buy(org, 'Paper Co', 5000);
  at(DAY2, '18:00');

  t.is(p1.outcome, 'REQUIRES_APPROVAL');
  t.is(q1.outcome, 'REQUIRES_APPROVAL');
  t.deepEqual(
    Object.fromEntries(Object.entries(decided).map(([k, d]) => [k, d.outcome])),
    { p2: 'APPROVED', p3: 'REJECTED', p4: 'APPROVED', q2: 'APPROVED', q3: 'REJECTED', q4: 'APPROVED' },
    'p3 and q3 were refused only because the held or spent 60,000 counted',
  );
  t.true(decided.p3.reasonCodes.includes('DAILY_LIMIT_EXCEEDED'));

  // From 09:30 on day 1: p1's hold is carried in until its rejection; without it p3 would be approved.
  const day1 = await replay(org, `${DAY1}T09:30:00.000Z`, `${DAY1}T18:00:00.000Z`);
  t.is(day1.status, 200, day1.text);
  t.like(day1.body.summary, { evaluated: 3, changed: 0, unchanged: 3 });
  // From 09:30 on day 2: q1, approved later, is counted once (held, then spent), not as spent and held.
  const day2 = await replay(org, `${DAY2}T09:30:00.000Z`, `${DAY2}T18:00:00.000Z`);
  t.like(day2.body.summary, { evaluated: 3, changed: 0 });
  // Across both days: the carried hold of day 1 and the replay's own hold of day 2.
  const both = await replay(org, `${DAY1}T09:30:00.000Z`, `${DAY2}T18:00:00.000Z`);
  t.like(both.body.summary, { evaluated: 7, changed: 0 });

  // A draft with a smaller budget: p1's carried hold makes p2 refused too (60,000 + 30,000 > 80,000).
  const smaller = [rules[0], { ...rules[1], amountMinor: '80000' }];
  const draftId = (await applyManifest(app, manifest('replay-carried', [{ rules: smaller, merchants: [], activate: false }]))).policies.office.draftVersionId!;
  const draft = await replay(org, `${DAY1}T09:30:00.000Z`, `${DAY1}T18:00:00.000Z`, draftId);
  t.like(draft.body.summary, { evaluated: 3, changed: 1, byTransition: { 'APPROVED->REJECTED': 1 } });
  t.is(draft.body.changes[0].purchaseRequestId, decided.p2.id);
});

test.serial('a replay across a policy disabled for part of the range leaves that policy out of that part only', async (t) => {
  at('2026-08-03', '06:00');
  const office = { rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '50000' }], merchants: [], activate: true };
  const blocklist = (status: string) => ({ handle: 'blocklist', name: 'Blocklist', status, rules: [], merchants: [{ listType: 'BLOCK', label: 'Cheap Stuff' }], activate: true });
  const withBlocklist = (status: string) => manifest('replay-disable', [office, blocklist(status) as unknown as typeof office]);
  const org = await applyManifest(app, withBlocklist('ACTIVE'));
  const outcomes: string[] = [];
  at('2026-08-03', '09:00');
  outcomes.push((await buy(org, 'Cheap Stuff', 1000)).outcome);
  at('2026-08-03', '10:00');
  await applyManifest(app, withBlocklist('DISABLED'));
  at('2026-08-03', '11:00');
  outcomes.push((await buy(org, 'Cheap Stuff', 1000)).outcome);
  at('2026-08-03', '12:00');
  await applyManifest(app, withBlocklist('ACTIVE'));
  at('2026-08-03', '13:00');
  outcomes.push((await buy(org, 'Cheap Stuff', 1000)).outcome);
  at('2026-08-03', '18:00');
  t.deepEqual(outcomes, ['REJECTED', 'APPROVED', 'REJECTED']);

  const policy = await app.store.db.collection<{ _id: string; statusChanges: { from: string; to: string; at: Date }[] }>('policies').findOne({ _id: org.policies.blocklist.id });
  t.deepEqual(
    policy?.statusChanges.map((c: { from: string; to: string; at: Date }) => [c.from, c.to, c.at.toISOString()]),
    [
      ['ACTIVE', 'DISABLED', '2026-08-03T10:00:00.000Z'],
      ['DISABLED', 'ACTIVE', '2026-08-03T12:00:00.000Z'],
    ],
  );
  // Enabled now: the purchase of 11:00 is still replayed without it, as it was decided.
  const res = await replay(org, '2026-08-03T08:00:00.000Z', '2026-08-03T18:00:00.000Z');
  t.is(res.status, 200, res.text);
  t.like(res.body.summary, { evaluated: 3, changed: 0 });
  // A replay of the blocklist's own version across the disable: it decides nothing while disabled.
  const own = await replay(org, '2026-08-03T08:00:00.000Z', '2026-08-03T18:00:00.000Z', org.policies.blocklist.activeVersionId);
  t.like(own.body.summary, { evaluated: 3, changed: 0 });
});

test.serial('a replay of an active version over its own period changes nothing after a policy\'s scope changed since', async (t) => {
  at('2026-08-10', '06:00');
  const office = { rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '100000' }], merchants: [], activate: true };
  // Escalates above 10.00: the buyer's only, then the travel booker's too.
  const strict = (agents: string[]) => ({ handle: 'strict', name: 'Strict', scope: 'AGENT', agents, rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '1000' }], merchants: [], activate: true });
  // Blocks Cheap Stuff: everyone's, then the buyer's only.
  const blocklist = (scope: string, agents: string[]) => ({ handle: 'blocklist', name: 'Blocklist', scope, agents, rules: [], merchants: [{ listType: 'BLOCK', label: 'Cheap Stuff' }], activate: true });
  const org = await applyManifest(app, manifest('replay-scope', [office, strict(['buyer']), blocklist('ORGANIZATION', [])] as (typeof office)[]));
  const travel = async (merchant: string, amountMinor: number) => {
    const res = await app.request('/v1/purchase-requests', { key: org.keys['travel-key'], body: { merchant, amountMinor: String(amountMinor), reason: 'scope' } });
    return res.body.decision as { outcome: string; reasonCodes: string[] };
  };
  at('2026-08-10', '09:00');
  t.like(await travel('Paper Co', 5000), { outcome: 'APPROVED' });
  at('2026-08-10', '10:00');
  t.like(await travel('Cheap Stuff', 500), { outcome: 'REJECTED', reasonCodes: ['MERCHANT_BLOCKED'] });
  at('2026-08-10', '12:00');
  await applyManifest(app, manifest('replay-scope', [office, strict(['buyer', 'travel']), blocklist('AGENT', ['buyer'])] as (typeof office)[]));
  at('2026-08-10', '18:00');
  for (const handle of ['office', 'strict', 'blocklist']) {
    const res = await replay(org, '2026-08-10T08:00:00.000Z', '2026-08-10T18:00:00.000Z', org.policies[handle].activeVersionId);
    t.is(res.status, 200, res.text);
    t.like(res.body.summary, { evaluated: 2, changed: 0 }, `${handle}: ${JSON.stringify(res.body.changes)}`);
  }
});

test.serial('a replay of an active version over its own period changes nothing after the organisation changed time zone', async (t) => {
  const office = { rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '1000' }], merchants: [], activate: true };
  const inZone = (timezone: string) => withOrganization('replay-zone', [office], { timezone });
  at('2026-09-01', '06:00');
  const org = await applyManifest(app, inZone('UTC'));
  // Two days in UTC, one day in Berlin (UTC+2 in September): each purchase alone in its day's budget.
  at('2026-09-01', '23:00');
  t.like(await buy(org, 'Paper Co', 600), { outcome: 'APPROVED' });
  at('2026-09-02', '01:00');
  t.like(await buy(org, 'Paper Co', 600), { outcome: 'APPROVED' });
  at('2026-09-02', '12:00');
  await applyManifest(app, inZone('Europe/Berlin'));
  // Two days in Berlin, one day in UTC.
  at('2026-09-04', '21:30');
  t.like(await buy(org, 'Paper Co', 600), { outcome: 'APPROVED' });
  at('2026-09-04', '22:30');
  t.like(await buy(org, 'Paper Co', 600), { outcome: 'APPROVED' });
  at('2026-09-05', '12:00');
  const res = await replay(org, '2026-09-01T00:00:00.000Z', '2026-09-05T00:00:00.000Z');
  t.is(res.status, 200, res.text);
  t.like(res.body.summary, { evaluated: 4, changed: 0 }, JSON.stringify(res.body.changes));
});

test.serial('a replayed hold expires after the approval TTL in force when its purchase was submitted, not the present one', async (t) => {
  const inForce = { rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '2000' }], merchants: [], activate: true };
  at('2026-09-07', '06:00');
  const org = await applyManifest(app, withOrganization('replay-ttl', [inForce], { approvalTtl: 'PT1H' }));
  for (const [time, amount] of [['08:00', 600], ['10:00', 450]] as const) {
    at('2026-09-07', time);
    t.like(await buy(org, 'Paper Co', amount), { outcome: 'APPROVED' });
  }
  // Approvals last a day from now on (the zone changes with it: both are recorded); a draft asks a person above 5.00 and refuses beyond 10.00 a day.
  at('2026-09-07', '12:00');
  const draft = { rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '500' }, { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '1000' }], merchants: [], activate: false };
  const draftId = (await applyManifest(app, withOrganization('replay-ttl', [draft], { approvalTtl: 'PT24H', timezone: 'UTC' }))).policies.office.draftVersionId!;
  at('2026-09-08', '12:00');
  const res = await replay(org, '2026-09-07T00:00:00.000Z', '2026-09-08T00:00:00.000Z', draftId);
  t.is(res.status, 200, res.text);
  // The first would have waited for a person for an hour, then expired: the second, two hours later, found 4.50 of 10.00 used.
  t.like(res.body.summary, { evaluated: 2, changed: 1, byTransition: { 'APPROVED->REQUIRES_APPROVAL': 1 } }, JSON.stringify(res.body.changes));
});
