// What is created at start (docs/internals/design.md §2): every collection the service writes (implicit creation inside
// a transaction fails on sharded clusters), every index, and the unique index that keeps Agenda's
// recurring jobs single when two workers start together. And the test teardown a `readWrite` user may run.
import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STORE_LAYOUT, createIndexes, startJobs } from '../../src/compose.ts';

const { collections: COLLECTIONS, indexes: INDEXES, retired: RETIRED_INDEXES } = STORE_LAYOUT;
import { attributableSpend } from '../../src/budgets/windows.ts';
import { isDuplicateKeyError, type StoreDb } from '../../src/store/store.ts';
import { MongoServerError } from 'mongodb';
import { AGENDA_JOBS, createAgenda, every } from '../../src/jobs/agenda.ts';
import { startApp } from '../helpers/app.ts';
import { emptyCollections, testStore } from '../helpers/store.ts';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourceFiles(path)));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

test('every collection named in src/ is created at start', async (t) => {
  const named = new Set<string>();
  for (const file of await sourceFiles(SRC)) {
    for (const m of (await readFile(file, 'utf8')).matchAll(/\.collection(?:<[^>]*>)?\('([a-z_]+)'\)/g)) named.add(m[1]);
  }
  t.true(named.has('webhook_quotas') && named.size > 10, 'the scan finds the collections');
  t.deepEqual([...named].filter((n) => !COLLECTIONS.includes(n)), []);

  const store = await testStore();
  try {
    await createIndexes(store.db);
    const existing = await store.db.listCollectionNames();
    t.deepEqual(COLLECTIONS.filter((n) => !existing.includes(n)), []);
    await createIndexes(store.db); // idempotent
  } finally {
    await store.close();
  }
});

test('start-up replaces the indexes of deliveries by status with ones that also order them (by due time; then by _id for the sweep)', async (t) => {
  const store = await testStore();
  try {
    const deliveries = store.db.collection('webhook_deliveries');
    await deliveries.createIndex({ endpointId: 1, status: 1 });
    await deliveries.createIndex({ status: 1, nextAttemptAt: 1 });
    t.true((await deliveries.indexes()).some((i) => i.name === 'endpointId_1_status_1'));
    await createIndexes(store.db);
    const names = (await deliveries.indexes()).map((i) => i.name);
    t.false(names.includes('endpointId_1_status_1'));
    t.true(names.includes('endpointId_1_status_1_nextAttemptAt_1'));
    // And the sweep's, by status and due time, with one that also orders the due ones by _id.
    t.false(names.includes('status_1_nextAttemptAt_1'));
    t.true(names.includes('status_1_nextAttemptAt_1__id_1'));
  } finally {
    await store.close();
  }
});

test('start-up replaces the index of endpoints by organisation and creation with one that gives GET /v1/webhooks its whole order', async (t) => {
  const store = await testStore();
  try {
    const endpoints = store.db.collection('webhook_endpoints');
    await endpoints.createIndex({ organizationId: 1, createdAt: 1 });
    await createIndexes(store.db);
    const names = (await endpoints.indexes()).map((i) => i.name);
    t.false(names.includes('organizationId_1_createdAt_1'));
    t.true(names.includes('organizationId_1_createdAt_1__id_1'));
  } finally {
    await store.close();
  }
});

