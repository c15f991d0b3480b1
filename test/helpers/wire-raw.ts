// Raw MongoDB wire-protocol frames over a plain socket, for tests of what the listener does with
// messages no driver would send: hand-made OP_MSG and OP_QUERY frames, SCRAM-SHA-256 by hand.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Binary, BSON, type Document } from 'mongodb';
import { crc32c } from '../../src/store/wire/frames.ts';
import type { TestListener } from './wire.ts';

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;

function header(length: number, requestId: number, opCode: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeInt32LE(length, 0);
  b.writeInt32LE(requestId, 4);
  b.writeInt32LE(opCode, 12);
  return b;
}

/**
 * An OP_MSG with one body section. `checksum`: true appends the right CRC-32C (flag checksumPresent),
 * a number appends that value instead.
 */
export function opMsg(command: Document, requestId = 1, checksum?: true | number): Buffer {
  const body = BSON.serialize(command);
  const flagsAndKind = Buffer.alloc(5); // flags, section kind 0
  if (checksum === undefined) return Buffer.concat([header(21 + body.length, requestId, OP_MSG), flagsAndKind, body]);
  flagsAndKind.writeUInt32LE(1, 0);
  const message = Buffer.concat([header(25 + body.length, requestId, OP_MSG), flagsAndKind, body]);
  const sum = Buffer.alloc(4);
  sum.writeUInt32LE(checksum === true ? crc32c(message) : checksum >>> 0);
  return Buffer.concat([message, sum]);
}

/** A legacy OP_QUERY on a namespace (`admin.$cmd` for a command). */
export function opQuery(namespace: string, query: Document, requestId = 1): Buffer {
  const name = Buffer.from(`${namespace}\0`);
  const skipAndReturn = Buffer.from([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
  const body = BSON.serialize(query);
  const length = 20 + name.length + skipAndReturn.length + body.length;
  return Buffer.concat([header(length, requestId, OP_QUERY), Buffer.alloc(4), name, skipAndReturn, body]);
}

export async function open(wire: TestListener): Promise<Socket> {
  const socket = connect(wire.listener.port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  return socket;
}

/** Whether the server closes the socket within ms. */
export async function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  if (socket.destroyed) return true;
  const closed = once(socket, 'close').then(() => true);
  return Promise.race([closed, sleep(ms).then(() => false)]);
}

export interface Reply {
  opCode: number;
  responseTo: number;
  /** OP_REPLY's responseFlags (0 for OP_MSG). */
  flags: number;
  doc: Document;
}

export interface RawConnection {
  socket: Socket;
  /** The next reply (replies come in order). */
  reply(): Promise<Reply>;
  /** The body of the next reply. */
  next(): Promise<Document>;
}

export async function rawConnection(wire: TestListener): Promise<RawConnection> {
  const socket = await open(wire);
  const chunks: Buffer[] = [];
  const ready: Reply[] = [];
  const waiting: Array<(reply: Reply) => void> = [];
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    let pending = Buffer.concat(chunks.splice(0));
    while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
      const frame = pending.subarray(0, pending.readInt32LE(0));
      pending = pending.subarray(frame.length);
      const opCode = frame.readInt32LE(12);
      const reply = {
        opCode,
        responseTo: frame.readInt32LE(8),
        flags: opCode === OP_REPLY ? frame.readInt32LE(16) : 0,
        doc: BSON.deserialize(frame.subarray(opCode === OP_REPLY ? 36 : 21)),
      };
      const waiter = waiting.shift();
      if (waiter) waiter(reply);
      else ready.push(reply);
    }
    if (pending.length) chunks.push(pending);
  });
  const reply = () => (ready.length ? Promise.resolve(ready.shift()!) : new Promise<Reply>((resolve) => waiting.push(resolve)));
  return { socket, reply, next: () => reply().then((r) => r.doc) };
}

/**
 * SCRAM-SHA-256 by hand (RFC 5802) as the user of a connection string; `then` is sent at once after the last step, before its reply.
 * `stallMs`: once the listener has taken the connection, its first message is sent and this thread (the listener's, in a
 * test) is held that long before anything reads it, as a listener too busy to read would be.
 */
export async function authenticatedConnection(wire: TestListener, connectionString: string, then: Buffer = Buffer.alloc(0), stallMs = 0): Promise<RawConnection> {
  const url = new URL(connectionString);
  const connection = await rawConnection(wire);
  const send = (command: Document, after: Buffer = Buffer.alloc(0)) => (connection.socket.write(Buffer.concat([opMsg({ ...command, $db: 'admin' }), after])), connection.next());
  const clientFirst = `n=${url.username},r=${randomBytes(18).toString('base64')}`;
  if (stallMs > 0) {
    // Taken by the listener, and past this turn's reading: the stall ends in the next turn's timers, before its reads.
    await sleep(50);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const answer = send({ saslStart: 1, mechanism: 'SCRAM-SHA-256', payload: new Binary(Buffer.from(`n,,${clientFirst}`)) });
  for (const until = Date.now() + stallMs; Date.now() < until; );
  const started = await answer;
  const serverFirst = Buffer.from(started.payload.buffer).toString();
  const attributes = new Map(serverFirst.split(',').map((part) => [part[0], part.slice(2)]));
  const salted = pbkdf2Sync(decodeURIComponent(url.password), Buffer.from(attributes.get('s')!, 'base64'), Number(attributes.get('i')), 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const withoutProof = `c=biws,r=${attributes.get('r')}`;
  const signature = createHmac('sha256', createHash('sha256').update(clientKey).digest()).update(`${clientFirst},${serverFirst},${withoutProof}`).digest();
  const proof = Buffer.from(clientKey.map((byte, i) => byte ^ signature[i])).toString('base64');
  const finished = await send({ saslContinue: 1, conversationId: 1, payload: new Binary(Buffer.from(`${withoutProof},p=${proof}`)) }, then);
  if (finished.done !== true) throw new Error(`authentication failed: ${JSON.stringify(finished)}`);
  return connection;
}
