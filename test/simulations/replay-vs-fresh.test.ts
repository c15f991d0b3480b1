// A replay equals, purchase by purchase, the initial decisions of a fresh service running the replayed
// version on the same requests in the same order (docs/integrate/simulations.md#replay,
// docs/reference/decisions.md). Property-based: random organisations (policies of either scope, day and
// month budgets, currencies, merchant lists, time zones), a random draft of one policy, and a random
// stream of purchases, answers, changes of agent and policy status and new versions of the other
// policies, played on a recorded service (version 1 in force) and on a fresh one (the draft in force) at
// the same instants. And the version in force, replayed from any purchase on, changes nothing.
import test from 'ava';
import fc from 'fast-check';
import { activatable, ruleArbitrary } from '../helpers/arbitraries.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { allChanges } from '../helpers/replay.ts';

const BASE = Date.parse('2026-01-01T00:00:00.000Z');
let clock = BASE;
let recordedApp: TestApp;
let freshApp: TestApp;
test.before(async () => {
  recordedApp = await startApp({ now: () => new Date(clock) });
  freshApp = await startApp({ now: () => new Date(clock) });
});
test.after.always(async () => {
  await recordedApp?.close();
  await freshApp?.close();
});

const ZONES = ['Europe/Berlin', 'America/Los_Angeles', 'Asia/Kolkata', 'UTC'];
const CURRENCIES = ['EUR', 'USD'];

const rule = ruleArbitrary(CURRENCIES, { min: 1000, max: 40000 }, { min: 5000, max: 150000 });
// Every content is activated on one service or the other, so only what activation accepts.
const content = fc
  .record({
    currencies: fc.subarray(CURRENCIES, { minLength: 1 }),
    rules: fc.array(rule, { maxLength: 3 }),
    merchants: fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, fc.constant([{ listType: 'BLOCK', label: 'Shady Goods Ltd' }]), fc.constant([{ listType: 'ALLOW', label: 'Paper Co' }])),
  })
  .filter(activatable);
const policy = fc.record({ agents: fc.option(fc.subarray([0, 1], { minLength: 1 }), { nil: null, freq: 2 }), content });

const step = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('purchase' as const),
      agent: fc.nat(1),
      amount: fc.integer({ min: 100, max: 45000 }),
      currency: fc.option(fc.constantFrom(...CURRENCIES), { nil: undefined, freq: 2 }),
      merchant: fc.constantFrom('Paper Co', 'Shady Goods Ltd', 'Coffee Beans'),
      advanceMinutes: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 120 }) }, fc.integer({ min: 1, max: 40 * 60 })),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('answer' as const), answer: fc.constantFrom('APPROVE', 'REJECT') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('policy-status' as const), index: fc.nat(2), status: fc.constantFrom('ACTIVE', 'DISABLED') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('policy-content' as const), index: fc.nat(1), content }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('agent-status' as const), agent: fc.nat(1), status: fc.constantFrom('ENABLED', 'DISABLED') }) },
);

const scenario = fc.record({
  timezone: fc.constantFrom(...ZONES),
  policies: fc.array(policy, { minLength: 1, maxLength: 3 }),
  draft: content,
  steps: fc.array(step, { minLength: 10, maxLength: 40 }),
  cut: fc.nat(),
  // Minutes into 2026 and 2027 the stream starts at (days, months and time-zone changes fall anywhere in it).
  startMinutes: fc.integer({ min: 0, max: 2 * 365 * 24 * 60 }),
});

type Decided = { id: string; outcome: string; reasonCodes: string[]; at: number };
let runs = 0;
const tally = { changed: 0, answered: 0 };

