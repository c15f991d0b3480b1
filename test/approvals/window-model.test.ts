// Budget windows against the purchases they count. Random sequences of submissions,
// answers, expiries, archives (which cancel) and policy changes (scope, DAY and MONTH limits, approval threshold, activation or
// a draft, status) run through the HTTP surface, one organisation per run, and after every step every
// window of the organisation is checked against what the recorded purchases say
// (docs/reference/contract.md §2.6, docs/internals/design.md §4 item 6):
//
//   - heldMinor      = the purchases waiting for a person whose windowIds name the window;
//   - committedMinor = the approved purchases whose amount committed into it (analytics committedWindowIds);
//   - what the next decision counts (the current-policies simulation, which reads windows as a decision
//     does: reconciled, src/budgets/windows.ts loadWindows): committed + opening = the approved purchases
//     of the period that committed into the window or were approved under its policy (analytics
//     policyIds), each once; held as stored. loadWindows grows the opening balance of a window read
//     under another version than the one that last wrote it to the policy's approved spend that did not
//     commit into it, and never lowers it: this is exact as long as every approval under the version
//     that last wrote a window commits into it, and the stored opening balance never counts more;
//   - never overspent: right after a purchase is approved or held, every BLOCK limit in force over its
//     agent's windows of that period still covers committed + held + opening. (A window may be over a
//     limit that was absent, or a REQUIRE_APPROVAL limit, when its spend was decided.)
//
// Scope and status are the policy's, not a version's: a manifest with `activate: false` changes them at
// once and leaves only the rules in a draft. The organisation never changes zone here: a window rebased
// onto another zone's hours starts its committed amount again (test/http/window-reconcile.test.ts).
//
// Also checked: a refusal is what the store's windows decide right after it, and what each process's
// actor remembers of a window is never ahead of the store (src/budgets/window-state.ts rememberWindows).
// Two submissions may be made at once; a setting runs each step from one of two processes over one store.
//
// MODEL_RUNS=1000 (and MODEL_SEED=<seed> to replay a failure) runs more sequences than the default.
import test from 'ava';
import fc from 'fast-check';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { expireApproval } from '../../src/approvals/close.ts';
import { windowId } from '../../src/engine/periods.ts';
import { uuidForName } from '../../src/ids.ts';
import { dayOf, periodOf } from '../helpers/windows.ts';

const AGENTS = ['a', 'b'] as const;
type AgentHandle = (typeof AGENTS)[number];
const TTL_MS = 60 * 60 * 1000; // approvalTtl PT1H

interface Variant {
  scope: 'ORGANIZATION' | AgentHandle | 'both';
  dayLimit: number | null;
  /** BLOCK refuses past the DAY limit; REQUIRE_APPROVAL asks a person instead (holds may then pile past it). */
  dayEffect: 'BLOCK' | 'REQUIRE_APPROVAL';
  monthLimit: number | null;
  threshold: number | null;
  status: 'ACTIVE' | 'DISABLED';
}

/** `by`: the process that runs the step (in a setting with two processes; the only one otherwise). */
type Step = { by: 0 | 1 } & (
  | { kind: 'submit'; agent: AgentHandle; amount: number; minutes: number }
  /** Two submissions at once: from both processes, or one after the other in the same mailbox. */
  | { kind: 'race'; agents: [AgentHandle, AgentHandle]; amounts: [number, number]; minutes: number }
  | { kind: 'answer'; pick: number; answer: 'APPROVE' | 'REJECT'; minutes: number }
  | { kind: 'expire'; pick: number; minutes: number }
  /** The agent archived (its pending purchases cancelled, their holds released), then enabled again. */
  | { kind: 'archive'; agent: AgentHandle; minutes: number }
  | { kind: 'policy'; policy: number; variant: Variant; activate: boolean; minutes: number }
);