test('start-up replaces the analytics indexes of earlier versions by the organisation\'s day and month indexes, also when two start-ups run at once', async (t) => {
  const store = await testStore();
  try {
    const purchases = store.db.collection('analytics_purchases');
    // Every earlier one, in the order the retired list names them.
    await purchases.createIndex({ policyIds: 1, currency: 1, status: 1, requestedAt: 1 });
    await purchases.createIndex({ committedWindowIds: 1, requestedAt: 1 });
    await purchases.createIndex({ policyIds: 1, currency: 1, status: 1, dayKey: 1 });
    await purchases.createIndex({ policyIds: 1, currency: 1, status: 1, monthKey: 1 });
    await purchases.createIndex({ policyIds: 1, currency: 1, status: 1, monthKey: 1, dayKey: 1 });
    await purchases.createIndex({ organizationId: 1, monthKey: 1, agentId: 1 });
    t.deepEqual((await purchases.indexes()).map((i) => i.name), ['_id_', ...RETIRED_INDEXES.filter((r) => r.collection === 'analytics_purchases').map((r) => r.name)], 'the names MongoDB gives those keys');
    await store.db.collection('policies').insertOne({ _id: 'p2', organizationId: 'o1' } as never);
    // Labelled as the service labels them, in the organisation's zone then (Berlin): 23:30 UTC on the 17th is the 18th there.
    const row = { organizationId: 'o1', agentId: 'a1', policyIds: ['p1', 'p2'], currency: 'EUR', status: 'APPROVED', amountMinor: 700, requestedAt: new Date('2026-11-18T10:00:00.000Z'), dayKey: '2026-11-18', monthKey: '2026-11' };
    await purchases.insertMany([{ _id: 'a', ...row }, { _id: 'b', ...row, requestedAt: new Date('2026-11-17T23:30:00.000Z'), amountMinor: 50 }] as never);
    await Promise.all([createIndexes(store.db), createIndexes(store.db)]);
    const expected = ['_id_', 'organizationId_1_dayKey_1', 'organizationId_1_monthKey_1'];
    t.deepEqual((await purchases.indexes()).map((i) => i.name).sort(), expected);
    await createIndexes(store.db); // and again: nothing left to drop
    t.deepEqual((await purchases.indexes()).map((i) => i.name).sort(), expected);
    // The purchases' index by agent of an earlier version, the same way.
    const requests = store.db.collection('purchases');
    await requests.dropIndex('organizationId_1_requestedAt_-1');
    await requests.createIndex({ organizationId: 1, agentId: 1, requestedAt: -1 });
    await createIndexes(store.db);
    t.deepEqual((await requests.indexes()).map((i) => i.name).sort(), ['_id_', 'organizationId_1_requestedAt_-1']);
    // A period is its bounds, whatever the labels say.
    const spend = (periodStart: string, periodEnd: string) => attributableSpend(store.db, { policyId: 'p2', currency: 'EUR', periodStart, periodEnd });
    t.is(await spend('2026-11-17T23:00:00.000Z', '2026-11-18T23:00:00.000Z'), 750n);
    t.is(await spend('2026-11-18T00:00:00.000Z', '2026-11-19T00:00:00.000Z'), 700n);
    t.is(await spend('2026-10-31T23:00:00.000Z', '2026-11-17T23:00:00.000Z'), 0n);
    t.is(await spend('2026-10-31T23:00:00.000Z', '2026-11-30T23:00:00.000Z'), 750n);
  } finally {
    await store.close();
  }
});

test('the query of attributable spend fixes by equality the organisation and a day or month label: a whole index, or the leading fields of one', async (t) => {
  const matches: Array<Record<string, unknown>> = [];
  const db = {
    collection: (name: string) =>
      name === 'policies'
        ? { findOne: async () => ({ _id: 'p', organizationId: 'o' }) }
        : { aggregate: (pipeline: Array<{ $match?: Record<string, unknown> }>) => (matches.push(pipeline[0].$match!), { toArray: async () => [] }) },
  } as unknown as StoreDb;
  const indexed = INDEXES.filter((i) => i.collection === 'analytics_purchases').map((i) => Object.keys(i.keys));
  for (const [periodStart, periodEnd, label] of [
    ['2026-11-17T23:00:00.000Z', '2026-11-18T23:00:00.000Z', 'dayKey'],
    ['2026-10-31T23:00:00.000Z', '2026-11-30T23:00:00.000Z', 'monthKey'],
  ] as const) {
    matches.length = 0;
    await attributableSpend(db, { policyId: 'p', currency: 'EUR', periodStart, periodEnd });
    t.true(matches.length >= 1 && matches.length <= 3, `${matches.length} queries for one ${label} period`);
    for (const match of matches) {
      t.is(match.organizationId, 'o');
      t.is(typeof match[label], 'string');
      const equalities = Object.keys(match).filter((k) => typeof match[k] === 'string');
      t.true(indexed.some((keys) => keys[0] === 'organizationId' && keys[1] === label && equalities.includes(keys[0]) && equalities.includes(keys[1])), equalities.join());
    }
  }
});

