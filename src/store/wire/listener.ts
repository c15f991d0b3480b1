// A MongoDB wire-protocol listener over the store (README: "Connecting analysts' tools"). It
// presents itself as the primary of a one-member replica set, so drivers allow transactions.
// A malformed message closes its connection; nothing a client sends can stop the process.
import { createServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import type { Connection, Server } from './call.ts';
import { runCommand } from './commands.ts';
import { Cursors } from './cursors.ts';
import type { Databases } from './databases.ts';
import { FailPoints } from './fail-points.ts';
import { decodeRequest, encodeMsgReply, encodeQueryReply, splitFrames, ProtocolError } from './frames.ts';
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
}

export class WireListener {
  readonly failPoints: FailPoints;
  readonly #server: NetServer;
  readonly #context: Server;
  readonly #sockets = new Set<Socket>();
  #replies = 0;

  private constructor(server: NetServer, context: Server) {
    this.#server = server;
    this.#context = context;
    this.failPoints = context.failPoints;
  }

  static async start(options: ListenerOptions): Promise<WireListener> {
    const host = options.host ?? '127.0.0.1';
    const server = createServer();
    await listening(server, { port: options.port, host });
    const port = (server.address() as AddressInfo).port;
    const context: Server = {
      databases: options.databases,
      users: options.users,
      cursors: new Cursors(),
      sessions: new Sessions(options.transactionLifetimeMs ?? 60_000),
      failPoints: new FailPoints(),
      me: `${host.includes(':') ? `[${host}]` : host}:${port}`,
      setName: options.setName ?? 'spend-control',
      testCommands: options.testCommands ?? false,
      startedAt: new Date(),
    };
    const listener = new WireListener(server, context);
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
    const conn: Connection = { id, remote: `${socket.remoteAddress}:${socket.remotePort}` };
    let pending: Buffer = Buffer.alloc(0);
    let queue = Promise.resolve();
    socket.on('data', (chunk) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let frames: Buffer[];
      try {
        ({ frames, rest: pending } = splitFrames(pending));
      } catch {
        socket.destroy();
        return;
      }
      for (const frame of frames) queue = queue.then(() => this.#handle(socket, conn, frame));
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.#sockets.delete(socket));
  }

  async #handle(socket: Socket, conn: Connection, frame: Buffer): Promise<void> {
    if (socket.destroyed) return;
    try {
      const request = decodeRequest(frame);
      const db =
        request.kind === 'msg'
          ? typeof request.command.$db === 'string' ? request.command.$db : ''
          : request.collection.slice(0, request.collection.indexOf('.'));
      if (request.kind === 'query' && !request.collection.endsWith('.$cmd')) throw new ProtocolError('OP_QUERY is only for commands');
      if (!db) throw new ProtocolError('a command without $db');
      const outcome = await runCommand(this.#context, conn, db, request.command);
      if (outcome.close) {
        socket.destroy();
        return;
      }
      if (request.kind === 'msg' && request.moreToCome) return;
      const encode = request.kind === 'msg' ? encodeMsgReply : encodeQueryReply;
      socket.write(encode(++this.#replies, request.header.requestId, outcome.reply));
    } catch {
      // A malformed message, or a reply that cannot be encoded: this connection is done.
      socket.destroy();
    }
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await this.#context.sessions.close();
    this.#context.cursors.closeAll();
    await closed;
  }
}