// Limits and amounts on one grid, small enough that a few purchases reach a limit, often exactly.
const variantArb: fc.Arbitrary<Variant> = fc.record({
  scope: fc.constantFrom('ORGANIZATION' as const, 'both' as const, 'both' as const, 'a' as const, 'b' as const),
  dayLimit: fc.constantFrom(null, 10_000, 15_000, 25_000),
  dayEffect: fc.constantFrom('BLOCK' as const, 'BLOCK' as const, 'BLOCK' as const, 'REQUIRE_APPROVAL' as const),
  monthLimit: fc.constantFrom(null, null, null, 20_000),
  threshold: fc.constantFrom(null, 3_000, 6_000),
  status: fc.constantFrom('ACTIVE' as const, 'ACTIVE' as const, 'ACTIVE' as const, 'ACTIVE' as const, 'DISABLED' as const),
});
const minutesArb = fc.integer({ min: 0, max: 10 });
const amountArb = fc.integer({ min: 1, max: 16 }).map((n) => n * 500);
const stepKindArb = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('submit' as const), agent: fc.constantFrom(...AGENTS), amount: amountArb, minutes: minutesArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('race' as const), agents: fc.tuple(fc.constantFrom(...AGENTS), fc.constantFrom(...AGENTS)), amounts: fc.tuple(amountArb, amountArb), minutes: minutesArb }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('answer' as const), pick: fc.nat(7), answer: fc.constantFrom('APPROVE' as const, 'APPROVE' as const, 'REJECT' as const), minutes: minutesArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expire' as const), pick: fc.nat(7), minutes: minutesArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('archive' as const), agent: fc.constantFrom(...AGENTS), minutes: minutesArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('policy' as const), policy: fc.nat(1), variant: variantArb, activate: fc.boolean(), minutes: minutesArb }) },
);
const stepArb: fc.Arbitrary<Step> = fc.tuple(stepKindArb, fc.constantFrom(0 as const, 1 as const)).map(([step, by]) => ({ ...step, by }));
const scenarioArb = fc.record({
  // Minutes after midnight in Berlin: runs that start late cross into the next day.
  startMinute: fc.integer({ min: 6 * 60, max: 23 * 60 + 30 }),
  policies: fc.array(variantArb, { minLength: 1, maxLength: 2 }),
  steps: fc.array(stepArb, { minLength: 10, maxLength: 30 }),
});

type Content = Pick<Variant, 'dayLimit' | 'dayEffect' | 'monthLimit' | 'threshold'>;

/** One policy as the manifest declares it: its policy-level fields and the content of its active version. */
interface DeclaredPolicy {
  handle: string;
  fields: Pick<Variant, 'scope' | 'status'>;
  active: Content;
}

const contentOf = ({ dayLimit, dayEffect, monthLimit, threshold }: Variant): Content => ({ dayLimit, dayEffect, monthLimit, threshold });

const rulesOf = (v: Content) => [
  ...(v.threshold === null ? [] : [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: String(v.threshold) }]),
  ...(v.dayLimit === null ? [] : [{ ruleType: 'SPEND_LIMIT', effect: v.dayEffect, periodKind: 'DAY', amountMinor: String(v.dayLimit) }]),
  ...(v.monthLimit === null ? [] : [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: String(v.monthLimit) }]),
];

function policyEntry(p: DeclaredPolicy, content: Content, activate: boolean) {
  const scope = p.fields.scope;
  return {
    handle: p.handle,
    name: p.handle.toUpperCase(),
    description: null,
    status: p.fields.status,
    scope: scope === 'ORGANIZATION' ? 'ORGANIZATION' : 'AGENT',
    ...(scope === 'ORGANIZATION' ? {} : { agents: scope === 'both' ? [...AGENTS] : [scope] }),
    currencies: ['EUR'],
    activate,
    rules: rulesOf(content),
    merchants: [],
  };
}

function manifest(handle: string, zone: string, policies: { declared: DeclaredPolicy; content: Content; activate: boolean }[]) {
  return {
    organization: { handle, name: handle, currency: 'EUR', timezone: zone, approvalTtl: 'PT1H', status: 'ACTIVE' },
    people: [{ handle: 'ana', name: 'Ana', email: `ana@${handle}.example` }],
    agents: AGENTS.map((a) => ({ handle: a, name: `Agent ${a}`, description: null, status: 'ENABLED' })),
    policies: policies.map((p) => policyEntry(p.declared, p.content, p.activate)),
    apiKeys: AGENTS.map((a) => ({ handle: `${a}-key`, agent: a })),
  };
}

let now = new Date('2026-01-01T00:00:00.000Z');
let app: TestApp;
/**
 * A second process over the same store (its own organisation actors, config cache and mailboxes): what one
 * actor remembers of the windows is then often stale, moved by the other since.
 */
let other: TestApp;
test.before(async () => {
  app = await startApp({ now: () => now });
  other = await startApp({ store: app.store, now: () => now });
});
test.after.always(async () => {
  await other?.close();
  await app?.close();
});

