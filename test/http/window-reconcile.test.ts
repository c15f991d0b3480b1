// A budget window counts what its policy approves only while a version whose limits read it is in force,
// and a period is the organisation's zone's. Two ways its spend could go uncounted: the limit is dropped
// and given back (approvals in between wrote no window), or the organisation moves to another zone
// (the day's window of the new zone covers hours the old one's labels do not).
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { currentWindows, pendingApprovals, windowsHeldBy } from '../../src/dashboard/queries.ts';
import { backfillCommittedWindowIds } from '../../src/purchases/projection.ts';

// 21:03 UTC: the 26th in Berlin, the 27th on Kiritimati (UTC+14, whose 27th began at 10:00 UTC on the 26th).
const NOW = new Date('2026-11-26T21:03:00.000Z');

function manifest(handle: string, options: { dailyLimit: boolean; timezone?: string }) {
  return {
    organization: { handle, name: handle, currency: 'EUR', timezone: options.timezone ?? 'Europe/Berlin', approvalTtl: 'PT24H', status: 'ACTIVE' },
    people: [],
    agents: [{ handle: 'buyer', name: 'Buyer', description: null, status: 'ENABLED' }],
    policies: [
      {
        handle: 'budget',
        name: 'Budget',
        description: null,
        status: 'ACTIVE',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        activate: true,
        rules: [
          { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '90000' },
          ...(options.dailyLimit ? [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '100000' }] : []),
        ],
        merchants: [],
      },
    ],
    apiKeys: [{ handle: 'buyer-key', agent: 'buyer' }, { handle: 'org-key' }],
  };
}

let app: TestApp;
test.before(async () => {
  app = await startApp({ now: () => NOW });
});
test.after.always(() => app?.close());

async function buy(key: string, amountMinor: string) {
  const res = await app.request('/v1/purchase-requests', { key, body: { merchant: 'Desks Ltd', amountMinor, reason: 'desk' } });
  if (res.status !== 201) throw new Error(res.text);
  return res.body.decision as { outcome: string; reasonCodes: string[] };
}

