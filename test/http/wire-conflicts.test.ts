// The service through the official driver under injected faults (src/store/wire/ fail points):
// transaction operations answer WriteConflict, and commits answer UnknownTransactionCommitResult
// after committing, so the driver's withTransaction retries run for real. 200 concurrent purchases
// still give exactly one decision per idempotency key and budget counters that add up exactly.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { openMongoStore } from '../../src/store/mongo.ts';
import type { Store } from '../../src/store/store.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { startListener, type TestListener } from '../helpers/wire.ts';
import { sumByPeriodOfPurchase, windowsOf } from '../helpers/windows.ts';
import { LANE_TIMEOUT_MS } from '../helpers/store.ts';

const LIMIT = 400_000;
const KEYS = 100;

let wire: TestListener;
let store: Store;
let app: TestApp;

test.before(async () => {
  wire = await startListener();
  const name = `conflicts_${randomBytes(4).toString('hex')}`;
  store = await openMongoStore(wire.serviceUrl(name, 'appName=service-under-test'), { dbName: name, timeoutMs: LANE_TIMEOUT_MS });
  app = await startApp({ store });
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
  await wire?.close();
});

function manifest(handle: string) {
  return {
    organization: { handle, name: 'Conflicted', currency: 'EUR', timezone: 'Europe/Berlin' },
    agents: [{ handle: 'x', name: 'X' }],
    policies: [
      {
        handle: 'daily',
        name: 'Daily budget',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: String(LIMIT) }],
        merchants: [],
      },
    ],
    apiKeys: [{ handle: 'x-key', agent: 'x' }],
  };
}

async function purchasesUnderFaults(t: import('ava').ExecutionContext, handle: string, failPoint: Record<string, unknown>) {
  const org = await applyManifest(app, manifest(handle));
  const admin = (store as unknown as { client: import('mongodb').MongoClient }).client.db('admin');
  await admin.command({ configureFailPoint: 'failCommand', ...failPoint });
  // Each idempotency key is sent twice at once: 200 concurrent requests, 100 purchases.
  const amounts = Array.from({ length: KEYS }, (_, i) => 1000 + ((i * 7919) % 9000));
  // A client does what docs/reference/contract.md §7 says: a 503 internal_error (the retry budget ran out, e.g. a commit whose
  // outcome stayed unknown) is retried with the same Idempotency-Key, which must never decide twice.
  let retried503 = 0;
  const submit = async (k: number) => {
    for (let attempt = 1; ; attempt++) {
      const res = await app.request('/v1/purchase-requests', {
        key: org.keys['x-key'],
        body: { merchant: 'Parts Ltd', amountMinor: amounts[k], reason: `part ${k}` },
        headers: { 'Idempotency-Key': `key-${k}` },
      });
      if (res.status !== 503 || attempt === 5) return res;
      t.is(res.body.error.code, 'internal_error');
      retried503++;
    }
  };
  const results = await Promise.all(Array.from({ length: KEYS * 2 }, (_, i) => submit(i % KEYS).then((res) => ({ res, k: i % KEYS }))));
  const { count } = await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });
  t.true(count > 0, `the fail point fired (${count} times)`);

  t.deepEqual(results.filter(({ res }) => res.status !== 201 && res.status !== 200).map(({ res }) => res.text), []);
  const decisions = new Map<number, Set<string>>();
  for (const { res, k } of results) {
    decisions.set(k, (decisions.get(k) ?? new Set()).add(res.body.decision.id));
  }
  t.true([...decisions.values()].every((ids) => ids.size === 1), 'one decision per idempotency key');
  t.is(decisions.size, KEYS);
  // Without retries every key has exactly one 201; a retried request may find its own commit and replay (200).
  t.true(results.filter(({ res }) => res.status === 201).length <= KEYS);
  if (retried503 === 0) t.is(results.filter(({ res }) => res.status === 201).length, KEYS);
  t.is(await store.db.collection('purchases').countDocuments({ organizationId: org.organizationId }), KEYS);

  // Keys, not responses: a retried key may answer twice (201, then a 200 replay) but was approved once.
  const approvedKeys = new Set(results.filter(({ res }) => res.body.decision.outcome === 'APPROVED').map(({ k }) => k));
  // One window per day the purchases were requested in (two when Berlin's midnight falls during the run).
  const purchaseOf = (k: number) => results.find((r) => r.k === k && r.res.body.purchaseRequest)!.res.body.purchaseRequest.id as string;
  const approvedByDay = await sumByPeriodOfPurchase(store.db, [...approvedKeys].map((k) => ({ purchaseId: purchaseOf(k), amountMinor: amounts[k] })));
  const windows = await windowsOf(store.db, { policyId: org.policies.daily.id });
  t.deepEqual(windows.map((w) => w.periodKey), [...approvedByDay.keys()].sort());
  for (const window of windows) {
    t.is(window.committedMinor, approvedByDay.get(window.periodKey), 'the budget counter is exactly the approved total');
    t.true(window.committedMinor <= LIMIT);
    t.is(window.heldMinor, 0);
  }
}

