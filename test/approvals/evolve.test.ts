// evolve(state, record) is the state a command leaves: what the next command of the same agent would
// load. Checked against the store itself: load a purchase's state, decide a command, write its record
// through the storage port, load again, and compare with evolve's answer (src/purchases/lifecycle.ts).
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { decidePurchase, evolve, type PurchaseCommand, type PurchaseState } from '../../src/purchases/lifecycle.ts';
import { loadPurchaseState } from '../../src/purchases/load.ts';
import { transactionalRecords } from '../../src/purchases/record-writer.ts';
import { newId } from '../../src/ids.ts';

let now = new Date('2026-11-26T10:00:00.000Z');
let app: TestApp;
test.before(async () => {
  app = await startApp({ now: () => now });
});
test.after.always(() => app?.close());

const manifest = (handle: string) => ({
  organization: { handle, name: handle, currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT1H', status: 'ACTIVE' },
  people: [{ handle: 'ana', name: 'Ana', email: `ana@${handle}.example` }],
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
        { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '20000' },
        { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '100000' },
        { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '500000' },
      ],
      merchants: [],
    },
  ],
  apiKeys: [{ handle: 'buyer-key', agent: 'buyer' }],
});

/** The parts of a state a next command reads, without the documents' timestamps. */
const observed = (state: PurchaseState) => ({
  purchase: state.purchase && { status: state.purchase.status, version: state.purchase.version, windowIds: state.purchase.windowIds, decisionId: state.purchase.decisionId },
  approval: state.approval && { state: state.approval.state, version: state.approval.version },
});

/** The windows evolve says the record left, and the same windows as the store now holds them. */
async function windowsOf(state: PurchaseState) {
  const said = [...state.windows.docs.values()].map((d) => ({ id: d._id, committed: d.committedMinor, held: d.heldMinor, opening: d.openingBalanceMinor, version: d.version }));
  const stored = await app.store.db.collection('budget_windows').find({ _id: { $in: said.map((w) => w.id) } } as never).toArray();
  const held = stored.map((d: any) => ({ id: d._id, committed: d.committedMinor, held: d.heldMinor, opening: d.openingBalanceMinor, version: d.version }));
  const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
  return { said: said.sort(byId), held: held.sort(byId) };
}

async function commandOn(purchaseId: string, command: PurchaseCommand, answeredBy: string | null) {
  const port = transactionalRecords(app.store.db);
  let before!: PurchaseState;
  let after!: PurchaseState;
  await app.store.withTransaction(async (session) => {
    before = await loadPurchaseState(app.deps, session, purchaseId, now, { answeredBy });
    const { record } = decidePurchase(before, command, now);
    await port.write(record!, session, before.windows);
    after = evolve(before, record!);
  });
  // Written through the port, not the handler: the organisation's actor does not remember what it wrote.
  app.deps.actors.forget(before.organization._id);
  const reloaded = await app.store.withTransaction((session) => loadPurchaseState(app.deps, session, purchaseId, now, { answeredBy }));
  return { before, after, reloaded };
}

async function heldPurchase(handle: string, amountMinor: string) {
  const org = await applyManifest(app, manifest(handle));
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Desks Ltd', amountMinor, reason: 'desk' } });
  if (res.body.decision?.outcome !== 'REQUIRES_APPROVAL') throw new Error(res.text);
  return res.body.purchaseRequest.id as string;
}

for (const answer of ['APPROVE', 'REJECT'] as const) {
  test(`after a person's ${answer.toLowerCase()}, evolve's state is the state loaded again`, async (t) => {
    const id = await heldPurchase(`evolve-${answer.toLowerCase()}`, '30000');
    const { before, after, reloaded } = await commandOn(id, { kind: 'ANSWER', ids: { decisionId: newId() }, answer, personHandle: 'ana', comment: null }, 'ana');
    t.notDeepEqual(observed(after), observed(before), 'the command changed something');
    t.deepEqual(observed(after), observed(reloaded));
    const windows = await windowsOf(after);
    t.is(windows.said.length, 2, 'the DAY and MONTH windows');
    t.deepEqual(windows.said, windows.held);
    t.deepEqual([...after.windows.states.keys()].sort(), [...reloaded.windows.states.keys()].sort(), 'the next command reads the same windows');
    for (const [id, state] of reloaded.windows.states) t.deepEqual(after.windows.states.get(id), state);
  });
}

// Serial (it runs before the others): it moves the shared clock, which the answers running beside it would read.
test.serial("after an expiry, evolve's state is the state loaded again", async (t) => {
  const id = await heldPurchase('evolve-expiry', '45000');
  now = new Date(now.getTime() + 2 * 60 * 60 * 1000);
  try {
    const { before, after, reloaded } = await commandOn(id, { kind: 'EXPIRE', ids: { decisionId: newId() } }, null);
    t.is(after.purchase!.status, 'EXPIRED');
    t.notDeepEqual(observed(after), observed(before));
    t.deepEqual(observed(after), observed(reloaded));
    const windows = await windowsOf(after);
    t.true(windows.said.every((w) => w.held === 0), 'the hold is released');
    t.deepEqual(windows.said, windows.held);
  } finally {
    now = new Date('2026-11-26T10:00:00.000Z');
  }
});
