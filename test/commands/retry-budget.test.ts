// Retries with a deadline (docs/internals/design.md §2). A command that lost a race is retried as a whole: our own
// VersionConflict, and MongoDB's WriteConflict (code 112, labelled TransientTransactionError). The embedded
// engine never raises the latter, so a Store double raises it, shaped as the driver does, on chosen
// operations. The retries have a budget of attempts and of time; past it the answer is a clear 503.
import test from 'ava';
import { MongoOperationTimeoutError, MongoServerError } from 'mongodb';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { purchase, shopManifest } from '../helpers/shop.ts';
import { testStore } from '../helpers/store.ts';
import { InstrumentedStore, writeConflict, type Operation } from '../helpers/instrumented-store.ts';
import { COMMAND_BUDGET, runCommand } from '../../src/commands/run-command.ts';
import { StoreUnavailable, VersionConflict } from '../../src/http/errors.ts';

let app: TestApp;
let store: InstrumentedStore;
let org: AppliedOrg;

test.before(async () => {
  store = new InstrumentedStore(await testStore());
  app = await startApp({ store });
  org = await applyManifest(app, shopManifest('retry-shop'));
});
test.afterEach.always(() => {
  store.inject = undefined;
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
});

/** Throws `error` on the first `times` inserts into purchases inside a transaction; counts attempts. */
function conflictOnPurchaseInsert(times: number, error: () => Error = writeConflict) {
  const seen = { attempts: 0 };
  store.inject = (op: Operation) => {
    if (op.collection !== 'purchases' || op.method !== 'insertOne' || !op.inTransaction) return undefined;
    seen.attempts++;
    return seen.attempts <= times ? error() : undefined;
  };
  return seen;
}

const purchasesOf = (merchant: string) => store.db.collection('purchases').countDocuments({ merchant });

test.serial('write conflicts (112, TransientTransactionError) are retried: the submission commits once', async (t) => {
  const seen = conflictOnPurchaseInsert(3);
  const res = await app.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(100, 'Conflicted Paper'), headers: { 'idempotency-key': 'conflicted-1' } });
  t.is(res.status, 201);
  t.is(res.body.decision.outcome, 'APPROVED');
  t.is(seen.attempts, 4);
  t.is(await purchasesOf('Conflicted Paper'), 1);
  t.is(await store.db.collection('budget_windows').countDocuments({ policyId: org.policies.main.id, heldMinor: 0, committedMinor: 100 }), 1, 'the budget counted it once');
});

test.serial('an endless write conflict ends in 503 internal_error with Retry-After after the budget’s attempts, nothing written', async (t) => {
  const seen = conflictOnPurchaseInsert(Number.POSITIVE_INFINITY);
  const res = await app.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(100, 'Never Paper') });
  t.is(res.status, 503);
  t.is(res.body.error.code, 'internal_error');
  t.regex(res.body.error.message, /retry/i);
  t.is(res.headers.get('retry-after'), '1');
  t.is(seen.attempts, COMMAND_BUDGET.attempts);
  t.is(await purchasesOf('Never Paper'), 0);
});

test.serial('the retry budget is also a time budget: attempts stop when the time is spent', async (t) => {
  let attempts = 0;
  const error = await t.throwsAsync(
    runCommand(store, async () => {
      attempts++;
      throw new VersionConflict('always');
    }, { budget: { attempts: 1_000_000, totalMs: 300 } }),
  );
  t.true(error instanceof StoreUnavailable);
  t.is((error as StoreUnavailable).status, 503);
  t.true(attempts > 1 && attempts < 1_000_000, `${attempts} attempts`);
});

test.serial('VersionConflict is retried, then succeeds', async (t) => {
  let attempts = 0;
  const result = await runCommand(store, async () => {
    if (++attempts < 3) throw new VersionConflict('budget window');
    return 'done';
  });
  t.is(result, 'done');
  t.is(attempts, 3);
});

test.serial('an unknown commit result is not retried blindly (the commit may have happened): 503, run once', async (t) => {
  let attempts = 0;
  const unknown = new MongoServerError({ message: 'connection reset during commit', code: 6, codeName: 'HostUnreachable', errorLabels: ['UnknownTransactionCommitResult'] });
  const error = await t.throwsAsync(
    runCommand(store, async () => {
      attempts++;
      throw unknown;
    }),
  );
  t.true(error instanceof StoreUnavailable);
  t.is(attempts, 1);
});

test.serial('other errors are not retried and keep their meaning', async (t) => {
  let attempts = 0;
  const error = await t.throwsAsync(
    runCommand(store, async () => {
      attempts++;
      throw new MongoServerError({ message: 'E11000 duplicate key', code: 11000 });
    }),
  );
  t.is((error as MongoServerError).code, 11000);
  t.is(attempts, 1);
});

test.serial('a read that hits the driver’s deadline (timeoutMS) answers 503, not 500', async (t) => {
  const created = await app.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(100, 'Slow Paper') });
  store.inject = (op) => (op.collection === 'purchase_views' && op.method === 'findOne' ? new MongoOperationTimeoutError('Timed out after 10000ms') : undefined);
  const res = await app.request(`/v1/purchase-requests/${created.body.purchaseRequest.id}`, { key: org.keys['a-key'] });
  t.is(res.status, 503);
  t.is(res.body.error.code, 'internal_error');
});