test('Agenda’s single (recurring) jobs are unique by name; other jobs are not', async (t) => {
  const store = await testStore();
  try {
    await createIndexes(store.db);
    const jobs = store.db.collection(AGENDA_JOBS);
    await jobs.insertOne({ name: 'sweep', type: 'single' });
    const error = await t.throwsAsync(jobs.insertOne({ name: 'sweep', type: 'single' }));
    t.true(isDuplicateKeyError(error));
    await jobs.insertMany([{ name: 'attempt', type: 'normal' }, { name: 'attempt', type: 'normal' }]);
    t.is(await jobs.countDocuments({ name: 'attempt' }), 2);
  } finally {
    await store.close();
  }
});

test('duplicates left by the old race are removed so the unique index can be built', async (t) => {
  const store = await testStore();
  try {
    const jobs = store.db.collection(AGENDA_JOBS);
    await jobs.insertMany([{ name: 'sweep', type: 'single' }, { name: 'sweep', type: 'single' }, { name: 'other', type: 'single' }]);
    await createIndexes(store.db);
    t.is(await jobs.countDocuments({ name: 'sweep' }), 1);
    t.is(await jobs.countDocuments({ name: 'other' }), 1);
  } finally {
    await store.close();
  }
});

test('two workers starting together leave one document per recurring job', async (t) => {
  const app = await startApp();
  const agendas = await Promise.all([createAgenda(app.store, { processEvery: 60_000 }), createAgenda(app.store, { processEvery: 60_000 })]);
  const stops = await Promise.all(agendas.map((agenda) => startJobs(app.deps, agenda)));
  try {
    const recurring = await app.store.db.collection(AGENDA_JOBS).find({ type: 'single' }).toArray();
    const names = recurring.map((j) => j.name).sort();
    t.true(names.length >= 3, names.join(', '));
    t.deepEqual(names, [...new Set(names)]);
  } finally {
    for (const stop of stops) await stop();
    await app.close();
  }
});

test('a worker that loses the race to insert a recurring job (duplicate key) declares it again and starts', async (t) => {
  const calls: string[] = [];
  const agenda = {
    async every(interval: string, name: string) {
      calls.push(`${interval} ${name}`);
      if (calls.length === 1) throw new MongoServerError({ message: 'E11000 duplicate key error collection: agendaJobs index: single_job_name_unique', code: 11000 });
    },
  };
  await every(agenda as never, '1 minute', 'approvals.expire-due');
  t.deepEqual(calls, ['1 minute approvals.expire-due', '1 minute approvals.expire-due']);
  const failing = { every: async () => Promise.reject(new Error('no connection')) };
  await t.throwsAsync(every(failing as never, '1 minute', 'x'), { message: 'no connection' });
});

test('teardown empties every collection one by one (no dropDatabase, which readWrite may not run)', async (t) => {
  const store = await testStore();
  try {
    await createIndexes(store.db);
    await store.db.collection('purchases').insertOne({ _id: 'p' } as never);
    await store.db.collection('events').insertOne({ _id: 'e' } as never);
    await emptyCollections(store.db);
    for (const name of COLLECTIONS) t.is(await store.db.collection(name).countDocuments({}), 0, name);
  } finally {
    await store.close();
  }
});
