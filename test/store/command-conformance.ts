// The command-level store conformance suite (docs/internals/design.md §1 and §2): the purchase
// commands' storage port must behave the same on every store. Beside test/store/conformance.ts (the
// MongoDB-shaped API), registered in the same places: the embedded store on a file and on :memory:
// (embedded.test.ts), the official driver against the wire listener (wire.test.ts) and against
// MONGODB_URI (mongodb.mongo.ts, `npm run test:mongo`).
//
// It drives the real pieces, not HTTP: the loaders (src/purchases/load.ts, submit.ts's loadSubmission),
// the pure decidePurchase and evolve (src/purchases/lifecycle.ts), the storage port
// (src/purchases/record-writer.ts), the one handler (src/purchases/handler.ts) and the entry points
// (submitPurchase, answerApproval), with the dependencies composeDeps builds over the store under test
// and an organisation applied by the manifest code (src/manifests/apply.ts). Two composeDeps over one
// store are two processes: two sets of actors, so their commands race in the store alone. Each test
// asserts the stored documents afterwards, mostly as the difference between two snapshots of every
// collection.
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { composeDeps, createIndexes } from '../../src/compose.ts';
import type { AppDeps } from '../../src/app-deps.ts';
import { noScheduler } from '../../src/jobs/scheduler.ts';
import { applyManifest, type ApplyResult } from '../../src/manifests/apply.ts';
import { compile } from '../../src/http/validate.ts';
import { ApiError, VersionConflict } from '../../src/http/errors.ts';
import { newId } from '../../src/ids.ts';
import { PurchaseRequestBody } from '../../schemas/purchases.ts';
import { parsePurchase } from '../../src/purchases/input.ts';
import { loadSubmission, submitPurchase, type SubmitCommand } from '../../src/purchases/submit.ts';
import { loadPurchaseState } from '../../src/purchases/load.ts';
import { handlePurchaseCommand } from '../../src/purchases/handler.ts';
import { decidePurchase, evolve, type PurchaseCommand, type PurchaseRecord, type PurchaseState } from '../../src/purchases/lifecycle.ts';
import { IdempotencyKeyTaken, transactionalRecords } from '../../src/purchases/record-writer.ts';
import { answerApproval } from '../../src/approvals/answer.ts';
import { expireApproval } from '../../src/approvals/close.ts';
import { closeApproval } from '../../src/approvals/close.ts';
import { changeAgentStatus } from '../../src/agents/change-status.ts';
import { runCommand } from '../../src/commands/run-command.ts';
import { ensureSigningKey } from '../../src/receipts/keys.ts';
import { loadReceiptContext } from '../../src/receipts/load.ts';
import type { Store, StoreDb } from '../../src/store/store.ts';
import { quorumManifest } from '../helpers/quorum.ts';

export interface CommandConformanceOptions {
  /** Shown in every test title, e.g. 'embedded :memory:' or 'mongodb'. */
  name: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- stored documents of every shape
type Doc = { _id: string; [field: string]: any };
type Snapshot = Map<string, Map<string, Doc>>;

/** An organisation whose windows one buyer's EUR purchases share, and a travel agent whose USD purchases touch none of them. */
function spendManifest(handle: string, dayLimitMinor = '100000') {
  return {
    organization: { handle, name: 'Conformance Ltd', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT1H', status: 'ACTIVE' },
    people: [{ handle: 'ana', name: 'Ana Approver', email: `ana@${handle}.example` }],
    agents: [
      { handle: 'buyer', name: 'Buyer', status: 'ENABLED' },
      { handle: 'travel', name: 'Travel booker', status: 'ENABLED' },
    ],
    policies: [
      {
        handle: 'budget',
        name: 'Budget',
        status: 'ACTIVE',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        activate: true,
        rules: [
          { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '20000' },
          { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: dayLimitMinor },
          { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '5000000' },
        ],
      },
      {
        handle: 'travel-usd',
        name: 'Travel in dollars',
        status: 'ACTIVE',
        scope: 'AGENT',
        agents: ['travel'],
        currencies: ['USD'],
        activate: true,
        rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '1000000' }],
      },
    ],
    apiKeys: [
      { handle: 'buyer-key', agent: 'buyer' },
      { handle: 'travel-key', agent: 'travel' },
    ],
  };
}

