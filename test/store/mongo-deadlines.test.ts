// MONGODB_TIMEOUT_MS is a real deadline: a server that never answers, and a command whose reply never
// comes, both end within it (and a command ends as the 503 of runCommand), instead of the driver's
// 30 s server selection or an endless wait. Driver 7.8 ignores a client-level `timeoutMS`, so these
// tests are what show the options of src/store/mongo.ts deadlineOptions act.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { MongoServerError } from 'mongodb';
import test from 'ava';
import { openMongoStore } from '../../src/store/mongo.ts';
import { isStoreUnavailable } from '../../src/store/store.ts';
import { runCommand } from '../../src/commands/run-command.ts';
import { ApiError } from '../../src/http/errors.ts';
import { startListener } from '../helpers/wire.ts';

const DEADLINE_MS = 800;
// Far below the driver's own 30 s server selection, far above the deadline: it tells which one acted.
const WELL_WITHIN_MS = 15_000;

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

test('a server that accepts connections and never answers: refused within the deadline', async (t) => {
  const sockets: Socket[] = [];
  const blackHole = createServer((socket) => void sockets.push(socket));
  const port = await listen(blackHole);
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    blackHole.close();
  });
  const started = performance.now();
  const error = await t.throwsAsync(openMongoStore(`mongodb://127.0.0.1:${port}/deadlines`, { dbName: 'deadlines', timeoutMs: DEADLINE_MS }));
  t.true(isStoreUnavailable(error), `${error?.name}: ${error?.message}`);
  t.true(performance.now() - started < WELL_WITHIN_MS);
});

test('a command whose reply never comes ends within the deadline, as 503 internal_error', async (t) => {
  const wire = await startListener();
  t.teardown(() => wire.close());
  // A proxy in front of the listener that can stop passing replies on, as a hung server would.
  let frozen = false;
  const pairs: Socket[] = [];
  const proxy = createServer((client) => {
    const upstream = connect(wire.listener.port, '127.0.0.1');
    pairs.push(client, upstream);
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (!frozen) client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  const port = await listen(proxy);
  t.teardown(() => {
    for (const s of pairs) s.destroy();
    proxy.close();
  });
  const url = wire.serviceUrl('deadlines').replace(`:${wire.listener.port}/`, `:${port}/`);
  const store = await openMongoStore(url, { dbName: 'deadlines', timeoutMs: DEADLINE_MS });
  t.teardown(() => store.close());
  await store.db.collection('things').insertOne({ _id: 'one' as never });

  frozen = true;
  const started = performance.now();
  const error = await t.throwsAsync(runCommand(store, (session) => store.db.collection('things').findOne({ _id: 'one' as never }, { session })));
  t.true(error instanceof ApiError, `${error?.name}: ${error?.message}`);
  t.is((error as ApiError).status, 503);
  t.is((error as ApiError).code, 'internal_error');
  t.true(performance.now() - started < WELL_WITHIN_MS + 20_000, 'within the deadline and the retry budget');
});

test('every read is sent with the deadline as maxTimeMS, so that the server stops it too; a read it stopped is 503', async (t) => {
  const wire = await startListener();
  t.teardown(() => wire.close());
  const store = await openMongoStore(wire.serviceUrl('deadlines'), { dbName: 'deadlines', timeoutMs: DEADLINE_MS, clientOptions: { monitorCommands: true } });
  t.teardown(() => store.close());
  const sent: Record<string, unknown> = {};
  store.client.on('commandStarted', (event) => void (sent[event.commandName] = event.command.maxTimeMS));
  const things = store.db.collection('things');
  await things.insertOne({ _id: 'one' as never, n: 1 });
  await things.find({}).toArray();
  await runCommand(store, (session) => things.findOne({ _id: 'one' as never }, { session }));
  await things.aggregate([{ $match: {} }]).toArray();
  await things.countDocuments({ n: 1 });
  await things.distinct('n');
  t.deepEqual(sent, { insert: undefined, find: DEADLINE_MS, commitTransaction: DEADLINE_MS, aggregate: DEADLINE_MS, distinct: DEADLINE_MS });
  await things.find({}, { maxTimeMS: 5 }).toArray();
  t.is(sent.find, 5, 'a read that sets its own keeps it');

  const stopped = await t.throwsAsync(runCommand(store, () => Promise.reject(new MongoServerError({ message: 'operation exceeded time limit', code: 50, codeName: 'MaxTimeMSExpired' }))));
  t.is((stopped as ApiError).status, 503);
});

test('a write outside a transaction is acknowledged by a majority, within the deadline, whatever the URI says', async (t) => {
  const wire = await startListener();
  t.teardown(() => wire.close());
  const store = await openMongoStore(wire.serviceUrl('deadlines', 'w=1'), { dbName: 'deadlines', timeoutMs: DEADLINE_MS, clientOptions: { monitorCommands: true } });
  t.teardown(() => store.close());
  const concerns: Record<string, unknown> = {};
  store.client.on('commandStarted', (event) => void (concerns[event.commandName] = event.command.writeConcern));
  const things = store.db.collection('things');
  await things.insertOne({ _id: 'one' as never, n: 1 });
  await things.updateOne({ _id: 'one' as never }, { $set: { n: 2 } });
  await things.deleteOne({ _id: 'one' as never });
  for (const command of ['insert', 'update', 'delete']) t.deepEqual(concerns[command], { w: 'majority', wtimeout: DEADLINE_MS }, command);
});
