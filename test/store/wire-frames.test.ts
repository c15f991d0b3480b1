// What the wire listener does with frames no current driver sends, compared with mongod 5.1 and
// later: OP_QUERY serves the legacy handshake and authentication only, and an OP_MSG's CRC-32C
// checksum is verified. Raw frames over a socket.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { crc32c } from '../../src/store/wire/frames.ts';
import { startListener, type TestListener } from '../helpers/wire.ts';
import { authenticatedConnection, closedWithin, opMsg, opQuery, rawConnection } from '../helpers/wire-raw.ts';

let wire: TestListener;
test.before(async () => {
  wire = await startListener();
});
test.after.always(() => wire?.close());

const dbName = () => `f_${randomBytes(5).toString('hex')}`;
const OP_REPLY = 1;
const QUERY_FAILURE = 2;

async function documents(database: string, collection: string): Promise<unknown[]> {
  const c = await MongoClient.connect(wire.serviceUrl(database), { serverSelectionTimeoutMS: 5000 });
  try {
    return await c.db().collection(collection).find({}, { projection: { _id: 1 } }).toArray();
  } finally {
    await c.close();
  }
}

test('crc32c: the check value of the Castagnoli polynomial', (t) => {
  t.is(crc32c(Buffer.from('123456789')), 0xe3069283);
  t.is(crc32c(Buffer.alloc(0)), 0);
});

test('OP_QUERY: the legacy handshake gets an OP_REPLY; any other command gets UnsupportedOpQueryCommand (352), and the connection serves on', async (t) => {
  const conn = await rawConnection(wire);
  t.teardown(() => conn.socket.destroy());
  conn.socket.write(opQuery('admin.$cmd', { isMaster: 1, helloOk: true }, 42));
  const handshake = await conn.reply();
  t.like(handshake, { opCode: OP_REPLY, responseTo: 42, flags: 0 });
  t.like(handshake.doc, { ismaster: true, helloOk: true, setName: 'spend-control', ok: 1 });

  // Old clients wrap a command with a read preference.
  conn.socket.write(opQuery('admin.$cmd', { $query: { buildInfo: 1 }, $readPreference: { mode: 'primaryPreferred' } }, 43));
  t.like((await conn.reply()).doc, { version: '8.0.0', ok: 1 });

  for (const [i, command] of [{ ping: 1 }, { connectionStatus: 1 }, { endSessions: [] }, { find: 'anything' }].entries()) {
    conn.socket.write(opQuery('admin.$cmd', command, 50 + i));
    const refused = await conn.reply();
    t.like(refused, { opCode: OP_REPLY, responseTo: 50 + i });
    t.like(refused.doc, { ok: 0, code: 352, codeName: 'UnsupportedOpQueryCommand' }, JSON.stringify(command));
    t.regex(refused.doc.errmsg, new RegExp(`^Unsupported OP_QUERY command: ${Object.keys(command)[0]}\\.`));
  }

  // A legacy query on a collection: mongod's $err with QueryFailure, not a closed connection.
  conn.socket.write(opQuery('spend.purchases', {}, 60));
  const legacy = await conn.reply();
  t.like(legacy, { opCode: OP_REPLY, responseTo: 60, flags: QUERY_FAILURE });
  t.like(legacy.doc, { code: 5739101, ok: 0 });
  t.regex(legacy.doc.$err, /^OP_QUERY is no longer supported/);

  conn.socket.write(opMsg({ hello: 1, $db: 'admin' }, 61));
  t.like((await conn.reply()).doc, { isWritablePrimary: true, ok: 1 });
});

test('OP_QUERY: an authenticated connection neither reads nor writes through it', async (t) => {
  const database = dbName();
  const conn = await authenticatedConnection(wire, wire.serviceUrl(database));
  t.teardown(() => conn.socket.destroy());
  conn.socket.write(opMsg({ insert: 'notes', documents: [{ _id: 'first' }], $db: database }, 2));
  t.like(await conn.next(), { n: 1, ok: 1 });

  conn.socket.write(opQuery(`${database}.$cmd`, { find: 'notes', filter: {} }, 3));
  t.like(await conn.next(), { ok: 0, code: 352 });
  conn.socket.write(opQuery(`${database}.$cmd`, { insert: 'notes', documents: [{ _id: 'legacy' }] }, 4));
  t.like(await conn.next(), { ok: 0, code: 352 });

  t.deepEqual(await documents(database, 'notes'), [{ _id: 'first' }]);
});

test('OP_MSG checksum: a right CRC-32C is accepted; a wrong one closes the connection and the command does not run', async (t) => {
  const database = dbName();
  const conn = await authenticatedConnection(wire, wire.serviceUrl(database));
  t.teardown(() => conn.socket.destroy());
  conn.socket.write(opMsg({ insert: 'notes', documents: [{ _id: 'summed' }], $db: database }, 2, true));
  t.like(await conn.next(), { n: 1, ok: 1 });

  const good = opMsg({ insert: 'notes', documents: [{ _id: 'corrupted' }], $db: database }, 3, true);
  const wrong = opMsg({ insert: 'notes', documents: [{ _id: 'corrupted' }], $db: database }, 3, good.readUInt32LE(good.length - 4) ^ 1);
  conn.socket.write(wrong);
  t.true(await closedWithin(conn.socket, 5000), 'mongod closes the connection: ChecksumMismatch is a connection-fatal parse error');

  t.deepEqual(await documents(database, 'notes'), [{ _id: 'summed' }]);
});

test('OP_MSG checksum: a message too short to hold one closes the connection', async (t) => {
  const conn = await rawConnection(wire);
  t.teardown(() => conn.socket.destroy());
  const frame = Buffer.alloc(22);
  frame.writeInt32LE(frame.length, 0);
  frame.writeInt32LE(2013, 12);
  frame.writeUInt32LE(1, 16); // checksumPresent, and 2 bytes where 4 belong
  conn.socket.write(frame);
  t.true(await closedWithin(conn.socket, 5000));
});
