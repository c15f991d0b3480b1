// The embedded store group-commits, and an organisation's next command may start (and take the windows its
// actor remembers) before the previous command's COMMIT. When that COMMIT fails (a full disk: SQLite
// refuses it), nothing of the group stays: no window the actor remembers may then be ahead of the store,
// and the next decisions count exactly what was committed. The COMMIT is made to fail here by the engine's
// statement (the only way to fail one commit in a test without filling a disk: test/store/disk-full.test.ts).
// Embedded store only, on both lanes: the driver lane has no group commit of this process to fail.
import test from 'ava';
import { Engine } from '../../src/store/embedded/engine.ts';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, onePolicyManifest } from '../helpers/fixtures.ts';

let failCommits = 0;
let failed = 0;
const statement = Engine.prototype.statement;
Engine.prototype.statement = function (this: Engine, sql: string) {
  if (sql === 'COMMIT' && failCommits > 0) {
    failCommits--;
    failed++;
    return { run: () => { throw Object.assign(new Error('database or disk is full'), { code: 'ERR_SQLITE_ERROR', errcode: 13 }); } } as never;
  }
  return statement.call(this, sql);
};

interface Window { _id: string; version: number; committedMinor: number; heldMinor: number }

test('a group commit that fails after the next command took the remembered windows leaves no decision counting what it lost', async (t) => {
  const store = await openEmbeddedStore();
  const app: TestApp = await startApp({ store });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const org = await applyManifest(app, onePolicyManifest('commit-failure', { timezone: 'UTC', currency: 'EUR', rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '10000' }] }));
  const key = org.keys['buyer-key'];
  const submit = (amount: number) => app.request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor: String(amount), reason: 'paper' } });
  const windows = () => store.db.collection<Window>('budget_windows').find({ organizationId: org.organizationId }).toArray();
  const approvedSum = async () =>
    (await store.db.collection<{ amountMinor: number }>('purchases').find({ organizationId: org.organizationId, status: 'APPROVED' }).toArray()).reduce((s, p) => s + p.amountMinor, 0);

  t.is((await submit(1000)).status, 201);
  // Rounds of three submissions at once in one mailbox, the group commit of each round failing once:
  // a later one started on what the first left in memory, before its COMMIT.
  let lost = 0;
  for (let round = 0; round < 6; round++) {
    failCommits = 1;
    const results = await Promise.all([submit(500), submit(700), submit(900)]);
    failCommits = 0;
    for (const res of results) {
      if (res.status === 201) continue;
      t.is(res.status, 503, res.text);
      lost++;
    }
    // Memory never runs ahead of the store: a window remembered at a version the store has is the stored one.
    const stored = new Map((await windows()).map((w) => [w._id, w]));
    for (const [id, doc] of app.deps.actors.memory(org.organizationId).windows ?? []) {
      const now = stored.get(id);
      t.truthy(now, `remembered window ${id} exists`);
      t.true(doc.version <= now!.version, `window ${id} remembered at version ${doc.version}, stored at ${now!.version}`);
      if (doc.version === now!.version) t.is(doc.committedMinor, now!.committedMinor);
    }
    for (const w of stored.values()) t.is(w.committedMinor, await approvedSum(), `window ${w._id} counts the approved purchases`);
  }
  t.true(failed >= 6, 'the commits failed');
  t.true(lost > 0, 'some submissions were lost with their group');
  // What is left of the day's limit is decided on the store: exactly up to it, not one minor unit more.
  const left = 10_000 - (await approvedSum());
  t.true(left > 0);
  t.is((await submit(left + 1)).body.decision.outcome, 'REJECTED');
  t.is((await submit(left)).body.decision.outcome, 'APPROVED');
  t.is((await submit(1)).body.decision.outcome, 'REJECTED');
  for (const w of await windows()) t.is(w.committedMinor, 10_000);
});
