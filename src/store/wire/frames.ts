// MongoDB wire protocol framing: the standard message header, OP_MSG (what every current client
// sends) and the legacy OP_QUERY/OP_REPLY pair that clients still open a connection with.
// https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/
import { BSON, type Document } from 'bson';

export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_MSG = 2013;

export const MAX_MESSAGE_BYTES = 48_000_000;
/** The largest document, a command or its reply (MongoDB's maxBsonObjectSize). */
export const MAX_BSON_BYTES = 16 * 1024 * 1024;
const HEADER_BYTES = 16;
const CHECKSUM_PRESENT = 1 << 0;
const MORE_TO_COME = 1 << 1;

export class ProtocolError extends Error {}

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), which OP_MSG's optional checksum uses;
// node:zlib's crc32 is the other polynomial.
const CRC32C_TABLE = Int32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
  return c;
});

export function crc32c(bytes: Uint8Array): number {
  let crc = -1;
  for (const byte of bytes) crc = CRC32C_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

export interface Header {
  length: number;
  requestId: number;
  responseTo: number;
  opCode: number;
}

export type Request =
  | { kind: 'msg'; header: Header; command: Document; moreToCome: boolean }
  | { kind: 'query'; header: Header; collection: string; command: Document };

// Values stay as the client sent them except Int64, which becomes a JS number when it fits:
// stored documents then compare the way the embedded engine expects.
const DESERIALIZE: BSON.DeserializeOptions = { promoteLongs: true, promoteValues: true, promoteBuffers: false };

/** Before a connection has authenticated: a handshake or SCRAM message is a few hundred bytes. */
export const MAX_UNAUTHENTICATED_MESSAGE_BYTES = 64 * 1024;

/**
 * Collects a stream of bytes and cuts complete messages off its front. Chunks are kept as they
 * arrive and joined once per message, so a large message sent in small writes costs linear time.
 */
export class FrameReader {
  #chunks: Buffer[] = [];
  #buffered = 0;

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  /** The next message's declared length once its first 4 bytes are in; throws on a length no client would send. */
  nextLength(): number | undefined {
    if (this.#buffered < 4) return undefined;
    if (this.#chunks[0].length < 4) this.#chunks = [Buffer.concat(this.#chunks, this.#buffered)];
    const length = this.#chunks[0].readInt32LE(0);
    if (length < HEADER_BYTES || length > MAX_MESSAGE_BYTES) throw new ProtocolError(`invalid message length ${length}`);
    return length;
  }

  /** The next complete message, or undefined while part of it is still to come. */
  next(): Buffer | undefined {
    const length = this.nextLength();
    if (length === undefined || this.#buffered < length) return undefined;
    const joined = this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks, this.#buffered);
    const rest = joined.subarray(length);
    this.#chunks = rest.length ? [rest] : [];
    this.#buffered = rest.length;
    return joined.subarray(0, length);
  }
}

function readCString(frame: Buffer, offset: number): { value: string; end: number } {
  const end = frame.indexOf(0, offset);
  if (end < 0) throw new ProtocolError('unterminated string');
  return { value: frame.toString('utf8', offset, end), end: end + 1 };
}

function readDocument(frame: Buffer, offset: number, limit: number): { doc: Document; end: number } {
  if (limit - offset < 5) throw new ProtocolError('truncated document');
  const size = frame.readInt32LE(offset);
  if (size < 5 || offset + size > limit) throw new ProtocolError('document overruns its section');
  try {
    return { doc: BSON.deserialize(frame.subarray(offset, offset + size), DESERIALIZE), end: offset + size };
  } catch (error) {
    throw new ProtocolError(`invalid BSON: ${(error as Error).message}`);
  }
}

/** Decodes one complete message; OP_MSG document sequences become arrays on the command. */
export function decodeRequest(frame: Buffer): Request {
  const header: Header = {
    length: frame.readInt32LE(0),
    requestId: frame.readInt32LE(4),
    responseTo: frame.readInt32LE(8),
    opCode: frame.readInt32LE(12),
  };
  if (header.opCode === OP_MSG) {
    const flags = frame.readUInt32LE(HEADER_BYTES);
    // Bits 0-15 are required: a flag we do not know must fail the message (the spec's rule).
    if ((flags & 0xffff & ~(CHECKSUM_PRESENT | MORE_TO_COME)) !== 0) throw new ProtocolError(`unknown OP_MSG flags ${flags}`);
    const end = flags & CHECKSUM_PRESENT ? frame.length - 4 : frame.length;
    // mongod closes the connection on a mismatch (ChecksumMismatch is a connection-fatal parse error).
    if (end !== frame.length && (end < HEADER_BYTES + 4 || crc32c(frame.subarray(0, end)) !== frame.readUInt32LE(end))) {
      throw new ProtocolError('OP_MSG checksum does not match contents');
    }
    let offset = HEADER_BYTES + 4;
    let command: Document | undefined;
    const sequences: Array<[string, Document[]]> = [];
    while (offset < end) {
      const kind = frame[offset++];
      if (kind === 0) {
        if (command) throw new ProtocolError('two body sections');
        const read = readDocument(frame, offset, end);
        command = read.doc;
        offset = read.end;
      } else if (kind === 1) {
        const size = frame.readInt32LE(offset);
        const sectionEnd = offset + size;
        if (size < 5 || sectionEnd > end) throw new ProtocolError('document sequence overruns the message');
        const name = readCString(frame, offset + 4);
        const docs: Document[] = [];
        let at = name.end;
        while (at < sectionEnd) {
          const read = readDocument(frame, at, sectionEnd);
          docs.push(read.doc);
          at = read.end;
        }
        sequences.push([name.value, docs]);
        offset = sectionEnd;
      } else {
        throw new ProtocolError(`unknown OP_MSG section kind ${kind}`);
      }
    }
    if (!command) throw new ProtocolError('OP_MSG without a body section');
    for (const [name, docs] of sequences) command[name] = docs;
    return { kind: 'msg', header, command, moreToCome: (flags & MORE_TO_COME) !== 0 };
  }
  if (header.opCode === OP_QUERY) {
    const name = readCString(frame, HEADER_BYTES + 4);
    const at = name.end + 8; // numberToSkip, numberToReturn
    const { doc } = readDocument(frame, at, frame.length);
    // Old clients wrap a command with read preferences as {$query: command, $readPreference}.
    const command = doc.$query && typeof doc.$query === 'object' ? (doc.$query as Document) : doc;
    return { kind: 'query', header, collection: name.value, command };
  }
  throw new ProtocolError(`unsupported opCode ${header.opCode}`);
}

function header(length: number, requestId: number, responseTo: number, opCode: number): Buffer {
  const b = Buffer.alloc(HEADER_BYTES);
  b.writeInt32LE(length, 0);
  b.writeInt32LE(requestId, 4);
  b.writeInt32LE(responseTo, 8);
  b.writeInt32LE(opCode, 12);
  return b;
}

const SERIALIZE: BSON.SerializeOptions = { ignoreUndefined: true };

export function encodeMsgReply(requestId: number, responseTo: number, reply: Document): Buffer {
  const body = BSON.serialize(reply, SERIALIZE);
  const length = HEADER_BYTES + 4 + 1 + body.length;
  const flagsAndKind = Buffer.alloc(5); // flags 0, section kind 0
  return Buffer.concat([header(length, requestId, responseTo, OP_MSG), flagsAndKind, body]);
}

/** QueryFailure: the reply's one document is an error ({$err, code}), not a result. */
export const QUERY_FAILURE = 1 << 1;

export function encodeQueryReply(requestId: number, responseTo: number, reply: Document, responseFlags = 0): Buffer {
  const body = BSON.serialize(reply, SERIALIZE);
  const fields = Buffer.alloc(20); // responseFlags, cursorID (8), startingFrom, numberReturned
  fields.writeInt32LE(responseFlags, 0);
  fields.writeInt32LE(1, 16);
  return Buffer.concat([header(HEADER_BYTES + 20 + body.length, requestId, responseTo, OP_REPLY), fields, body]);
}