const purchaseBody = compile(PurchaseRequestBody);
const config = loadConfig({ LOG_LEVEL: 'error', BASE_URL: 'http://127.0.0.1:0' });
const log = createLogger('error', (line) => process.stderr.write(line + '\n'));

/** Every document of every collection, by collection and id. */
async function snapshot(db: StoreDb): Promise<Snapshot> {
  const all: Snapshot = new Map();
  for (const name of (await db.listCollectionNames()).sort()) {
    const docs = await db.collection<Doc>(name).find({}).toArray();
    if (docs.length > 0) all.set(name, new Map(docs.map((d) => [String(d._id), d])));
  }
  return all;
}

/** What changed between two snapshots: per collection, the ids added, changed and removed. */
function changes(before: Snapshot, after: Snapshot): Record<string, { added: string[]; changed: string[]; removed: string[] }> {
  const out: Record<string, { added: string[]; changed: string[]; removed: string[] }> = {};
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const b = before.get(name) ?? new Map<string, Doc>();
    const a = after.get(name) ?? new Map<string, Doc>();
    const added = [...a.keys()].filter((id) => !b.has(id)).sort();
    const removed = [...b.keys()].filter((id) => !a.has(id)).sort();
    const changed = [...a.keys()].filter((id) => b.has(id) && JSON.stringify(a.get(id)) !== JSON.stringify(b.get(id))).sort();
    if (added.length + removed.length + changed.length > 0) out[name] = { added, changed, removed };
  }
  return out;
}

/** One "process": the dependencies the service builds, over the store under test (its own actors). */
const processOver = (store: Store, now: () => Date): AppDeps => composeDeps({ config, store, log, scheduler: noScheduler, now });

interface World {
  store: Store;
  db: StoreDb;
  deps: AppDeps;
  /** A second process over the same store. */
  other: AppDeps;
  now: Date;
}

interface Org {
  id: string;
  applied: ApplyResult;
}