test.serial('200 concurrent purchases while transaction operations answer WriteConflict (112, TransientTransactionError)', async (t) => {
  await purchasesUnderFaults(t, 'write-conflicts', {
    mode: { activationProbability: 0.05 },
    data: {
      failCommands: ['find', 'insert', 'update', 'delete', 'findAndModify', 'aggregate', 'bulkWrite', 'commitTransaction'],
      errorCode: 112,
      errorLabels: ['TransientTransactionError'],
      inTransaction: true,
      appName: 'service-under-test',
    },
  });
});

// The driver wraps a command error of MongoClient.bulkWrite in a MongoClientBulkWriteError (the
// server's error, with its TransientTransactionError label, is its cause): still a conflict to retry.
test.serial('200 concurrent purchases while the client bulk write of every decision often answers WriteConflict', async (t) => {
  await purchasesUnderFaults(t, 'bulk-write-conflicts', {
    mode: { activationProbability: 0.3 },
    data: { failCommands: ['bulkWrite'], errorCode: 112, errorLabels: ['TransientTransactionError'], inTransaction: true, appName: 'service-under-test' },
  });
});

test.serial('200 concurrent purchases while commits answer UnknownTransactionCommitResult after committing', async (t) => {
  await purchasesUnderFaults(t, 'unknown-commits', {
    mode: { activationProbability: 0.3 },
    data: {
      failCommands: ['commitTransaction'],
      writeConcernError: { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } },
      appName: 'service-under-test',
    },
  });
});

test.serial('a store connection that drops twice (the driver retries once) answers 503 with Retry-After, not a 500; the next request is served', async (t) => {
  // What a MongoDB failover looks like to a request: the primary closes its connections.
  const org = await applyManifest(app, manifest('dropped-connections'));
  const created = await app.request('/v1/purchase-requests', { key: org.keys['x-key'], body: { merchant: 'Parts Ltd', amountMinor: 1000, reason: 'part' } });
  t.is(created.status, 201);
  const admin = (store as unknown as { client: import('mongodb').MongoClient }).client.db('admin');
  await admin.command({ configureFailPoint: 'failCommand', mode: { times: 2 }, data: { failCommands: ['find'], closeConnection: true, appName: 'service-under-test' } });
  const dropped = await app.request(`/v1/purchase-requests/${created.body.purchaseRequest.id}`, { key: org.keys['x-key'] });
  const { count } = await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });
  t.is(count, 2, 'the connection was closed on both attempts');
  t.is(dropped.status, 503, dropped.text);
  t.is(dropped.body.error.code, 'internal_error');
  t.is(dropped.headers.get('retry-after'), '1');
  const again = await app.request(`/v1/purchase-requests/${created.body.purchaseRequest.id}`, { key: org.keys['x-key'] });
  t.is(again.status, 200);
});
