// What the wire listener does with frames no current driver sends, compared with mongod: an OP_MSG's
// CRC-32C checksum is verified. Raw frames over a socket.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { crc32c } from '../../src/store/wire/frames.ts';
import { startListener, type TestListener } from '../helpers/wire.ts';
import { authenticatedConnection, closedWithin, opMsg, rawConnection } from '../helpers/wire-raw.ts';

let wire: TestListener;
test.before(async () => {
  wire = await startListener();
});
test.after.always(() => wire?.close());

const dbName = () => `f_${randomBytes(5).toString('hex')}`;

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
