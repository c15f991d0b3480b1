// The wire-protocol listener's defences (it runs inside the web process, so exhausting it takes
// HTTP down too): backpressure on a client that sends without reading, the small message limit
// before authentication, the connection cap and the idle timeouts, the analyst's budget of bytes in
// flight. Real sockets, real listener.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoClient, type Document } from 'mongodb';
import { MAX_UNAUTHENTICATED_MESSAGE_BYTES } from '../../src/store/wire/frames.ts';
import { startListener, type TestListener } from '../helpers/wire.ts';
import { authenticatedConnection, closedWithin, open, opMsg } from '../helpers/wire-raw.ts';

const MB = 1024 * 1024;

const hello = (requestId = 1) => opMsg({ hello: 1, $db: 'admin' }, requestId);

/** Reads replies until count of them have arrived; returns their responseTo fields. */
async function replies(socket: Socket, count: number, ms = 10_000): Promise<number[]> {
  const seen: number[] = [];
  let pending = Buffer.alloc(0);
  const done = new Promise<number[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${seen.length} of ${count} replies`)), ms);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 16 && pending.length >= pending.readInt32LE(0)) {
        seen.push(pending.readInt32LE(8));
        pending = pending.subarray(pending.readInt32LE(0));
      }
      if (seen.length >= count) {
        clearTimeout(timer);
        resolve(seen);
      }
    });
    socket.on('close', () => reject(new Error(`closed after ${seen.length} of ${count} replies`)));
  });
  return done;
}

test.serial('a client that pipelines hellos and never reads its replies is held back by TCP, not buffered by the server', async (t) => {
  const wire = await startListener();
  t.teardown(() => wire.close());
  const socket = await open(wire);
  t.teardown(() => socket.destroy());
  // Written 64 KiB at a time, each after the last was taken by the kernel: what was taken is what
  // the server read plus what the loopback buffers hold. Stop once all of it is taken, or nothing
  // more has been for 3 s (the server stopped reading). Serial, so that no other test holds the
  // event loop that long.
  const one = hello();
  const chunk = Buffer.concat(Array.from({ length: Math.floor((64 * 1024) / one.length) }, () => one));
  const total = 64 * MB;
  let accepted = 0;
  let stalled = false;
  while (accepted < total && !stalled) {
    const written = new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
    stalled = !(await Promise.race([written.then(() => true), sleep(3000).then(() => false)]));
    if (!stalled) accepted += chunk.length;
  }
  // Loopback socket buffers hold a few MB at most (36 MB with this machine's autotuning ceilings).
  t.true(accepted < 48 * MB, `the server took ${(accepted / MB).toFixed(1)} MB of hellos whose replies nobody read`);
  t.log(`taken before the server stopped reading: ${(accepted / MB).toFixed(1)} MB`);
  // The listener still serves everyone else.
  const other = await open(wire);
  t.teardown(() => other.destroy());
  other.write(hello(7));
  t.deepEqual(await replies(other, 1), [7]);
});

test('pipelined messages past the queue limit are all answered, in order, once the client reads', async (t) => {
  const wire = await startListener();
  t.teardown(() => wire.close());
  const socket = await open(wire);
  t.teardown(() => socket.destroy());
  const ids = Array.from({ length: 2000 }, (_, i) => i + 1);
  socket.write(Buffer.concat(ids.map((id) => hello(id))));
  await sleep(200);
  t.deepEqual(await replies(socket, ids.length), ids);
});

test('before authentication a message above the small limit closes the connection; a hello that fits is answered', async (t) => {
  const wire = await startListener();
  t.teardown(() => wire.close());
  const fits = await open(wire);
  t.teardown(() => fits.destroy());
  const padded = opMsg({ hello: 1, $db: 'admin', client: { padding: 'x'.repeat(MAX_UNAUTHENTICATED_MESSAGE_BYTES - 200) } }, 3);
  t.true(padded.length <= MAX_UNAUTHENTICATED_MESSAGE_BYTES);
  fits.write(padded);
  t.deepEqual(await replies(fits, 1), [3]);

  const big = await open(wire);
  t.teardown(() => big.destroy());
  const frame = opMsg({ insert: 'c', $db: 'd', documents: [{ x: 'x'.repeat(MAX_UNAUTHENTICATED_MESSAGE_BYTES) }] });
  big.write(frame.subarray(0, 1024)); // the header declares the length; the rest never needs to arrive
  t.true(await closedWithin(big, 3000), 'an unauthenticated 64 KiB+ message was accepted');
});

test('after authentication messages up to the 48 MB limit still go through the driver', async (t) => {
  const wire = await startListener();
  t.teardown(() => wire.close());
  const name = `l_${randomBytes(5).toString('hex')}`;
  const c = await MongoClient.connect(wire.serviceUrl(name), { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => c.close());
  const docs = Array.from({ length: 3 }, (_, i) => ({ _id: i, blob: 'y'.repeat(4 * MB) }));
  await c.db().collection<{ _id: number; blob: string }>('big').insertMany(docs);
  t.is((await c.db().collection<{ _id: number; blob: string }>('big').findOne({ _id: 2 }))?.blob.length, 4 * MB);
});

test('connections beyond the cap are closed at once; a freed slot is usable again', async (t) => {
  const wire = await startListener({ maxConnections: 2 });
  t.teardown(() => wire.close());
  const first = await open(wire);
  const second = await open(wire);
  t.teardown(() => first.destroy());
  t.teardown(() => second.destroy());
  second.write(hello(2));
  t.deepEqual(await replies(second, 1), [2]);
  const third = await open(wire);
  t.teardown(() => third.destroy());
  t.true(await closedWithin(third, 3000), 'a third connection was kept past maxConnections: 2');
  first.destroy();
  await sleep(100);
  const fourth = await open(wire);
  t.teardown(() => fourth.destroy());
  fourth.write(hello(4));
  t.deepEqual(await replies(fourth, 1), [4]);
});

// Serial: these depend on timers firing on time.
test.serial('an unauthenticated connection that sends nothing is closed after the handshake timeout', async (t) => {
  const wire = await startListener({ handshakeTimeoutMs: 300 });
  t.teardown(() => wire.close());
  const socket = await open(wire);
  t.teardown(() => socket.destroy());
  t.true(await closedWithin(socket, 3000), 'an idle unauthenticated connection stayed open');
});

test.serial('an authenticated idle connection is closed after the idle timeout; the driver reconnects and carries on', async (t) => {
  const wire = await startListener({ idleTimeoutMs: 300 });
  t.teardown(() => wire.close());
  const name = `l_${randomBytes(5).toString('hex')}`;
  const c = await MongoClient.connect(wire.serviceUrl(name), { serverSelectionTimeoutMS: 5000, heartbeatFrequencyMS: 60_000 });
  t.teardown(() => c.close());
  const created: number[] = [];
  c.on('connectionCreated', (event) => created.push(event.connectionId as number));
  await c.db().collection('idle').insertOne({ _id: 1 } as Document);
  const before = created.length;
  await sleep(800);
  t.is(await c.db().collection('idle').countDocuments(), 1);
  t.true(created.length > before, 'the pooled connection outlived the idle timeout');
});

test.serial('drivers keep working with short timeouts: monitoring connections (never authenticated) stay up on their heartbeats', async (t) => {
  const wire = await startListener({ handshakeTimeoutMs: 1000 });
  t.teardown(() => wire.close());
  const name = `l_${randomBytes(5).toString('hex')}`;
  const c = await MongoClient.connect(wire.serviceUrl(name), { serverSelectionTimeoutMS: 5000, heartbeatFrequencyMS: 500 });
  t.teardown(() => c.close());
  let failures = 0;
  c.on('serverHeartbeatFailed', () => failures++);
  for (let i = 0; i < 6; i++) {
    await c.db().collection('beat').insertOne({ i });
    await sleep(400);
  }
  t.is(await c.db().collection('beat').countDocuments(), 6);
  t.is(failures, 0);
});

// Unauthenticated connections are limited apart from authenticated ones, and the latter per user.

test.serial('250 password-less connections sending hello every 3 s do not keep the analyst out', async (t) => {
  const wire = await startListener({ maxUnauthenticated: 32 });
  t.teardown(() => wire.close());
  const sockets: Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  t.teardown(() => {
    for (const timer of timers) clearInterval(timer);
    for (const socket of sockets) socket.destroy();
  });
  // Each writes hello at once and every 3 s after, and never authenticates.
  for (let i = 0; i < 250; i++) {
    const socket = connect(wire.listener.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('data', () => {});
    socket.on('connect', () => socket.write(hello(i + 1)));
    timers.push(setInterval(() => socket.writable && socket.write(hello(i + 1)), 3000));
    sockets.push(socket);
  }
  await Promise.all(sockets.map((s) => (s.connecting ? once(s, 'connect').catch(() => undefined) : undefined)));
  await sleep(500);
  const open = sockets.filter((s) => !s.destroyed).length;
  t.true(open <= 32, `${open} unauthenticated connections are still open (the cap is 32)`);

  const name = `l_${randomBytes(5).toString('hex')}`;
  const service = await MongoClient.connect(wire.serviceUrl(name), { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => service.close());
  await service.db().collection('analytics_daily_spend').insertOne({ _id: 'a', approvedMinor: 5 } as Document);
  const analyst = await MongoClient.connect(wire.analystUrl(name), { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => analyst.close());
  // Queries while the hellos go on, past several of their rounds.
  for (let round = 0; round < 4; round++) {
    t.deepEqual(await analyst.db().collection('analytics_daily_spend').find().toArray(), [{ _id: 'a', approvedMinor: 5 }]);
    await sleep(1000);
  }
});

test.serial('an unauthenticated connection is closed at the handshake deadline even though it keeps sending hello', async (t) => {
  const wire = await startListener({ handshakeTimeoutMs: 500 });
  t.teardown(() => wire.close());
  const socket = await open(wire);
  t.teardown(() => socket.destroy());
  let answered = 0;
  socket.on('data', () => answered++);
  const timer = setInterval(() => socket.writable && socket.write(hello()), 100);
  t.teardown(() => clearInterval(timer));
  t.true(await closedWithin(socket, 3000), 'hello kept an unauthenticated connection open');
  t.true(answered > 0, 'its hellos were answered until then');
});

test.serial('a client whose login arrived before the handshake deadline, but was read after it, still logs in', async (t) => {
  // A listener too busy to read (a loaded machine) is not a client that never authenticates: the
  // deadline judges what the client had sent by then, not what the listener had got round to reading.
  const wire = await startListener({ handshakeTimeoutMs: 300 });
  t.teardown(() => wire.close());
  const login = authenticatedConnection(wire, wire.serviceUrl('x'), undefined, 700);
  const connection = await Promise.race([login, sleep(5000).then(() => undefined)]);
  t.teardown(() => connection?.socket.destroy());
  if (connection === undefined) return t.fail('the login never finished: the connection was closed after its first step');
  connection.socket.write(opMsg({ ping: 1, $db: 'admin' }, 9));
  t.is((await connection.next()).ok, 1);
});

test.serial('authenticated connections are capped per user: a third of the service user is refused; the analyst still connects', async (t) => {
  const wire = await startListener({ maxConnectionsPerUser: 2 });
  t.teardown(() => wire.close());
  const name = `l_${randomBytes(5).toString('hex')}`;
  const clients: MongoClient[] = [];
  t.teardown(() => Promise.all(clients.map((c) => c.close())));
  for (let i = 0; i < 2; i++) {
    const c = await MongoClient.connect(wire.serviceUrl(name), { serverSelectionTimeoutMS: 5000, maxPoolSize: 1 });
    clients.push(c);
    await c.db().collection('analytics_purchases').insertOne({ i } as Document);
  }
  const third = new MongoClient(wire.serviceUrl(name), { serverSelectionTimeoutMS: 2000, maxPoolSize: 1 });
  clients.push(third);
  const refused = await third
    .db()
    .collection('analytics_purchases')
    .countDocuments()
    .then(() => undefined, (error: Error) => error.message);
  t.regex(refused ?? 'it was allowed', /already holds 2 authenticated connections/);
  const analyst = await MongoClient.connect(wire.analystUrl(name), { serverSelectionTimeoutMS: 5000, maxPoolSize: 1 });
  clients.push(analyst);
  t.is(await analyst.db().collection('analytics_purchases').countDocuments(), 2);
  // A freed slot is usable again.
  await clients[0].close();
  await sleep(200);
  const again = await MongoClient.connect(wire.serviceUrl(name), { serverSelectionTimeoutMS: 5000, maxPoolSize: 1 });
  clients.push(again);
  t.is(await again.db().collection('analytics_purchases').countDocuments(), 2);
});

// The analyst's connections together hold a budget of bytes in flight (messages arriving, waiting or
// running, and replies not yet taken by the client): raw connections that authenticate by hand.

/** A raw connection authenticated as the analyst (SCRAM by hand); `then` is sent right after its last step. */
const analystConnection = (wire: TestListener, then?: Buffer) => authenticatedConnection(wire, wire.analystUrl('x'), then);

/** What came first: the reply, or what the test did after giving a listener without the budget time to answer. */
async function answeredBefore(reply: Promise<Document>, then: () => void): Promise<boolean> {
  let answered = false;
  const settled = reply.then(() => (answered = true));
  await Promise.race([settled, sleep(500)]);
  const first = answered;
  then();
  await settled;
  return first;
}

test('the analyst\'s next message waits while another of its messages, still arriving, holds the budget', async (t) => {
  // A budget of one message at a time.
  const wire = await startListener({ maxInFlightBytes: 1 });
  t.teardown(() => wire.close());
  const a = await analystConnection(wire);
  t.teardown(() => a.socket.destroy());
  // a's first message is answered; its second has begun to arrive (its length is in, the rest is not).
  const second = opMsg({ ping: 1, $db: 'admin', padding: 'x'.repeat(1000) }, 3);
  a.socket.write(Buffer.concat([opMsg({ ping: 1, $db: 'admin' }, 2), second.subarray(0, 100)]));
  t.is((await a.next()).ok, 1);
  // b sends its ping with its last authentication message: it is read as the analyst's all the same.
  const b = await analystConnection(wire, opMsg({ ping: 1, $db: 'admin' }, 4));
  t.teardown(() => b.socket.destroy());
  const early = await answeredBefore(b.next(), () => a.socket.write(second.subarray(100)));
  t.false(early, 'b was answered while a\'s message held the budget');
  t.is((await a.next()).ok, 1);
});

test('an analyst\'s reply the client does not read holds the budget until it does', async (t) => {
  const wire = await startListener({ maxInFlightBytes: 1 });
  t.teardown(() => wire.close());
  const name = `l_${randomBytes(5).toString('hex')}`;
  const service = await MongoClient.connect(wire.serviceUrl(name), { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => service.close());
  // One document larger than what the sockets' kernel buffers hold (about 4 MB here).
  await service.db().collection('analytics_purchases').insertOne({ _id: 'big', blob: 'y'.repeat(15 * MB) } as Document);
  const a = await analystConnection(wire);
  const b = await analystConnection(wire);
  t.teardown(() => (a.socket.destroy(), b.socket.destroy()));
  // Once a's ping is answered its find holds the budget (both were sent at once); a then stops reading.
  a.socket.write(Buffer.concat([opMsg({ ping: 1, $db: 'admin' }, 2), opMsg({ find: 'analytics_purchases', $db: name }, 3)]));
  t.is((await a.next()).ok, 1);
  a.socket.pause();
  const read = a.next();
  b.socket.write(opMsg({ ping: 1, $db: 'admin' }, 4));
  const early = await answeredBefore(b.next(), () => a.socket.resume());
  t.false(early, 'b was answered while a\'s unread reply held the budget');
  t.is((await read).cursor.firstBatch[0].blob.length, 15 * MB);
});