interface PurchaseRow {
  _id: string;
  agentId: string;
  status: string;
  amountMinor: number;
  windowIds: string[];
  approvalId: string | null;
  requestedAt: Date;
}
interface AnalyticsRow {
  _id: string;
  status: string;
  amountMinor: number;
  currency: string;
  policyIds: string[];
  committedWindowIds?: string[];
  requestedAt: Date;
}
interface WindowRow {
  _id: string;
  policyId: string;
  periodKind: 'DAY' | 'MONTH';
  periodKey: string;
  periodStart: Date;
  periodEnd: Date;
  committedMinor: number;
  heldMinor: number;
  openingBalanceMinor: number;
  policyVersionId: string;
  version: number;
}
interface SimulatedBudget {
  budgetCounterId: string | null;
  currency: string;
  policyId: string;
  policyVersionId: string;
  periodKind: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string;
  current: { committedMinor: string; heldMinor: string; openingBalanceMinor: string };
  limits: { effect: string; limitMinor: string }[];
}

const sum = (rows: { amountMinor: number }[]) => rows.reduce((total, r) => total + BigInt(r.amountMinor), 0n);

let runs = 0;
/** How often the interesting cases came up, logged so that a change of the generators that loses them shows. */
const seen = new Map<string, number>();
const saw = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);

/**
 * Where and when the runs happen: the organisation's zone, and the run's first instant from the scenario's
 * startMinute. Each is a test of its own, run one after the other (they share the clock and `seen`).
 */
interface Setting {
  zone: string;
  start: (startMinute: number) => Date;
  runs: number;
  /** What the sequences must have reached: each comes up several times a run on average. */
  reached: string[];
  /** Two processes over one store run the steps, each the one its step names; one by default. */
  processes?: 2;
}

