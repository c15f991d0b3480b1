// A MongoDB wire-protocol listener over the store (docs/operate/wire-protocol.md). It
// presents itself as the primary of a one-member replica set, so drivers allow transactions.
// A malformed message closes its connection; nothing a client sends can stop the process.
import { createServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { BSON } from 'bson';
import type { Connection, Server } from './call.ts';
import { runCommand } from './commands.ts';
import { ConnectionLimits } from './connection-limits.ts';
import { BATCH_BYTES, Cursors } from './cursors.ts';
import type { Databases } from './databases.ts';
import { CommandError, errorReply } from './errors.ts';
import { FailPoints } from './fail-points.ts';
import { InFlight } from './in-flight.ts';
import {
  decodeRequest,
  encodeMsgReply,
  encodeQueryReply,
  FrameReader,
  MAX_BSON_BYTES,
  MAX_MESSAGE_BYTES,
  MAX_UNAUTHENTICATED_MESSAGE_BYTES,
  ProtocolError,
  QUERY_FAILURE,
} from './frames.ts';
import { QueryThreads, type QueryThreadOptions } from './query-threads.ts';
import { Sessions } from './sessions.ts';
import type { Users } from './users.ts';
import { listening } from '../../listening.ts';

export interface ListenerOptions {
  databases: Databases;
  users: Users;
  port: number;
  /** 127.0.0.1 unless told otherwise. */
  host?: string;
  /** The replica set name reported in hello. */
  setName?: string;
  /** How long a transaction may stay open before it is aborted (mongod: 60 s). */
  transactionLifetimeMs?: number;
  /** Allows configureFailPoint (fault injection for tests). */
  testCommands?: boolean;
  /** Open connections beyond this are closed at once (default 256). */
  maxConnections?: number;
  /** Connections that have not authenticated (yet): past this many, the oldest of them is closed (default 32). */
  maxUnauthenticated?: number;
  /** Connections one user may hold authenticated at once; another authentication is refused (default 100, drivers' default maxPoolSize). */
  maxConnectionsPerUser?: number;
  /**
   * How long a connection may stay unauthenticated, counted from its opening (or logout), whatever it
   * sends: past it the connection is closed after its next reply, or after as long again if it sends
   * nothing (default 10 s).
   */
  handshakeTimeoutMs?: number;
  /** An authenticated connection with no traffic and no command running is closed after this long (default 10 minutes). */
  idleTimeoutMs?: number;
  /** Bytes the read-only user's messages and unsent replies may hold at once, all its connections together (in-flight.ts; default 64 MiB). */
  maxInFlightBytes?: number;
  /** The analyst's query threads: how many, their deadline and memory (query-threads.ts). */
  queryThreads?: Partial<QueryThreadOptions>;
}

/** Past this many received messages (or bytes of them) waiting for their turn, the connection stops reading. */
const MAX_QUEUED_MESSAGES = 16;
const MAX_QUEUED_BYTES = 1024 * 1024;

interface Limits {
  handshakeTimeoutMs: number;
  idleTimeoutMs: number;
}

/** Bytes reserved for a read-only user's message (in-flight.ts). */
interface Held {
  user: string;
  bytes: number;
}

export class WireListener {
  readonly failPoints: FailPoints;
  readonly #server: NetServer;
  readonly #context: Server;
  readonly #sockets = new Set<Socket>();
  readonly #limits: Limits;
  readonly #inFlight: InFlight;
  #replies = 0;

  private constructor(server: NetServer, context: Server, limits: Limits, inFlight: InFlight) {
    this.#server = server;
    this.#context = context;
    this.#limits = limits;
    this.#inFlight = inFlight;
    this.failPoints = context.failPoints;
  }

  static async start(options: ListenerOptions): Promise<WireListener> {
    const host = options.host ?? '127.0.0.1';
    const server = createServer();
    server.maxConnections = options.maxConnections ?? 256;
    await listening(server, { port: options.port, host });
    const port = (server.address() as AddressInfo).port;
    const context: Server = {
      databases: options.databases,
      users: options.users,
      cursors: new Cursors(),
      sessions: new Sessions(options.transactionLifetimeMs ?? 60_000),
      failPoints: new FailPoints(),
      queries: new QueryThreads(options.queryThreads),
      connections: new ConnectionLimits(options.maxUnauthenticated ?? 32, options.maxConnectionsPerUser ?? 100),
      me: `${host.includes(':') ? `[${host}]` : host}:${port}`,
      setName: options.setName ?? 'spend-control',
      testCommands: options.testCommands ?? false,
      startedAt: new Date(),
    };
    const listener = new WireListener(server, context, {
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? 10_000,
      idleTimeoutMs: options.idleTimeoutMs ?? 10 * 60_000,
    }, new InFlight(options.maxInFlightBytes ?? 64 * 1024 * 1024));
    let connections = 0;
    server.on('connection', (socket) => listener.#serve(socket, ++connections));
    return listener;
  }

  get host(): string {
    return (this.#server.address() as AddressInfo).address;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  #serve(socket: Socket, id: number): void {
    this.#sockets.add(socket);
    socket.setNoDelay(true);
    const closed = new AbortController();
    const conn: Connection = { id, remote: `${socket.remoteAddress}:${socket.remotePort}`, closed: closed.signal };
    const reader = new FrameReader();
    const queue: Array<{ frame: Buffer; held?: Held }> = [];
    // What the next message, still arriving, holds of the user's budget.
    let reserved: Held | undefined;
    let queuedBytes = 0;
    let running = false;
    // A command is running; its reply is waiting for the socket to drain.
    let executing = false;
    let writing = false;
    // The next message waits for a command before it to end: one that may authenticate the connection
    // (a message too large before, or any message after it), or one that holds the user's budget.
    let deferred = false;
    let idle: NodeJS.Timeout | undefined;
    // Unauthenticated: the handshake deadline has passed; the connection closes after its next reply.
    let expired = false;
    let closing = false;
    let handshake: NodeJS.Timeout | undefined;
    // Which wait for authentication a deadline belongs to (a logout starts another).
    let handshakes = 0;
    const connections = this.#context.connections;
    const inFlight = this.#inFlight;

    // Closes an authenticated connection that neither sends nor reads for a while; never while a
    // command runs (it may be waiting for a transaction that holds the store).
    const armIdle = () => {
      clearTimeout(idle);
      if (conn.user && !executing) idle = setTimeout(() => socket.destroy(), this.#limits.idleTimeoutMs).unref();
    };

    // An unauthenticated connection gets a deadline from its opening that no traffic extends: a
    // client that sends hello for ever holds no slot for ever. Drivers' monitoring connections never
    // authenticate; closing one right after a reply (or when it has been silent as long again) lets
    // the driver see it closed before its next heartbeat and open another, with no failed heartbeat.
    // A deadline is judged after the event loop's reads of its turn (setImmediate): a busy listener
    // reads late, and a login step that had arrived in time would otherwise be answered, then cut off.
    const waitForAuthentication = () => {
      expired = false;
      clearTimeout(handshake);
      connections.waiting(conn, () => socket.destroy());
      const round = ++handshakes;
      const unlessAuthenticated = (then: () => void) => () => setImmediate(() => conn.user || socket.destroyed || round !== handshakes || then());
      handshake = setTimeout(
        unlessAuthenticated(() => {
          expired = true;
          handshake = setTimeout(unlessAuthenticated(() => socket.destroy()), this.#limits.handshakeTimeoutMs).unref();
        }),
        this.#limits.handshakeTimeoutMs,
      ).unref();
    };

    // Cuts what has arrived into messages, then reads on only while there is room for more:
    // a client that sends without reading its replies is held back by TCP, not by our memory.
    // Before authentication one message at a time, so that the message after the authentication is
    // read as the user's (its size limit, its budget).
    const admit = (): void => {
      deferred = false;
      while (queue.length < MAX_QUEUED_MESSAGES && queuedBytes < MAX_QUEUED_BYTES) {
        if (!conn.user && (queue.length > 0 || executing)) {
          deferred = true;
          break;
        }
        const length = reader.nextLength();
        if (length === undefined) break;
        if (length > (conn.user ? MAX_MESSAGE_BYTES : MAX_UNAUTHENTICATED_MESSAGE_BYTES)) {
          if (!executing && !writing && queue.length === 0) throw new ProtocolError(`message of ${length} bytes before authentication`);
          deferred = true;
          break;
        }
        if (!reserved && conn.user?.role === 'read') {
          // Its reply may be a whole batch, whatever the size of the message.
          const held = { user: conn.user.user, bytes: Math.max(length, BATCH_BYTES) };
          if (!inFlight.take(held.user, held.bytes, wake)) {
            deferred = true;
            break;
          }
          reserved = held;
        }
        const frame = reader.next();
        if (!frame) break;
        queue.push({ frame, held: reserved });
        reserved = undefined;
        queuedBytes += frame.length;
      }
      if (writing || deferred || queue.length >= MAX_QUEUED_MESSAGES || queuedBytes >= MAX_QUEUED_BYTES) socket.pause();
      else socket.resume();
    };

    const take = (): void => {
      try {
        admit();
      } catch {
        socket.destroy();
      }
    };

    const release = (held: Held | undefined) => {
      if (held) inFlight.give(held.user, held.bytes);
    };

    const run = async (): Promise<void> => {
      running = true;
      while (queue.length > 0 && !socket.destroyed && !closing) {
        const { frame, held } = queue.shift()!;
        queuedBytes -= frame.length;
        executing = true;
        armIdle();
        const before = conn.user;
        const reply = await this.#handle(socket, conn, frame);
        executing = false;
        if (conn.user && !before) clearTimeout(handshake);
        if (!conn.user && before) waitForAuthentication();
        armIdle();
        if (expired && !conn.user) {
          release(held);
          closing = true;
          socket.pause();
          if (reply && !socket.destroyed) socket.end(reply);
          setTimeout(() => socket.destroy(), 1000).unref();
          break;
        }
        if (reply && !socket.destroyed && !socket.write(reply)) {
          writing = true;
          socket.pause();
          await drained(socket);
          writing = false;
          armIdle();
        }
        // Its reply is written out (or the connection closed): the user's budget has its bytes back.
        release(held);
        take();
      }
      running = false;
    };

    // Reads what has arrived (or was held back) and runs it.
    const wake = (): void => {
      if (closing || socket.destroyed) return;
      take();
      if (!running && queue.length > 0) void run();
    };

    socket.on('data', (chunk: Buffer) => {
      if (closing) return;
      reader.push(chunk);
      armIdle();
      wake();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      clearTimeout(idle);
      clearTimeout(handshake);
      connections.closed(conn);
      inFlight.forget(wake);
      for (const { held } of queue.splice(0)) release(held);
      release(reserved);
      reserved = undefined;
      this.#sockets.delete(socket);
      // A cursor's whole result is held in memory: it goes with the connection that last used it.
      this.#context.cursors.closeConnection(id);
      // And an analyst's read still queued or running for it (query-threads.ts).
      closed.abort();
    });
    waitForAuthentication();
  }

  /** The encoded reply, or undefined when there is none (moreToCome) or the connection was closed. */
  async #handle(socket: Socket, conn: Connection, frame: Buffer): Promise<Buffer | undefined> {
    if (socket.destroyed) return undefined;
    try {
      const request = decodeRequest(frame);
      if (request.kind === 'query' && !request.collection.endsWith('.$cmd')) {
        // mongod 5.1 and later answer a legacy query (a find on a collection) with an error, and keep the connection.
        const removed = { $err: `OP_QUERY is no longer supported. ${LEGACY_OPCODE_REMOVAL}`, code: 5739101, ok: 0 };
        return encodeQueryReply(++this.#replies, request.header.requestId, removed, QUERY_FAILURE);
      }
      const name = Object.keys(request.command)[0] ?? '';
      if (request.kind === 'query' && !OP_QUERY_COMMANDS.has(name)) {
        const refused = new CommandError('UnsupportedOpQueryCommand', `Unsupported OP_QUERY command: ${name}. ${LEGACY_OPCODE_REMOVAL}`);
        return encodeQueryReply(++this.#replies, request.header.requestId, errorReply(refused));
      }
      const db =
        request.kind === 'msg'
          ? typeof request.command.$db === 'string' ? request.command.$db : ''
          : request.collection.slice(0, request.collection.indexOf('.'));
      if (!db) throw new ProtocolError('a command without $db');
      const outcome = await runCommand(this.#context, conn, db, request.command);
      if (outcome.close) {
        socket.destroy();
        return undefined;
      }
      if (request.kind === 'msg' && request.moreToCome) return undefined;
      const encode = request.kind === 'msg' ? encodeMsgReply : encodeQueryReply;
      try {
        return encode(++this.#replies, request.header.requestId, outcome.reply);
      } catch (error) {
        // A reply past what BSON encodes (a distinct of many large values, a $group into one document):
        // MongoDB's error, not a closed connection that drivers would take for a network fault and retry.
        const bytes = BSON.calculateObjectSize(outcome.reply);
        if (bytes <= MAX_BSON_BYTES) throw error;
        const tooLarge = new CommandError('BSONObjectTooLarge', `the reply would be ${bytes} bytes, more than BSON's 16 MiB: narrow the command ($match, $project, $limit)`);
        return encode(++this.#replies, request.header.requestId, errorReply(tooLarge));
      }
    } catch {
      // A malformed message, or a reply that cannot be encoded: this connection is done.
      socket.destroy();
      return undefined;
    }
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await this.#context.sessions.close();
    await this.#context.queries.close();
    this.#context.cursors.closeAll();
    await closed;
  }
}

/**
 * What mongod (5.1 and later) still runs over OP_QUERY: the legacy handshake, and authentication and
 * buildInfo, which old drivers send the same way (src/mongo/rpc/check_allowed_op_query_cmd.cpp).
 */
const OP_QUERY_COMMANDS = new Set(['hello', 'isMaster', 'ismaster', 'saslStart', 'saslContinue', 'buildInfo', 'buildinfo']);

const LEGACY_OPCODE_REMOVAL = 'The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal';

/** Resolves once the socket has sent what it holds, or has closed. */
function drained(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}