test('a daily limit dropped and given back counts what was approved while it was gone', async (t) => {
  const org = await applyManifest(app, manifest('gap', { dailyLimit: true }));
  const key = org.keys['buyer-key'];
  t.is((await buy(key, '60000')).outcome, 'APPROVED');
  await applyManifest(app, manifest('gap', { dailyLimit: false }));
  t.is((await buy(key, '60000')).outcome, 'APPROVED', 'no daily limit in force');
  await applyManifest(app, manifest('gap', { dailyLimit: true }));
  // 120,000 already approved today against a limit of 100,000.
  const decision = await buy(key, '1000');
  t.is(decision.outcome, 'REJECTED');
  t.deepEqual(decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  const simulated = await app.request('/v1/simulations/current-policies', { key, body: { merchant: 'Desks Ltd', amountMinor: '1000', reason: 'desk' } });
  t.like(simulated.body.budgets[0].current, { committedMinor: '60000', openingBalanceMinor: '60000' });
});

test('after a change of zone, the new zone\'s day counts what was approved in its hours', async (t) => {
  const org = await applyManifest(app, manifest('zone', { dailyLimit: true }));
  const key = org.keys['buyer-key'];
  t.is((await buy(key, '80000')).outcome, 'APPROVED');
  t.is((await buy(key, '30000')).outcome, 'REJECTED');
  await applyManifest(app, manifest('zone', { dailyLimit: true, timezone: 'Pacific/Kiritimati' }));
  const decision = await buy(key, '80000');
  t.is(decision.outcome, 'REJECTED', 'the 80,000 approved at 21:03 UTC lies in Kiritimati\'s 27th too');
  t.deepEqual(decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
});

test('after a change of zone, a day whose window exists already is counted over the new zone\'s hours', async (t) => {
  let now = new Date('2026-11-25T20:00:00.000Z');
  const zoned = await startApp({ now: () => now });
  t.teardown(() => zoned.close());
  const org = await applyManifest(zoned, manifest('zone-existing', { dailyLimit: true }));
  const buyOn = async (at: string, amountMinor: string) => {
    now = new Date(at);
    const res = await zoned.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Desks Ltd', amountMinor, reason: 'desk' } });
    return res.body.decision.outcome as string;
  };
  t.is(await buyOn('2026-11-25T20:00:00.000Z', '80000'), 'APPROVED'); // Berlin's 25th
  t.is(await buyOn('2026-11-26T04:00:00.000Z', '10000'), 'APPROVED'); // Berlin's 26th: its window opens
  await applyManifest(zoned, manifest('zone-existing', { dailyLimit: true, timezone: 'Pacific/Kiritimati' }));
  // Kiritimati's 26th runs from 10:00 UTC on the 25th to 10:00 UTC on the 26th: 90,000 approved in it.
  t.is(await buyOn('2026-11-26T05:00:00.000Z', '80000'), 'REJECTED');
  t.is(await buyOn('2026-11-26T05:00:00.000Z', '10000'), 'APPROVED');
  const window = await zoned.store.db.collection('budget_windows').findOne({ organizationId: org.organizationId, periodKind: 'DAY', periodKey: '2026-11-26' });
  // The 80,000 committed into Berlin's 25th is the opening balance; what committed into this window
  // (10,000, then 10,000 more) stays its committed amount.
  t.like(window, { periodStart: new Date('2026-11-25T10:00:00.000Z'), periodEnd: new Date('2026-11-26T10:00:00.000Z'), openingBalanceMinor: 80000, committedMinor: 20000 });
});

test('a window moved by a change of zone, then reconciled under another version, counts everything once', async (t) => {
  let now = new Date('2026-11-26T05:00:00.000Z');
  const zoned = await startApp({ now: () => now });
  t.teardown(() => zoned.close());
  const org = await applyManifest(zoned, manifest('zone-then-gap', { dailyLimit: true }));
  const buyAt = async (at: string, amountMinor: string) => {
    now = new Date(at);
    const res = await zoned.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Desks Ltd', amountMinor, reason: 'desk' } });
    return res.body.decision.outcome as string;
  };
  t.is(await buyAt('2026-11-26T05:00:00.000Z', '50000'), 'APPROVED'); // Berlin's 26th
  await applyManifest(zoned, manifest('zone-then-gap', { dailyLimit: true, timezone: 'Pacific/Kiritimati' }));
  t.is(await buyAt('2026-11-26T06:00:00.000Z', '1000'), 'APPROVED'); // Kiritimati's 26th: the window moves
  await applyManifest(zoned, manifest('zone-then-gap', { dailyLimit: false, timezone: 'Pacific/Kiritimati' }));
  t.is(await buyAt('2026-11-26T07:00:00.000Z', '40000'), 'APPROVED', 'no daily limit in force');
  await applyManifest(zoned, manifest('zone-then-gap', { dailyLimit: true, timezone: 'Pacific/Kiritimati' }));
  // 91,000 approved in Kiritimati's 26th: another 20,000 would take it past 100,000.
  t.is(await buyAt('2026-11-26T08:00:00.000Z', '20000'), 'REJECTED');
  t.is(await buyAt('2026-11-26T08:00:00.000Z', '9000'), 'APPROVED', 'up to the limit exactly');
});

test('a purchase held under a policy, approved after the policy stopped covering its agent, is counted once when the limit comes back', async (t) => {
  // P covers the buyer with an approval threshold and a daily limit; Q governs every agent with nothing to say.
  const covering = (version: 'held' | 'no-limit' | 'dropped' | 'back') => ({
    organization: { handle: 'drift', name: 'drift', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT24H', status: 'ACTIVE' },
    people: [{ handle: 'ana', name: 'Ana', email: 'ana@drift.example' }],
    agents: [
      { handle: 'buyer', name: 'Buyer', description: null, status: 'ENABLED' },
      { handle: 'other', name: 'Other', description: null, status: 'ENABLED' },
    ],
    policies: [
      {
        handle: 'p',
        name: 'P',
        description: null,
        status: 'ACTIVE',
        scope: 'AGENT',
        agents: [version === 'dropped' ? 'other' : 'buyer'],
        currencies: ['EUR'],
        activate: true,
        rules: [
          ...(version === 'held' ? [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '20000' }] : []),
          ...(version === 'held' || version === 'back' ? [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '100000' }] : []),
        ],
        merchants: [],
      },
      {
        handle: 'q',
        name: 'Q',
        description: null,
        status: 'ACTIVE',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        activate: true,
        rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '90000' }],
        merchants: [],
      },
    ],
    apiKeys: [{ handle: 'buyer-key', agent: 'buyer' }],
  });
  const org = await applyManifest(app, covering('held'));
  const key = org.keys['buyer-key'];
  const held = await app.request('/v1/purchase-requests', { key, body: { merchant: 'Desks Ltd', amountMinor: '30000', reason: 'desk' } });
  t.is(held.body.decision.outcome, 'REQUIRES_APPROVAL', 'held in P\'s daily window');
  await applyManifest(app, covering('no-limit'));
  t.is((await buy(key, '50000')).outcome, 'APPROVED', 'P\'s spend while it has no daily limit: no window counts it');
  await applyManifest(app, covering('dropped'));
  const answered = await app.admin(`/admin/purchase-requests/${held.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(answered.status, 200, answered.text);
  t.is(answered.body.purchase.status, 'APPROVED', 'the hold commits into P\'s window, though P no longer covers the buyer');
  await applyManifest(app, covering('back'));
  // P's window counts the 30,000 committed into it and the 50,000 approved under P while it had no
  // limit: 80,000. Another 30,000 would take the day to 110,000.
  const decision = await buy(key, '30000');
  t.is(decision.outcome, 'REJECTED');
  t.deepEqual(decision.reasonCodes, ['DAILY_LIMIT_EXCEEDED']);
  t.is((await buy(key, '20000')).outcome, 'APPROVED', 'up to the limit exactly');
});

test('validate and the dashboard show the reconciled window a decision would count against, not the stored one', async (t) => {
  const org = await applyManifest(app, manifest('shown', { dailyLimit: true }));
  const key = org.keys['buyer-key'];
  t.is((await buy(key, '60000')).outcome, 'APPROVED');
  await applyManifest(app, manifest('shown', { dailyLimit: false }));
  t.is((await buy(key, '30000')).outcome, 'APPROVED', 'no daily limit in force: its window is not written');
  // The limit comes back as a draft: the stored window says 0 opening + 60,000 committed; a decision
  // under the draft would count the 30,000 approved meanwhile too.
  const draft = { ...manifest('shown', { dailyLimit: true }) };
  draft.policies = [{ ...draft.policies[0], activate: false }];
  const drafted = await applyManifest(app, draft);
  const policy = drafted.policies.budget;
  const validated = await app.request(`/v1/policies/${policy.id}/versions/${policy.draftVersionId}/validate`, { method: 'POST', key: org.keys['org-key'] });
  t.is(validated.status, 200, validated.text);
  t.deepEqual(validated.body.budgetImpact, [
    {
      attributableMinor: '90000',
      currency: 'EUR',
      limits: [{ effect: 'BLOCK', limitMinor: '100000', remainingMinor: '10000' }],
      openingBalanceMinor: '30000',
      periodKey: '2026-11-26',
      periodKind: 'DAY',
      reservedMinor: '60000',
    },
  ]);
  await applyManifest(app, manifest('shown', { dailyLimit: true }));
  const organization = (await app.deps.collections.organizations.findOne({ _id: org.organizationId }))!;
  const [window] = await currentWindows(app.deps, organization, NOW);
  t.like(window, { committedMinor: 60000n, openingBalanceMinor: 30000n, heldMinor: 0n }, 'the budgets page counts what the next decision counts');
  t.is((await buy(key, '10001')).outcome, 'REJECTED', 'and so does the decision');
});

test('analytics rows written before committedWindowIds are completed at start, and then counted once', async (t) => {
  const org = await applyManifest(app, manifest('upgraded', { dailyLimit: true }));
  const key = org.keys['buyer-key'];
  t.is((await buy(key, '60000')).outcome, 'APPROVED');
  // As the previous release wrote it: no committedWindowIds.
  await app.store.db.collection('analytics_purchases').updateMany({ organizationId: org.organizationId }, { $unset: { committedWindowIds: '' } });
  await app.store.db.collection('migrations').deleteMany({});
  t.true((await backfillCommittedWindowIds(app.store.db)) >= 1);
  t.is(await backfillCommittedWindowIds(app.store.db), 0, 'a second start finds it done');
  // A new version of the policy (another per-request cap) reconciles the window: the 60,000 is in it once.
  const changed = manifest('upgraded', { dailyLimit: true });
  changed.policies[0].rules[0] = { ...changed.policies[0].rules[0], amountMinor: '80000' };
  await applyManifest(app, changed);
  t.is((await buy(key, '30000')).outcome, 'APPROVED', '60,000 + 30,000 fits in 100,000');
  t.is((await buy(key, '10001')).outcome, 'REJECTED');
});

test('a held purchase\'s windows, on the inbox and its page, show what its answer will count against, not the stored window', async (t) => {
  // A person is asked above 50,000; the daily limit is dropped and given back while the purchase waits.
  const withApproval = (dailyLimit: boolean) => {
    const m = manifest('held-shown', { dailyLimit });
    m.policies[0].rules.push({ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '50000' });
    return m;
  };
  const org = await applyManifest(app, withApproval(true));
  const key = org.keys['buyer-key'];
  t.is((await buy(key, '60000')).outcome, 'REQUIRES_APPROVAL');
  const held = (await app.store.db.collection<{ _id: string; windowIds: string[] }>('purchases').findOne({ organizationId: org.organizationId }))!;
  await applyManifest(app, withApproval(false));
  t.is((await buy(key, '30000')).outcome, 'APPROVED', 'no daily limit in force: its window is not written');
  await applyManifest(app, withApproval(true));
  // Stored: opening 0, held 60,000. The answer's decision counts the 30,000 approved meanwhile too.
  const [onPage] = await windowsHeldBy(app.deps, org.organizationId, held.windowIds);
  t.like(onPage, { openingBalanceMinor: 30000n, heldMinor: 60000n, committedMinor: 0n });
  const [item] = await pendingApprovals(app.deps, org.organizationId, NOW);
  t.like(item.windows[0], { openingBalanceMinor: 30000n, heldMinor: 60000n });
});