const modelTest = (title: string, setting: Setting) => test.serial(title, async (t) => {
  let steps = 0;
  seen.clear();
  await fc.assert(
    fc.asyncProperty(scenarioArb, async ({ startMinute, policies: initial, steps: sequence }) => {
      const run = runs++;
      const handle = `model-${run}`;
      // Windows are the policy's, and every run has policies of its own: runs can all start on the same day.
      now = setting.start(startMinute);
      const declared: DeclaredPolicy[] = initial.map((v, i) => ({ handle: `p${i}`, fields: { scope: v.scope, status: v.status }, active: contentOf(v) }));
      const unchanged = () => declared.map((d) => ({ declared: d, content: d.active, activate: true }));
      const org = await applyManifest(app, manifest(handle, setting.zone, unchanged()));
      const agentIds = new Map(AGENTS.map((a) => [org.agents[a].id, a]));
      const db = app.store.db;
      const trace: string[] = [`${now.toISOString()} start ${JSON.stringify(initial)}`];

      const pendingPurchases = async () =>
        (await db.collection<PurchaseRow>('purchases').find({ organizationId: org.organizationId, status: 'PENDING_APPROVAL' }).toArray()).sort((x, y) => x._id.localeCompare(y._id));

      const simulation = async (agent: AgentHandle, amount: number) => {
        const res = await app.request('/v1/simulations/current-policies', { key: org.keys[`${agent}-key`], body: { merchant: 'Desks Ltd', amountMinor: String(amount), reason: 'model check' } });
        if (res.status !== 200) throw new Error(`simulation refused: ${res.status} ${res.text}`);
        return res.body as { budgets: SimulatedBudget[]; simulatedDecision: { outcome: string; reasonCodes: string[] } };
      };
      const simulate = async (agent: AgentHandle): Promise<SimulatedBudget[]> => (await simulation(agent, 1)).budgets;

      /** The invariants; `decided` names the purchases just approved or held, whose agents' limits must still hold. */
      const check = async (decided: PurchaseRow[]) => {
        const where = () => `after steps:\n  ${trace.join('\n  ')}`;
        const windows = await db.collection<WindowRow>('budget_windows').find({ organizationId: org.organizationId }).toArray();
        const purchases = await db.collection<PurchaseRow>('purchases').find({ organizationId: org.organizationId }).toArray();
        const rows = await db.collection<AnalyticsRow>('analytics_purchases').find({ organizationId: org.organizationId }).toArray();
        const approved = rows.filter((r) => r.status === 'APPROVED');
        const byId = new Map(windows.map((w) => [w._id, w]));
        for (const p of purchases) {
          if (p.status === 'PENDING_APPROVAL') for (const id of p.windowIds) if (!byId.has(id)) throw new Error(`purchase ${p._id} holds a window that does not exist: ${id}; ${where()}`);
        }
        // What each process's actor remembers is stale at worst, never ahead of the store nor other than it at the same version.
        for (const process of new Set([app, ...(setting.processes === 2 ? [other] : [])])) {
          for (const [id, doc] of process.deps.actors.memory(org.organizationId).windows ?? []) {
            const stored = byId.get(id);
            if (!stored || stored.version < doc.version) throw new Error(`window ${id} remembered at version ${doc.version}, stored at ${stored?.version}; ${where()}`);
            if (stored.version === doc.version && (stored.committedMinor !== doc.committedMinor || stored.heldMinor !== doc.heldMinor || stored.openingBalanceMinor !== doc.openingBalanceMinor)) {
              throw new Error(`window ${id} remembered at its stored version ${doc.version} with other amounts; ${where()}`);
            }
          }
        }
        for (const w of windows) {
          const held = sum(purchases.filter((p) => p.status === 'PENDING_APPROVAL' && p.windowIds.includes(w._id)));
          const committed = sum(approved.filter((r) => (r.committedWindowIds ?? []).includes(w._id)));
          if (BigInt(w.heldMinor) !== held) throw new Error(`window ${w._id} holds ${w.heldMinor}, its pending purchases ${held}; ${where()}`);
          if (BigInt(w.committedMinor) !== committed) throw new Error(`window ${w._id} committed ${w.committedMinor}, its approved purchases ${committed}; ${where()}`);
          // Its period is the local day or month, from its first instant to the next one's, apart from the engine.
          const [start, end] = [w.periodStart.getTime(), w.periodEnd.getTime()];
          const inside = (ms: number) => periodOf(w.periodKind, new Date(ms), setting.zone) === w.periodKey;
          if (!inside(start) || inside(start - 1) || !inside(end - 1) || inside(end)) throw new Error(`window ${w._id} spans ${w.periodStart.toISOString()} to ${w.periodEnd.toISOString()}, not its local period; ${where()}`);
        }
        for (const agent of AGENTS) {
          for (const b of await simulate(agent)) {
            const id = windowId({ ...b, periodKind: b.periodKind as 'DAY' | 'MONTH' });
            const stored = byId.get(id);
            if (b.budgetCounterId !== (stored ? uuidForName(id) : null)) throw new Error(`simulation of ${agent} reads window ${b.budgetCounterId}, stored ${stored?._id}; ${where()}`);
            const current = { committed: BigInt(b.current.committedMinor), held: BigInt(b.current.heldMinor), opening: BigInt(b.current.openingBalanceMinor) };
            const start = new Date(b.periodStart).getTime();
            const end = new Date(b.periodEnd).getTime();
            const inPeriod = approved.filter((r) => r.currency === b.currency && r.requestedAt.getTime() >= start && r.requestedAt.getTime() < end);
            const counted = sum(inPeriod.filter((r) => (r.committedWindowIds ?? []).includes(id) || r.policyIds.includes(b.policyId)));
            const label = `window ${id} as ${agent}'s next decision reads it (${JSON.stringify(b.current)})`;
            if (current.committed !== BigInt(stored?.committedMinor ?? 0)) throw new Error(`${label}: committed differs from the stored ${stored?.committedMinor}; ${where()}`);
            if (current.held !== BigInt(stored?.heldMinor ?? 0)) throw new Error(`${label}: held differs from the stored ${stored?.heldMinor}; ${where()}`);
            if (current.opening < BigInt(stored?.openingBalanceMinor ?? 0)) throw new Error(`${label}: opening below the stored ${stored?.openingBalanceMinor}; ${where()}`);
            if (current.opening > BigInt(stored?.openingBalanceMinor ?? 0)) saw('reconciled opening grows');
            if (current.opening > 0n) saw('window with an opening balance');
            if (inPeriod.some((r) => (r.committedWindowIds ?? []).includes(id) && !r.policyIds.includes(b.policyId))) saw('committed outside its policy');
            if (current.committed + current.opening !== counted) throw new Error(`${label}: counts ${current.committed + current.opening} spent, the approved purchases of the period under its policy or in it ${counted}; ${where()}`);
            for (const p of decided) {
              if (agentIds.get(p.agentId) !== agent || p.requestedAt.getTime() < start || p.requestedAt.getTime() >= end) continue;
              const used = current.committed + current.held + current.opening;
              for (const limit of b.limits) {
                if (limit.effect === 'BLOCK' && used > BigInt(limit.limitMinor)) {
                  throw new Error(`${label}: ${used} used over the BLOCK limit ${limit.limitMinor} in force when purchase ${p._id} was ${p.status}; ${where()}`);
                }
              }
            }
          }
        }
      };

      await check([]);
      const startDay = now.getTime();
      const processes = setting.processes === 2 ? [app, other] : [app, app];
      /**
       * Submits from `by`; the purchase is one of `decided` when it was approved or held. A refusal (which
       * moves no window) is, when `alone`, what the store's windows decide right after it: never a refusal
       * on windows an actor remembered stale.
       */
      const submit = async (by: TestApp, agent: AgentHandle, amount: number, decided: PurchaseRow[], alone: boolean) => {
        const res = await by.request('/v1/purchase-requests', { key: org.keys[`${agent}-key`], body: { merchant: 'Desks Ltd', amountMinor: String(amount), reason: 'desk' } });
        if (res.status !== 201) throw new Error(`submission refused: ${res.status} ${res.text}`);
        const p = await db.collection<PurchaseRow>('purchases').findOne({ _id: res.body.purchaseRequest.id });
        for (const code of res.body.decision.reasonCodes) saw(`submit ${code}`);
        const line = `${agent} ${amount}: ${p!.status} ${res.body.decision.reasonCodes.join(',')}`;
        if (p!.status === 'APPROVED' || p!.status === 'PENDING_APPROVAL') decided.push(p!);
        else if (alone) {
          const { simulatedDecision } = await simulation(agent, amount);
          if (simulatedDecision.outcome !== res.body.decision.outcome) {
            throw new Error(`submission ${line} decided ${res.body.decision.outcome}, the store's windows ${simulatedDecision.outcome} (${simulatedDecision.reasonCodes.join(',')}); after steps:\n  ${trace.join('\n  ')}`);
          }
        }
        return line;
      };
      for (const step of sequence) {
        now = new Date(now.getTime() + step.minutes * 60_000);
        steps++;
        const by = processes[step.by];
        const decided: PurchaseRow[] = [];
        switch (step.kind) {
          case 'submit': {
            trace.push(`${now.toISOString()} submit ${await submit(by, step.agent, step.amount, decided, true)} (process ${step.by})`);
            break;
          }
          case 'race': {
            const [first, second] = await Promise.all([submit(by, step.agents[0], step.amounts[0], decided, false), submit(processes[1 - step.by], step.agents[1], step.amounts[1], decided, false)]);
            trace.push(`${now.toISOString()} at once: submit ${first} (process ${step.by}), submit ${second} (process ${1 - step.by})`);
            break;
          }
          case 'answer': {
            const pending = await pendingPurchases();
            if (pending.length === 0) {
              trace.push(`${now.toISOString()} answer: nothing pending`);
              break;
            }
            const target = pending[step.pick % pending.length];
            const res = await by.admin(`/admin/purchase-requests/${target._id}/answer`, { body: { answer: step.answer, person: 'ana' } });
            // An approval past its expiry can no longer be answered (it waits for the expiry).
            if (res.status !== 200 && !(res.status === 409 && target.requestedAt.getTime() + TTL_MS <= now.getTime())) throw new Error(`answer refused: ${res.status} ${res.text}`);
            const p = await db.collection<PurchaseRow>('purchases').findOne({ _id: target._id });
            trace.push(`${now.toISOString()} answer ${target.amountMinor} of ${agentIds.get(target.agentId)} ${step.answer}: ${res.status} ${p!.status} ${res.body?.purchase?.decision?.reasonCodes?.join(',') ?? ''} (process ${step.by})`);
            if (p!.status === 'APPROVED') decided.push(p!);
            if (res.status === 200) for (const code of res.body.purchase.decision.reasonCodes) saw(`answer ${p!.status} ${code}`);
            break;
          }
          case 'expire': {
            const pending = await pendingPurchases();
            if (pending.length === 0) {
              trace.push(`${now.toISOString()} expire: nothing pending`);
              break;
            }
            const target = pending[step.pick % pending.length];
            const approval = await db.collection<{ _id: string; expiresAt: Date }>('approvals').findOne({ _id: target.approvalId! });
            if (approval!.expiresAt.getTime() > now.getTime()) now = new Date(approval!.expiresAt.getTime() + 1000);
            const expired = await expireApproval(by.deps, approval!._id);
            if (!expired) throw new Error(`approval ${approval!._id} of a pending purchase was not expired`);
            trace.push(`${now.toISOString()} expire ${target.amountMinor} of ${agentIds.get(target.agentId)} (process ${step.by})`);
            break;
          }
          case 'archive': {
            const held = (await pendingPurchases()).filter((p) => p.agentId === org.agents[step.agent].id).length;
            for (const status of ['ARCHIVED', 'ENABLED']) {
              const res = await by.admin(`/admin/agents/${org.agents[step.agent].id}`, { method: 'PATCH', body: { status } });
              if (res.status !== 200) throw new Error(`agent ${status} refused: ${res.status} ${res.text}`);
            }
            const left = (await pendingPurchases()).filter((p) => p.agentId === org.agents[step.agent].id).length;
            if (left !== 0) throw new Error(`${left} purchases of archived agent ${step.agent} still pending`);
            if (held > 0) saw('archive cancels');
            trace.push(`${now.toISOString()} archive ${step.agent}: ${held} cancelled (process ${step.by})`);
            break;
          }
          case 'policy': {
            const i = step.policy % declared.length;
            const d = declared[i];
            declared[i] = { ...d, fields: { scope: step.variant.scope, status: step.variant.status }, active: step.activate ? contentOf(step.variant) : d.active };
            // A draft (activate: false) changes the policy-level scope and status only; its rules wait.
            const entries = declared.map((x, j) => (j === i ? { declared: declared[i], content: step.variant, activate: step.activate } : { declared: x, content: x.active, activate: true }));
            await applyManifest(by, manifest(handle, setting.zone, entries));
            trace.push(`${now.toISOString()} policy ${d.handle} ${JSON.stringify(step.variant)}${step.activate ? '' : ' as a draft'} (process ${step.by})`);
            break;
          }
        }
        await check(decided);
      }
      if (dayOf(new Date(startDay), setting.zone) !== dayOf(now, setting.zone)) saw('crossed midnight');
    }),
    { numRuns: Number(process.env.MODEL_RUNS ?? setting.runs), includeErrorInReport: true, ...(process.env.MODEL_SEED ? { seed: Number(process.env.MODEL_SEED) } : {}) },
  );
  t.log(`${runs} runs, ${steps} steps; seen: ${JSON.stringify(Object.fromEntries([...seen].sort()))}`);
  // The sequences reached what the invariants are about.
  for (const what of setting.reached) t.true((seen.get(what) ?? 0) > 0, what);
});

