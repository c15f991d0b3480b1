// Command dispatch: authentication and the analyst's read-only rights (and read models only), fail points, sessions
// and transactions, then the handler. Every failure becomes MongoDB's error reply.
import type { Document } from 'bson';
import * as admin from './admin-commands.ts';
import type { Call, Connection, Server } from './call.ts';
import { bulkWrite, bulkWriteDatabase } from './bulk-write.ts';
import * as crud from './crud.ts';
import { checkAnalystRead } from './analyst-access.ts';
import { writesAnywhere } from '../pipelines.ts';
import { CommandError, errorReply } from './errors.ts';

type Handler = (call: Call) => Document | Promise<Document>;

interface Command {
  run: Handler;
  /**
   * public: before authentication; read: the analyst may (what mongod's read role grants); monitor: the
   * service's user only, touching no data (the server's state and configuration: mongod's clusterMonitor);
   * write: the service's user only, on a database it serves.
   */
  access: 'public' | 'read' | 'monitor' | 'write';
  /** May run inside a multi-document transaction. */
  inTransaction?: boolean;
  /** A retryable write: its reply is remembered per session and txnNumber. */
  retryable?: boolean;
  /** The database whose store it uses, when that is not the command's $db (bulkWrite runs on admin). */
  database?: (command: Document) => string;
}

const ok = (): Document => ({ ok: 1 });

/** The collection of the cursor a bulkWrite's results come back on (admin.$cmd.bulkWrite). */
const BULK_WRITE_CURSOR = '$cmd.bulkWrite';

const COMMANDS: Record<string, Command> = {
  hello: { run: admin.hello, access: 'public' },
  isMaster: { run: admin.hello, access: 'public' },
  ismaster: { run: admin.hello, access: 'public' },
  saslStart: { run: admin.saslStart, access: 'public' },
  saslContinue: { run: admin.saslContinue, access: 'public' },
  logout: { run: admin.logout, access: 'public' },
  ping: { run: ok, access: 'public' },
  buildInfo: { run: admin.buildInfo, access: 'public' },
  buildinfo: { run: admin.buildInfo, access: 'public' },
  endSessions: { run: (call) => (call.server.sessions.end(call.owner, asArray(call.command.endSessions)), ok()), access: 'public' },
  connectionStatus: { run: admin.connectionStatus, access: 'public' },

  find: { run: crud.find, access: 'read', inTransaction: true },
  getMore: { run: crud.getMore, access: 'read', inTransaction: true },
  killCursors: { run: crud.killCursors, access: 'read', inTransaction: true },
  aggregate: { run: crud.aggregate, access: 'read', inTransaction: true },
  count: { run: crud.countCommand, access: 'read', inTransaction: true },
  distinct: { run: crud.distinct, access: 'read', inTransaction: true },
  listCollections: { run: admin.listCollections, access: 'read' },
  listIndexes: { run: admin.listIndexes, access: 'read' },
  listDatabases: { run: admin.listDatabases, access: 'read' },
  dbStats: { run: admin.dbStats, access: 'read' },
  whatsmyuri: { run: (call) => ({ you: call.conn.remote, ok: 1 }), access: 'read' },

  // The process, its host, log, parameters and command line: mongod's read and readAnyDatabase roles grant
  // none of these (clusterMonitor does). mongosh and the drivers connect without them (docs/operate/analysts.md).
  serverStatus: { run: admin.serverStatus, access: 'monitor' },
  getLog: { run: admin.getLog, access: 'monitor' },
  getParameter: { run: admin.getParameter, access: 'monitor' },
  getCmdLineOpts: { run: () => ({ argv: [], parsed: {}, ok: 1 }), access: 'monitor' },
  hostInfo: { run: admin.hostInfo, access: 'monitor' },

  insert: { run: crud.insert, access: 'write', inTransaction: true, retryable: true },
  update: { run: crud.update, access: 'write', inTransaction: true, retryable: true },
  delete: { run: crud.remove, access: 'write', inTransaction: true, retryable: true },
  findAndModify: { run: crud.findAndModify, access: 'write', inTransaction: true, retryable: true },
  findandmodify: { run: crud.findAndModify, access: 'write', inTransaction: true, retryable: true },
  bulkWrite: { run: bulkWrite, access: 'write', inTransaction: true, retryable: true, database: bulkWriteDatabase },
  createIndexes: { run: admin.createIndexes, access: 'write' },
  dropIndexes: { run: admin.dropIndexes, access: 'write' },
  create: { run: admin.create, access: 'write' },
  drop: { run: admin.drop, access: 'write' },
  dropDatabase: { run: admin.dropDatabase, access: 'write' },
  commitTransaction: {
    run: async (call) => (await call.server.sessions.commit(call.owner, call.command), ok()),
    access: 'write',
  },
  abortTransaction: {
    run: async (call) => (await call.server.sessions.abort(call.owner, call.command), ok()),
    access: 'write',
  },
  configureFailPoint: { run: admin.configureFailPoint, access: 'write' },
};