export function registerCommandConformance(factory: () => Promise<Store>, options: CommandConformanceOptions): void {
  const title = (s: string) => `[${options.name}] commands: ${s}`;

  async function open(t: ExecutionContext): Promise<World> {
    const store = await factory();
    t.teardown(() => store.close());
    await createIndexes(store.db);
    // One instant for the whole test: its windows are one day's and month's, whenever it runs.
    const now = new Date();
    const deps = processOver(store, () => now);
    await ensureSigningKey(store, deps.config);
    return { store, db: store.db, deps, other: processOver(store, () => now), now };
  }

  let orgs = 0;
  async function organization(w: World, manifest: { organization: { handle: string } }): Promise<Org> {
    const applied = await applyManifest(w.deps, manifest);
    return { id: applied.organization.id, applied };
  }
  const spendOrg = (w: World, dayLimitMinor?: string) => organization(w, spendManifest(`conf-${++orgs}`, dayLimitMinor));
  const quorumOrg = (w: World) => organization(w, quorumManifest(`conf-quorum-${++orgs}`));

  /** What submitPurchase is handed by POST /v1/purchase-requests for this agent's key. */
  async function submission(w: World, org: Org, agent: string, amountMinor: number, extra: { currency?: string; idempotencyKey?: string } = {}): Promise<SubmitCommand> {
    const organization = (await w.deps.collections.organizations.findOne({ _id: org.id }))!;
    const key = org.applied.apiKeys[`${agent}-key`];
    const body = { merchant: 'Paper Co', amountMinor: String(amountMinor), reason: `${agent} buys`, ...(extra.currency ? { currency: extra.currency } : {}) };
    const parsed = parsePurchase(purchaseBody, body, organization.currency);
    return {
      organization,
      principal: { kind: 'API_KEY', organizationId: org.id, apiKeyId: key.id, prefix: key.prefix, agentId: org.applied.agents[agent].id },
      purchase: parsed.purchase,
      body: parsed.body as Record<string, unknown>,
      rawBody: JSON.stringify(body),
      idempotencyKey: extra.idempotencyKey ?? null,
      origin: 'API',
    };
  }

  /** The SUBMIT command submitPurchase would run for `cmd` (new ids; the idempotency record when keyed). */
  function submitCommand(w: World, cmd: SubmitCommand): PurchaseCommand {
    const key = cmd.idempotencyKey;
    return {
      kind: 'SUBMIT',
      ids: { purchaseId: newId(), decisionId: newId(), approvalId: newId() },
      purchase: cmd.purchase,
      submitter: { id: (cmd.principal as { apiKeyId: string }).apiKeyId, via: { type: 'API_KEY', apiKeyPrefix: (cmd.principal as { prefix: string }).prefix }, person: null, personId: null },
      origin: cmd.origin,
      metadata: null,
      rawBody: cmd.rawBody,
      idempotency: key === null ? null : { _id: `${(cmd.principal as { apiKeyId: string }).apiKeyId}:${key}`, requestHash: `hash-of-${key}`, createdAt: w.now, expiresAt: new Date(w.now.getTime() + 86_400_000) },
    };
  }

  /**
   * A submission's state, read in a transaction of its own by a process that has not run a command yet
   * (its actor remembers no receipt chain head: it reads the store's).
   */
  const readSubmission = (w: World, cmd: SubmitCommand) => {
    const deps = processOver(w.store, () => w.now);
    return w.store.withTransaction((session) => loadSubmission(deps, session, cmd, w.now));
  };
  /** A command's state on an existing purchase, read in a transaction of its own by such a process. */
  const readPurchase = (w: World, purchaseId: string, answeredBy: string | null) => {
    const deps = processOver(w.store, () => w.now);
    return w.store.withTransaction((session) => loadPurchaseState(deps, session, purchaseId, w.now, { answeredBy }));
  };
  /** The organisation's receipt context as the store has it now. */
  const freshReceipts = (w: World, orgId: string) => {
    const deps = processOver(w.store, () => w.now);
    return w.store.withTransaction((session) => loadReceiptContext(deps, session, orgId));
  };

  const writeRecord = (w: World, record: PurchaseRecord) => w.store.withTransaction((session) => transactionalRecords(w.db).write(record, session, { docs: new Map(), remembered: new Set() }));

  /** A pending purchase through the real submission path. */
  async function pending(w: World, org: Org, amountMinor: number, agent = 'buyer'): Promise<string> {
    const result = await submitPurchase(w.deps, await submission(w, org, agent, amountMinor));
    const body = result.body as { purchaseRequest: { id: string; status: string } };
    if (body.purchaseRequest.status !== 'PENDING_APPROVAL') throw new Error(`expected a pending purchase, got ${body.purchaseRequest.status}`);
    return body.purchaseRequest.id;
  }

  /**
   * Writes a record that must lose: it throws VersionConflict naming `what`, and not one document of the
   * store changed (so nothing of the record is left: no purchase, decision, receipt, event, view or key).
   */
  async function refused(t: ExecutionContext, w: World, record: PurchaseRecord, what: RegExp): Promise<void> {
    const before = await snapshot(w.db);
    const error = await t.throwsAsync(writeRecord(w, record), { instanceOf: VersionConflict });
    t.regex(error!.message, what);
    const after = await snapshot(w.db);
    t.deepEqual(changes(before, after), {}, 'nothing of the refused record was written');
    const id = record.purchase._id;
    t.is(await w.db.collection<Doc>('events').countDocuments({ 'data.decisionId': record.decision?._id ?? '-' }), 0);
    if (record.decision) {
      t.is(await w.db.collection<Doc>('decisions').countDocuments({ _id: record.decision._id }), 0);
      t.is(await w.db.collection<Doc>('receipts').countDocuments({ decisionId: record.decision._id }), 0);
    }
    if (record.purchaseVersionRead === null) {
      for (const name of ['purchases', 'purchase_views', 'analytics_purchases']) t.is(await w.db.collection<Doc>(name).countDocuments({ _id: id }), 0, name);
    }
    if (record.idempotency) t.is(await w.db.collection<Doc>('idempotency_keys').countDocuments({ _id: record.idempotency._id }), 0);
  }

  test(title('a SUBMIT record is one unit, and evolve says what load reads back'), async (t) => {
    const w = await open(t);
    const org = await spendOrg(w);
    // A first purchase creates the windows and starts the chain: the record below updates both.
    await submitPurchase(w.deps, await submission(w, org, 'buyer', 5000));
    const cmd = await submission(w, org, 'buyer', 30000, { idempotencyKey: 'k-1' });
    const command = submitCommand(w, cmd);
    const state = await readSubmission(w, cmd);
    const { outcome, record } = decidePurchase(state, command, w.now);
    t.is(outcome.kind, 'SUBMITTED');
    t.is(record!.decision!.outcome, 'REQUIRES_APPROVAL', 'escalated: the record carries an approval');

    const before = await snapshot(w.db);
    await writeRecord(w, record!);
    const after = await snapshot(w.db);
    const r = record!;
    const purchaseId = r.purchase._id;
    const diff = changes(before, after);
    const windowIds = r.windows.map((x) => x.id).sort();
    t.is(windowIds.length, 2, 'the DAY and MONTH windows');
    t.true(r.windows.every((x) => x.expectedVersion !== null), 'updated at the versions read');
    t.deepEqual(Object.keys(diff).sort(), [
      'agents', // the agent's fence
      'analytics_daily_spend',
      'analytics_purchases',
      'approvals',
      'budget_windows',
      'decisions',
      'events',
      'idempotency_keys',
      'purchase_views',
      'purchases',
      'receipt_chains',
      'receipts',
      'webhook_quotas', // the organisation's webhook fence: no endpoint receives its events
    ]);
    const one = (name: string, id: string) => after.get(name)!.get(id);
    t.deepEqual(diff.purchases, { added: [purchaseId], changed: [], removed: [] });
    t.deepEqual(one('purchases', purchaseId), r.purchase);
    t.deepEqual(diff.decisions.added, [r.decision!._id]);
    t.deepEqual(one('decisions', r.decision!._id), r.decision);
    t.deepEqual(diff.approvals.added, [r.approval!._id]);
    t.deepEqual(one('approvals', r.approval!._id), r.approval);
    t.deepEqual(diff.budget_windows, { added: [], changed: windowIds, removed: [] });
    const evolved = evolve(state, r);
    for (const id of windowIds) {
      const stored = one('budget_windows', id)!;
      t.is(stored.version, before.get('budget_windows')!.get(id)!.version + 1, 'at its new version');
      t.is(stored.heldMinor, 30000);
      t.deepEqual(stored, evolved.windows.docs.get(id));
    }
    const seq = r.receipt!.seq;
    t.is(seq, 2);
    t.deepEqual(diff.receipts.added, [`${org.id}:2`]);
    t.deepEqual(one('receipts', `${org.id}:2`), { _id: `${org.id}:2`, organizationId: org.id, seq: 2, purchaseId, decisionId: r.decision!._id, jws: r.receipt!.jws });
    t.deepEqual(one('receipt_chains', org.id), { _id: org.id, seq: 2, head: r.receipt!.head });
    t.deepEqual(diff.idempotency_keys.added, [r.idempotency!._id]);
    t.deepEqual(one('idempotency_keys', r.idempotency!._id), r.idempotency);
    const events = diff.events.added.map((id) => one('events', id)!);
    t.deepEqual(
      events.map(({ _id, dispatchedAt, ...e }) => e).sort((a, b) => a.type.localeCompare(b.type)),
      [...r.events].sort((a, b) => a.type.localeCompare(b.type)),
    );
    t.true(events.some((e) => e.type === 'purchase.approval_required' && e.data.purchaseRequestId === purchaseId));
    t.deepEqual(diff.purchase_views.added, [purchaseId]);
    t.is(one('purchase_views', purchaseId)!.readback.status, 'PENDING_APPROVAL');
    t.deepEqual(diff.analytics_purchases.added, [purchaseId]);
    t.like(one('analytics_purchases', purchaseId), { status: 'PENDING_APPROVAL', amountMinor: 30000, committedWindowIds: [] });
    t.is(diff.analytics_daily_spend.changed.length, 1);
    const [dayId] = diff.analytics_daily_spend.changed;
    t.is(one('analytics_daily_spend', dayId)!.pendingMinor, before.get('analytics_daily_spend')!.get(dayId)!.pendingMinor + 30000);

    // What the next command reads is what evolve said (its windows, purchase, approval and chain head).
    const loaded = await readPurchase(w, purchaseId, 'ana');
    t.deepEqual(loaded.purchase, evolved.purchase);
    t.deepEqual(loaded.approval, evolved.approval);
    t.deepEqual(loaded.receipts!.chain, evolved.receipts!.chain);
    for (const id of windowIds) {
      t.deepEqual(loaded.windows.docs.get(id), evolved.windows.docs.get(id));
      t.deepEqual(loaded.windows.states.get(id), evolved.windows.states.get(id));
    }
    t.deepEqual([...loaded.windows.docs.keys()].sort(), [...evolved.windows.docs.keys()].sort());
  });

  test(title('all or nothing: a stale budget window (created or updated) leaves nothing of the record'), async (t) => {
    const w = await open(t);
    const org = await spendOrg(w);
    // The windows do not exist yet: the record would create them, but another record created them first.
    const first = await submission(w, org, 'buyer', 5000, { idempotencyKey: 'stale-create' });
    const creating = await readSubmission(w, first);
    t.true(creating.windows.missing.size > 0);
    await submitPurchase(w.other, await submission(w, org, 'buyer', 4000));
    // Signed on from the chain as it is now, so that the windows alone are stale.
    const withChain = async (s: PurchaseState) => ({ ...s, receipts: await freshReceipts(w, org.id) });
    const created = decidePurchase(await withChain(creating), submitCommand(w, first), w.now).record!;
    t.true(created.windows.some((x) => x.expectedVersion === null));
    await refused(t, w, created, /budget window/);

    // The windows exist: the record would update them at the versions it read, but another record moved them.
    const second = await submission(w, org, 'buyer', 6000, { idempotencyKey: 'stale-update' });
    const updating = await readSubmission(w, second);
    await submitPurchase(w.other, await submission(w, org, 'buyer', 7000));
    const updated = decidePurchase(await withChain(updating), submitCommand(w, second), w.now).record!;
    t.true(updated.windows.length > 0 && updated.windows.every((x) => x.expectedVersion !== null));
    await refused(t, w, updated, /budget window/);
    t.is(await w.db.collection<Doc>('decisions').countDocuments({ organizationId: org.id }), 2, 'only the two that committed');
  });

  test(title('all or nothing: a stale approval version for an ANSWER, and a stale purchase version, leave nothing'), async (t) => {
    const w = await open(t);
    const org = await quorumOrg(w);
    // Two approvers needed: Bob's approval (below the quorum) writes the approval alone.
    const id = await pending(w, org, 30000);
    const ana = await readPurchase(w, id, 'ana');
    const bob = await answerApproval(w.other, { purchaseId: id, answer: 'APPROVE', personHandle: 'bob', comment: null });
    t.is(bob.purchase.status, 'PENDING_APPROVAL');
    // Ana's rejection decides; of what it read only the approval changed since.
    const rejection = decidePurchase(ana, { kind: 'ANSWER', ids: { decisionId: newId() }, answer: 'REJECT', personHandle: 'ana', comment: null }, w.now).record!;
    t.not(rejection.decision, null);
    await refused(t, w, rejection, /approval/);

    // A purchase that holds no window (the one-person rule has no spend limit): its cancellation (its agent
    // archived) writes the purchase and the approval; an answer read before both is stale at the purchase first.
    const solo = await pending(w, org, 30000, 'solo');
    const stale = await readPurchase(w, solo, 'ana');
    t.deepEqual(stale.purchase!.windowIds, []);
    await runCommand(w.store, async (session) => {
      const agent = await w.other.collections.agents.findOne({ _id: org.applied.agents.solo.id }, { session });
      return changeAgentStatus(w.other, session, agent!, 'ARCHIVED', w.now);
    });
    t.true(await closeApproval(w.other, stale.approval!._id, 'CANCELLED'));
    const approval = decidePurchase(stale, { kind: 'ANSWER', ids: { decisionId: newId() }, answer: 'APPROVE', personHandle: 'ana', comment: null }, w.now).record!;
    t.deepEqual(approval.windows, []);
    await refused(t, w, approval, /purchase/);
  });

  test(title('all or nothing: a stale receipt chain head (its seq, or its head at the same seq) leaves nothing'), async (t) => {
    const w = await open(t);
    const org = await spendOrg(w);
    // The organisation's first decision (seq 1) read an empty chain; a travel purchase (no window in
    // common) committed seq 1 first.
    const buyer = await submission(w, org, 'buyer', 5000, { idempotencyKey: 'chain-1' });
    const empty = await readSubmission(w, buyer);
    t.is(empty.receipts!.chain.seq, 0);
    await submitPurchase(w.other, await submission(w, org, 'travel', 5000, { currency: 'USD' }));
    const firstLink = decidePurchase(empty, submitCommand(w, buyer), w.now).record!;
    t.is(firstLink.receipt!.seq, 1);
    await refused(t, w, firstLink, /receipt chain/);

    // Later in the chain: another decision of the organisation moved the head from seq 2 to 3.
    await submitPurchase(w.deps, await submission(w, org, 'buyer', 5000));
    const later = await submission(w, org, 'buyer', 5000, { idempotencyKey: 'chain-2' });
    const atTwo = await readSubmission(w, later);
    t.is(atTwo.receipts!.chain.seq, 2);
    await submitPurchase(w.other, await submission(w, org, 'travel', 5000, { currency: 'USD' }));
    await refused(t, w, decidePurchase(atTwo, submitCommand(w, later), w.now).record!, /receipt chain/);

    // The same seq with another head (a chain set back and rebuilt to the same seq while processes ran).
    const rebuilt = await submission(w, org, 'buyer', 5000, { idempotencyKey: 'chain-3' });
    const atThree = await readSubmission(w, rebuilt);
    t.is(atThree.receipts!.chain.seq, 3);
    await w.db.collection<Doc>('receipt_chains').updateOne({ _id: org.id }, { $set: { head: 'another-head' } });
    await refused(t, w, decidePurchase(atThree, submitCommand(w, rebuilt), w.now).record!, /receipt chain/);
  });

  test(title('the idempotency key: a second record with a key already committed is IdempotencyKeyTaken, one decision stored'), async (t) => {
    const w = await open(t);
    const org = await spendOrg(w);
    const cmd = await submission(w, org, 'buyer', 5000, { idempotencyKey: 'once' });
    const state = await readSubmission(w, cmd);
    const first = decidePurchase(state, submitCommand(w, cmd), w.now).record!;
    const second = decidePurchase(state, submitCommand(w, cmd), w.now).record!;
    t.is(first.idempotency!._id, second.idempotency!._id);
    await writeRecord(w, first);
    const before = await snapshot(w.db);
    await t.throwsAsync(writeRecord(w, second), { instanceOf: IdempotencyKeyTaken });
    t.deepEqual(changes(before, await snapshot(w.db)), {}, 'nothing of the second record');
    t.deepEqual((await w.db.collection<Doc>('decisions').find({ organizationId: org.id }).toArray()).map((d) => d._id), [first.decision!._id]);

    // Through submitPurchase, from two processes at once: one decision, the other request replays it.
    const keyed = await submission(w, org, 'buyer', 6000, { idempotencyKey: 'raced' });
    const results = await Promise.all([submitPurchase(w.deps, keyed), submitPurchase(w.other, keyed)]);
    t.deepEqual(results.map((r) => r.status).sort(), [200, 201]);
    const ids = results.map((r) => (r.body as { purchaseRequest: { id: string } }).purchaseRequest.id);
    t.is(ids[0], ids[1]);
    t.is(await w.db.collection<Doc>('decisions').countDocuments({ purchaseId: ids[0] }), 1);
    t.is(await w.db.collection<Doc>('decisions').countDocuments({ organizationId: org.id }), 2);
  });

  test(title('the handler retries a lost race on fresh state, and does not retry an ApiError from decide'), async (t) => {
    const w = await open(t);
    const org = await spendOrg(w);
    await submitPurchase(w.deps, await submission(w, org, 'buyer', 5000));
    const cmd = await submission(w, org, 'buyer', 6000);
    const stale = await readSubmission(w, cmd);
    // Another process commits between the read and the write.
    await submitPurchase(w.other, await submission(w, org, 'buyer', 7000));
    const command = submitCommand(w, cmd);
    const loads: string[] = [];
    const outcome = await handlePurchaseCommand(w.deps, org.id, async (session, now) => {
      loads.push(loads.length === 0 ? 'stale' : 'fresh');
      return loads.length === 1 ? stale : loadSubmission(w.deps, session, cmd, now);
    }, command);
    t.deepEqual(loads, ['stale', 'fresh']);
    t.is(outcome.kind, 'SUBMITTED');
    const purchaseId = (command as { ids: { purchaseId: string } }).ids.purchaseId;
    const decisions = await w.db.collection<Doc>('decisions').find({ purchaseId }).toArray();
    t.is(decisions.length, 1);
    const receipts = await w.db.collection<Doc>('receipts').find({ purchaseId }).toArray();
    t.deepEqual(receipts.map((r) => [r.seq, r.decisionId]), [[3, decisions[0]._id]]);
    t.like(await w.db.collection<Doc>('receipt_chains').findOne({ _id: org.id }), { seq: 3 });
    const day = await w.db.collection<Doc>('budget_windows').findOne({ organizationId: org.id, periodKind: 'DAY' });
    t.is(day!.committedMinor, 5000 + 7000 + 6000);

    // An ApiError from decide (this approval is no longer pending) ends the command: one load, nothing written.
    const id = await pending(w, org, 30000);
    await answerApproval(w.deps, { purchaseId: id, answer: 'APPROVE', personHandle: 'ana', comment: null });
    const before = await snapshot(w.db);
    let answerLoads = 0;
    const error = await t.throwsAsync(
      handlePurchaseCommand(w.deps, org.id, async (session, now) => {
        answerLoads++;
        return loadPurchaseState(w.deps, session, id, now, { answeredBy: 'ana' });
      }, { kind: 'ANSWER', ids: { decisionId: newId() }, answer: 'REJECT', personHandle: 'ana', comment: null }),
      { instanceOf: ApiError },
    );
    t.is((error as ApiError).code, 'approval_not_pending');
    t.is(answerLoads, 1, 'not retried');
    t.deepEqual(changes(before, await snapshot(w.db)), {});
  });

  test(title('two processes racing on one window never overspend; the receipt chain has no gap'), async (t) => {
    const w = await open(t);
    // Room for K = 10 purchases of 10,000 a day; N = 16 are submitted at once, half through each process.
    const org = await spendOrg(w, '100000');
    const N = 16;
    const K = 10;
    const commands = await Promise.all(Array.from({ length: N }, () => submission(w, org, 'buyer', 10000)));
    const results = await Promise.all(commands.map((cmd, i) => submitPurchase(i % 2 === 0 ? w.deps : w.other, cmd)));
    const outcomes = results.map((r) => (r.body as { decision: { outcome: string } }).decision.outcome);
    t.is(outcomes.filter((o) => o === 'APPROVED').length, K);
    t.is(outcomes.filter((o) => o === 'REJECTED').length, N - K);
    const approved = await w.db.collection<Doc>('purchases').find({ organizationId: org.id, status: 'APPROVED' }).toArray();
    const sum = approved.reduce((total, p) => total + p.amountMinor, 0);
    t.is(sum, K * 10000);
    const windows = await w.db.collection<Doc>('budget_windows').find({ organizationId: org.id }).toArray();
    t.is(windows.length, 2);
    for (const window of windows) {
      t.is(window.committedMinor, sum, `${window.periodKind} window`);
      t.is(window.heldMinor, 0);
    }
    t.is(await w.db.collection<Doc>('decisions').countDocuments({ organizationId: org.id }), N);
    const seqs = (await w.db.collection<Doc>('receipts').find({ organizationId: org.id }).toArray()).map((r) => r.seq).sort((a, b) => a - b);
    t.deepEqual(seqs, Array.from({ length: N }, (_, i) => i + 1));
    t.like(await w.db.collection<Doc>('receipt_chains').findOne({ _id: org.id }), { seq: N });
  });

  test(title('a refusal decided on windows the actor remembers, which another process has moved since, is decided again on the store\'s'), async (t) => {
    const w = await open(t);
    const org = await spendOrg(w, '50000');
    // This process holds the whole day's limit: its actor remembers the windows so.
    const held = [await pending(w, org, 25000), await pending(w, org, 25000)];
    const refused = await submitPurchase(w.deps, await submission(w, org, 'buyer', 10000));
    t.is((refused.body as { decision: { outcome: string } }).decision.outcome, 'REJECTED');
    // Another process, two hours on, expires both approvals: their holds are released there. An expiry signs
    // no receipt, so the receipt chain this process remembers is still the store's, and a refusal writes no window.
    const later = processOver(w.store, () => new Date(w.now.getTime() + 2 * 60 * 60 * 1000));
    for (const purchaseId of held) {
      const { approvalId } = (await w.db.collection<Doc>('purchases').findOne({ _id: purchaseId }))!;
      t.true(await expireApproval(later, approvalId));
    }
    const result = await submitPurchase(w.deps, await submission(w, org, 'buyer', 10000));
    t.is((result.body as { decision: { outcome: string } }).decision.outcome, 'APPROVED', 'decided on the day as it is, not as remembered');
    const day = await w.db.collection<Doc>('budget_windows').findOne({ organizationId: org.id, periodKind: 'DAY' });
    t.like(day, { heldMinor: 0, committedMinor: 10000 });
  });

  test(title('a below-quorum ANSWER writes only the approval at the version read; a second from the same stale state conflicts'), async (t) => {
    const w = await open(t);
    const org = await quorumOrg(w);
    const id = await pending(w, org, 30000);
    const ana = await readPurchase(w, id, 'ana');
    const bob = await readPurchase(w, id, 'bob');
    t.is(ana.approval!.approvalsRequired, 2);
    const approve = (person: string) => ({ kind: 'ANSWER' as const, ids: { decisionId: newId() }, answer: 'APPROVE' as const, personHandle: person, comment: null });
    const first = decidePurchase(ana, approve('ana'), w.now);
    t.is(first.outcome.kind, 'ANSWER_RECORDED');
    const record = first.record!;
    t.is(record.decision, null);
    t.is(record.approvalVersionRead, 1);

    const before = await snapshot(w.db);
    await writeRecord(w, record);
    const after = await snapshot(w.db);
    t.deepEqual(changes(before, after), {
      approvals: { added: [], changed: [record.approval!._id], removed: [] },
      purchase_views: { added: [], changed: [id], removed: [] },
    });
    t.deepEqual(after.get('approvals')!.get(record.approval!._id), record.approval);
    t.like(after.get('approvals')!.get(record.approval!._id), { version: 2, state: 'PENDING' });
    t.deepEqual(after.get('purchase_views')!.get(id)!.readback.approval.answers.map((a: { name: string }) => a.name), ['Ana Approver']);

    // Bob's approval from the state read before Ana's committed: below the quorum too, at version 1.
    const second = decidePurchase(bob, approve('bob'), w.now).record!;
    t.is(second.decision, null);
    await refused(t, w, second, /approval/);
    // Run by the handler, it loads again and is the second approval: it decides.
    const decided = await answerApproval(w.other, { purchaseId: id, answer: 'APPROVE', personHandle: 'bob', comment: null });
    t.is(decided.purchase.status, 'APPROVED');
    t.deepEqual((await w.db.collection<Doc>('decisions').find({ purchaseId: id }).toArray()).map((d) => d.kind).sort(), ['APPROVAL_REEVALUATION', 'INITIAL']);
  });
}