test('a replay of a draft decides every purchase as a fresh service running the draft did', async (t) => {
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      const run = ++runs;
      // Version 1 of policy 0 on the recorded service, the draft on the fresh one; the other policies alike.
      const manifest = (handle: string, statuses: string[], agentStatuses: string[], first: typeof s.draft, activate = true) => ({
        organization: { handle, name: 'Replay property', currency: 'EUR', timezone: s.timezone, approvalTtl: 'P90D' },
        people: [{ handle: 'ana', name: 'Ana', email: `ana@${handle}.example` }],
        agents: agentStatuses.map((status, i) => ({ handle: `a${i}`, name: `Agent ${i}`, status })),
        policies: s.policies.map((p, i) => ({
          handle: `p${i}`,
          name: `Policy ${i}`,
          status: statuses[i],
          scope: p.agents ? 'AGENT' : 'ORGANIZATION',
          ...(p.agents ? { agents: p.agents.map((a) => `a${a}`) } : {}),
          ...(i === 0 ? { ...first, activate } : contents[i]),
        })),
        apiKeys: [{ handle: 'k0', agent: 'a0' }, { handle: 'k1', agent: 'a1' }, { handle: 'org' }],
      });
      const statuses = s.policies.map(() => 'ACTIVE');
      // The other policies' content as it changes (the same changes on both services).
      const contents = s.policies.map((p) => p.content);
      const agentStatuses = ['ENABLED', 'ENABLED'];
      const start = BASE + s.startMinutes * 60_000;
      // The recorded service answers its oldest purchase waiting; the fresh one answers the same purchase
      // when it waits there too (a replay follows the recorded answer of a purchase both escalated; any
      // other hold lasts its 90 days, longer than the stream).
      const answered = new Map<number, number>();
      const play = async (app: TestApp, handle: string, first: typeof s.draft) => {
        clock = start;
        statuses.fill('ACTIVE');
        s.policies.forEach((p, i) => (contents[i] = p.content));
        agentStatuses.fill('ENABLED');
        const org: AppliedOrg = await applyManifest(app, manifest(handle, statuses, agentStatuses, first));
        const decided: Decided[] = [];
        const pending: number[] = [];
        for (const [k, st] of s.steps.entries()) {
          clock += 60_000;
          if (st.kind === 'answer') {
            const i = app === recordedApp ? pending.shift() : answered.get(k);
            if (i === undefined || decided[i].outcome !== 'REQUIRES_APPROVAL') continue;
            answered.set(k, i);
            const res = await app.admin(`/admin/purchase-requests/${decided[i].id}/answer`, { body: { answer: st.answer, person: 'ana' } });
            if (res.status !== 200) throw new Error(`answer: ${res.status} ${res.text}`);
          } else if (st.kind === 'policy-status') {
            statuses[st.index % statuses.length] = st.status;
            const res = await app.admin('/admin/manifests', { body: manifest(handle, statuses, agentStatuses, first) });
            if (res.status !== 200) throw new Error(res.text);
          } else if (st.kind === 'policy-content') {
            if (st.index + 1 >= contents.length) continue;
            contents[st.index + 1] = st.content;
            const res = await app.admin('/admin/manifests', { body: manifest(handle, statuses, agentStatuses, first) });
            if (res.status !== 200) throw new Error(res.text);
          } else if (st.kind === 'agent-status') {
            agentStatuses[st.agent] = st.status;
            const res = await app.admin(`/admin/agents/${org.agents[`a${st.agent}`].id}`, { method: 'PATCH', body: { status: st.status } });
            if (res.status !== 200) throw new Error(res.text);
          } else {
            clock += st.advanceMinutes * 60_000;
            const body = { merchant: st.merchant, amountMinor: String(st.amount), reason: 'property', ...(st.currency ? { currency: st.currency } : {}) };
            const res = await app.request('/v1/purchase-requests', { key: org.keys[`k${st.agent}`], body });
            if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
            decided.push({ id: res.body.purchaseRequest.id, outcome: res.body.decision.outcome, reasonCodes: res.body.decision.reasonCodes, at: clock });
            if (res.body.decision.outcome === 'REQUIRES_APPROVAL') pending.push(decided.length - 1);
          }
        }
        return { org, decided };
      };
      const recorded = await play(recordedApp, `rec-${run}`, s.policies[0].content);
      const fresh = await play(freshApp, `fresh-${run}`, s.draft);
      const end = clock;
      clock += 60_000;
      const draftId = (await applyManifest(recordedApp, manifest(`rec-${run}`, statuses, agentStatuses, s.draft, false))).policies.p0.draftVersionId;
      clock += 60_000;
      if (draftId === null) return; // the draft is version 1 itself
      const body = { policyVersionId: draftId, from: new Date(start).toISOString(), to: new Date(end + 1).toISOString() };
      const replay = (query = '') => recordedApp.request(`/v1/simulations/replay${query}`, { key: recorded.org.keys.org, body });
      const first = await replay('?limit=200');
      if (first.status !== 200) throw new Error(`replay: ${first.status} ${first.text}`);
      const changes = new Map((await allChanges(first, (cursor) => replay(`?limit=200&cursor=${cursor}`))).map((c: any) => [c.purchaseRequestId, c.replayed]));
      tally.changed += changes.size;
      tally.answered += answered.size;
      recorded.decided.forEach((r, i) => {
        const replayed = changes.get(r.id) ?? { outcome: r.outcome, reasonCodes: r.reasonCodes };
        const { at: _, ...f } = fresh.decided[i];
        if (replayed.outcome !== f.outcome || JSON.stringify(replayed.reasonCodes) !== JSON.stringify(f.reasonCodes)) {
          throw new Error(`purchase ${i}: recorded ${JSON.stringify(r)}, replayed ${JSON.stringify(replayed)}, fresh ${JSON.stringify(f)}`);
        }
      });
      // And the version in force throughout, replayed from any purchase on (the windows and the holds as
      // they stood then), changes nothing.
      const from = recorded.decided[s.cut % Math.max(1, recorded.decided.length)]?.at ?? start;
      const same = await recordedApp.request('/v1/simulations/replay?limit=5', {
        key: recorded.org.keys.org,
        body: { policyVersionId: recorded.org.policies.p0.activeVersionId, from: new Date(from).toISOString(), to: new Date(end + 1).toISOString() },
      });
      if (same.status !== 200 || same.body.summary.changed !== 0) throw new Error(`from purchase ${s.cut % recorded.decided.length}: ${same.text}`);
    }),
    // FC_SEED and FC_RUNS explore further (e.g. FC_RUNS=150 over a few seeds); the suite runs a fixed sample.
    { numRuns: Number(process.env.FC_RUNS ?? 30), seed: Number(process.env.FC_SEED ?? 1), includeErrorInReport: true },
  );
  // The sample changes decisions and follows answers (a generator that stopped doing so would prove little).
  t.true(tally.changed > 0 && tally.answered > 0, JSON.stringify(tally));
});