/** Write-level commands that touch no database's data. */
const ADMINISTRATIVE = new Set(['commitTransaction', 'abortTransaction', 'configureFailPoint']);

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function unauthorized(call: Pick<Call, 'db' | 'name'>, why: string): CommandError {
  return new CommandError('Unauthorized', `not authorized on ${call.db} to execute command { ${call.name}: ... }: ${why}`);
}

export interface Outcome {
  reply: Document;
  /** Close the connection without answering (a fail point's closeConnection). */
  close?: boolean;
}

export async function runCommand(server: Server, conn: Connection, db: string, command: Document): Promise<Outcome> {
  const name = Object.keys(command)[0] ?? '';
  const spec = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  let target = db;
  const call: Call = {
    server,
    conn,
    db,
    name,
    command,
    owner: conn.user?.user ?? '',
    store: (create) => server.databases.get(target, create && conn.user?.role === 'readWrite'),
  };
  let fail = () => {};
  let leave = () => {};
  // Until it joins a transaction that holds the store, an operation may be waiting for one.
  let stopWaiting = name === 'commitTransaction' || name === 'abortTransaction' ? () => {} : server.sessions.waiting();
  try {
    if (!spec) throw new CommandError('CommandNotFound', `no such command: '${name}'`);
    if (spec.access !== 'public' && !conn.user) throw unauthorized(call, 'authentication is required');
    if ((spec.access === 'write' || spec.access === 'monitor') && conn.user?.role !== 'readWrite') throw unauthorized(call, `user ${conn.user?.user} may only read`);
    if (spec.access === 'read' && conn.user?.role === 'read') checkAnalystRead(db, name, command);
    if (name === 'configureFailPoint' && !server.testCommands) throw new CommandError('CommandNotFound', `no such command: '${name}'`);
    if (name === 'aggregate' && conn.user?.role !== 'readWrite' && writesAnywhere(command.pipeline)) {
      throw unauthorized(call, '$out and $merge write, and this user may only read');
    }
    const action = server.failPoints.check(name, {
      appName: conn.appName,
      namespace: typeof command[name] === 'string' ? `${db}.${command[name]}` : undefined,
      inTransaction: command.autocommit === false,
    });
    if (action?.kind === 'close') return { reply: {}, close: true };
    if (action?.kind === 'error') {
      if (name !== 'commitTransaction') server.sessions.abortFailed(call.owner, command);
      return { reply: action.reply };
    }

    const inTransaction = command.autocommit === false;
    if (inTransaction && conn.user?.role !== 'readWrite') {
      throw unauthorized(call, 'a transaction holds the store until it ends, so only the service user may open one');
    }
    if (inTransaction && !spec.inTransaction && name !== 'commitTransaction' && name !== 'abortTransaction') {
      throw new CommandError('OperationNotSupportedInTransaction', `Cannot run '${name}' in a multi-document transaction.`);
    }
    if (spec.database) target = spec.database(command);
    if (spec.inTransaction && inTransaction) {
      // A client bulkWrite's results are a cursor on admin (computed whole when it ran): its getMore and
      // killCursors touch no data, and join the transaction on whichever database it writes.
      const resultsOnly = db === 'admin' && (name === 'getMore' ? command.collection : command.killCursors) === BULK_WRITE_CURSOR;
      const store = resultsOnly ? undefined : await server.databases.get(target, true);
      if (!resultsOnly && !store) throw new CommandError('BadValue', `this listener serves no database ${target}`);
      const txn = await server.sessions.enter(call.owner, command, store);
      call.session = txn.session;
      fail = txn.fail;
      leave = txn.leave;
      stopWaiting();
      stopWaiting = () => {};
    }
    if (spec.retryable) {
      const earlier = server.sessions.retried(call.owner, command);
      if (earlier) return { reply: earlier };
    }
    if (spec.access === 'write' && !ADMINISTRATIVE.has(name) && !(await call.store(true))) {
      throw new CommandError('BadValue', `this listener serves no database ${target}`);
    }
    let reply = await spec.run(call);
    if (reply.writeErrors || reply.nErrors) fail();
    if (spec.retryable) server.sessions.rememberWrite(call.owner, command, reply);
    if (action?.kind === 'writeConcernError') {
      reply = { ...reply, writeConcernError: action.writeConcernError, ...(action.errorLabels ? { errorLabels: action.errorLabels } : {}) };
    }
    return { reply };
  } catch (error) {
    fail();
    return { reply: errorReply(error) };
  } finally {
    stopWaiting();
    leave();
  }
}
