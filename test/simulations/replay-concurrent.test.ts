// A replay is a function of what is recorded (docs/integrate/simulations.md#replay): the same range replayed
// twice answers the same, and one replayed while purchases are being submitted into its range answers a
// consistent whole (its progress counts the purchases its summary evaluated).
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { manifest, request, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';

let clock = Date.parse('2026-06-10T08:00:00.000Z');
let app: TestApp;
let org: AppliedOrg;
let draftId: string;
let sent = 0;

test.before(async () => {
  app = await startApp({ now: () => new Date(clock) });
  org = await applyManifest(app, manifest('replay-live', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]));
  draftId = (await applyManifest(app, manifest('replay-live', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: false }]))).policies.office.draftVersionId!;
  for (let i = 0; i < 40; i++) await submit();
});
test.after.always(() => app?.close());

async function submit() {
  clock += 60_000;
  const { agent, body } = request(sent++);
  const res = await app.request('/v1/purchase-requests', { key: org.keys[agent], body });
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
}

// The range runs into tomorrow, so purchases submitted now fall in it.
const replay = () =>
  app.request('/v1/simulations/replay?limit=200', { key: org.keys['org-key'], body: { policyVersionId: draftId, from: '2026-06-10T00:00:00Z', to: '2026-06-12T00:00:00Z' } });

test.serial('the same range replayed twice answers the same', async (t) => {
  const first = await replay();
  t.is(first.status, 200, first.text);
  t.true(first.body.summary.changed > 0);
  t.deepEqual((await replay()).body, first.body);
});

test.serial('a purchase committed after the replay counted its range is in its progress as in its summary', async (t) => {
  // Between the replay's count of its range and its reading of the purchases, one more is submitted.
  const db = app.store.db;
  const collection = db.collection.bind(db);
  let injected = false;
  db.collection = ((name: string, ...rest: unknown[]) => {
    const c = (collection as (...a: unknown[]) => any)(name, ...rest);
    if (name !== 'purchase_views' || injected) return c;
    return new Proxy(c, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (prop !== 'countDocuments') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: unknown[]) => {
          const n = await target.countDocuments(...args);
          injected = true;
          await submit();
          return n;
        };
      },
    });
  }) as typeof db.collection;
  let res;
  try {
    res = await replay();
  } finally {
    db.collection = collection;
  }
  t.true(injected);
  t.is(res.status, 200, res.text);
  t.is(res.body.summary.evaluated, sent);
  t.deepEqual(res.body.replay.progress, { evaluated: sent, total: sent });
});

test.serial('replays while purchases are submitted: each answer is whole, and once they stop, replays agree', async (t) => {
  const answers = await Promise.all([replay(), submit(), replay(), submit(), submit(), replay(), submit()]);
  for (const res of answers) {
    if (res === undefined) continue;
    t.is(res.status, 200, res.text);
    const { summary, replay: run } = res.body;
    t.is(summary.evaluated, run.progress.evaluated);
    t.is(run.progress.evaluated, run.progress.total);
    t.is(summary.unchanged + summary.changed, summary.evaluated);
  }
  const settled = await replay();
  t.is(settled.body.summary.evaluated, sent);
  t.deepEqual((await replay()).body, settled.body);
});