modelTest('every budget window counts what the recorded purchases say, after every step', {
  zone: 'Europe/Berlin',
  // Minutes after midnight in Berlin (UTC+1 in January): runs that start late cross into the next day.
  start: (startMinute) => new Date(Date.UTC(2026, 0, 15) + (startMinute - 60) * 60_000),
  runs: 60,
  reached: ['submit DAILY_LIMIT_EXCEEDED', 'answer APPROVED APPROVAL_THRESHOLD_EXCEEDED', 'reconciled opening grows', 'archive cancels'],
});

// Havana puts its clocks back from 01:00 CDT to 00:00 CST on 1 November 2026: the day and the month
// start at the first midnight (04:00 UTC), and the hour up to the second (05:00 UTC) is theirs.
// Two processes over one store, each step run by one of them, and two submissions at once from both: an
// actor's remembered windows are often stale (the other process moved them), and must never decide.
modelTest('with two processes over one store, every budget window counts what the recorded purchases say', {
  zone: 'Europe/Berlin',
  start: (startMinute) => new Date(Date.UTC(2026, 0, 15) + (startMinute - 60) * 60_000),
  runs: 30,
  reached: ['submit DAILY_LIMIT_EXCEEDED', 'answer APPROVED APPROVAL_THRESHOLD_EXCEEDED', 'reconciled opening grows'],
  processes: 2,
});

modelTest('where midnight comes twice (Havana, 1 November 2026), every window counts what the purchases say', {
  zone: 'America/Havana',
  // From 22:00 on 31 October (CDT) to 02:00 on 1 November (CST): every run crosses one midnight or both.
  start: (startMinute) => new Date(Date.parse('2026-11-01T02:00:00.000Z') + (startMinute % 300) * 60_000),
  runs: 20,
  reached: ['submit DAILY_LIMIT_EXCEEDED', 'crossed midnight'],
});
