// The handshake, authentication, namespace and diagnostic commands: what drivers, mongosh,
// Compass and pymongo send around the data commands.
import { hostname, cpus, platform, release } from 'node:os';
import { Binary, EJSON, ObjectId, type Document } from 'bson';
import type { Call } from './call.ts';
import { ANALYST_ROLE, analystMayRead, analystPrivileges } from './analyst-access.ts';
import { CommandError } from './errors.ts';
import { MAX_BSON_BYTES, MAX_MESSAGE_BYTES } from './frames.ts';
import { MECHANISM, ScramConversation } from './scram.ts';

export const VERSION = '8.0.0';
/** MongoDB 8.0's wire version (the service needs its bulkWrite command); the mongodb driver 7 needs at least 9 (MongoDB 4.4). */
const MAX_WIRE_VERSION = 25;
const ELECTION_ID = new ObjectId('7fffffff0000000000000001');

export function hello(call: Call): Document {
  const { server, conn, command } = call;
  const application = (command.client as { application?: { name?: unknown } } | undefined)?.application;
  if (typeof application?.name === 'string') conn.appName = application.name;
  const reply: Document = {
    helloOk: true,
    [call.name === 'hello' ? 'isWritablePrimary' : 'ismaster']: true,
    secondary: false,
    setName: server.setName,
    setVersion: 1,
    electionId: ELECTION_ID,
    hosts: [server.me],
    primary: server.me,
    me: server.me,
    maxBsonObjectSize: MAX_BSON_BYTES,
    maxMessageSizeBytes: MAX_MESSAGE_BYTES,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: conn.id,
    minWireVersion: 0,
    maxWireVersion: MAX_WIRE_VERSION,
    readOnly: false,
  };
  if (typeof command.saslSupportedMechs === 'string') {
    const user = command.saslSupportedMechs.slice(command.saslSupportedMechs.indexOf('.') + 1);
    if (server.users.lookup(user)) reply.saslSupportedMechs = [MECHANISM];
  }
  return { ...reply, ok: 1 };
}

function bytes(payload: unknown): Buffer {
  if (payload instanceof Binary) return Buffer.from(payload.buffer.subarray(0, payload.position));
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  throw new CommandError('TypeMismatch', 'payload must be binary');
}

export function saslStart(call: Call): Document {
  if (call.command.mechanism !== MECHANISM) {
    throw new CommandError('MechanismUnavailable', `Received authentication for mechanism ${String(call.command.mechanism)} which is not enabled: this listener offers ${MECHANISM}`);
  }
  const scram = new ScramConversation(call.server.users);
  call.conn.scram = undefined;
  const payload = scram.start(bytes(call.command.payload));
  call.conn.scram = scram;
  return { conversationId: 1, done: false, payload: new Binary(payload), ok: 1 };
}

export function saslContinue(call: Call): Document {
  const scram = call.conn.scram;
  if (!scram) {
    if (call.conn.user) return { conversationId: 1, done: true, payload: new Binary(Buffer.alloc(0)), ok: 1 };
    throw new CommandError('AuthenticationFailed', 'No SASL session state found');
  }
  call.conn.scram = undefined;
  const { payload, user } = scram.finish(bytes(call.command.payload));
  call.server.connections.authenticate(call.conn, user.user);
  call.conn.user = user;
  return { conversationId: 1, done: true, payload: new Binary(payload), ok: 1 };
}

export function logout(call: Call): Document {
  call.server.connections.logout(call.conn);
  call.conn.user = undefined;
  return { ok: 1 };
}

const SERVICE_ACTIONS = ['createCollection', 'createIndex', 'dbStats', 'dropCollection', 'dropDatabase', 'dropIndex', 'find', 'insert', 'killCursors', 'listCollections', 'listIndexes', 'remove', 'update'];

function servicePrivileges(): Document[] {
  return [{ resource: { db: '', collection: '' }, actions: SERVICE_ACTIONS }, { resource: { cluster: true }, actions: ['listDatabases'] }];
}

export function connectionStatus(call: Call): Document {
  const user = call.conn.user;
  const analyst = user?.role === 'read';
  const authInfo: Document = {
    authenticatedUsers: user ? [{ user: user.user, db: 'admin' }] : [],
    authenticatedUserRoles: user ? [analyst ? { ...ANALYST_ROLE } : { role: 'readWriteAnyDatabase', db: 'admin' }] : [],
  };
  if (call.command.showPrivileges === true) {
    // Compass reads these to decide what to offer.
    authInfo.authenticatedUserPrivileges = user ? (analyst ? analystPrivileges() : servicePrivileges()) : [];
  }
  return { authInfo, ok: 1 };
}

export function buildInfo(): Document {
  return {
    version: VERSION,
    gitVersion: 'spend-control-embedded',
    versionArray: [...VERSION.split('.').map(Number), 0],
    modules: [],
    allocator: 'system',
    javascriptEngine: 'none',
    sysInfo: 'deprecated',
    bits: 64,
    debug: false,
    maxBsonObjectSize: MAX_BSON_BYTES,
    storageEngines: ['embedded'],
    ok: 1,
  };
}

export function hostInfo(): Document {
  return {
    system: { currentTime: new Date(), hostname: hostname(), cpuAddrSize: 64, numCores: cpus().length },
    os: { type: platform() === 'linux' ? 'Linux' : platform(), name: platform(), version: release() },
    extra: {},
    ok: 1,
  };
}

export function getLog(call: Call): Document {
  if (call.command.getLog === '*') return { names: ['global', 'startupWarnings'], ok: 1 };
  return { totalLinesWritten: 0, log: [], ok: 1 };
}

export function getParameter(call: Call): Document {
  const reply: Document = {};
  if (call.command.featureCompatibilityVersion !== undefined || call.command.getParameter === '*') {
    reply.featureCompatibilityVersion = { version: '8.0' };
  }
  return { ...reply, ok: 1 };
}

export function serverStatus(call: Call): Document {
  return {
    host: call.server.me,
    version: VERSION,
    process: 'mongod',
    pid: process.pid,
    uptime: Math.floor((Date.now() - call.server.startedAt.getTime()) / 1000),
    localTime: new Date(),
    ok: 1,
  };
}

/**
 * listCollections/listDatabases filters: on name (a string, $in, or a regular expression) only. These
 * commands run on the request thread, where a regular expression cannot be stopped: `^((.*)*)*x$`
 * backtracks for ever even over a name of 21 characters. So the analyst, whose reads run on a query
 * thread with a deadline, may not send one here (BadValue); the service user may.
 */
function nameFilter(call: Call): (name: string) => boolean {
  const filter: unknown = call.command.filter;
  if (filter === undefined || filter === null) return () => true;
  const f = filter as Document;
  const keys = Object.keys(f).filter((k) => !(k === 'type' && f.type === 'collection'));
  if (keys.length === 0) return () => true;
  if (keys.length !== 1 || keys[0] !== 'name') throw new CommandError('BadValue', 'this listener filters collections and databases by name only');
  const cond = f.name;
  if (typeof cond === 'string') return (name) => name === cond;
  if (cond && typeof cond === 'object' && Array.isArray((cond as Document).$in)) return (name) => ((cond as Document).$in as unknown[]).includes(name);
  const regex = cond instanceof RegExp || (cond && typeof cond === 'object' && (cond as Document).$regex !== undefined);
  if (regex && call.conn.user?.role === 'read') {
    throw new CommandError('BadValue', `user ${call.conn.user.user} filters ${call.name} by name with a string or $in only, not a regular expression: list them all (there are few) and match on the client`);
  }
  if (cond instanceof RegExp) return (name) => cond.test(name);
  if (regex) {
    const re = new RegExp(String((cond as Document).$regex), String((cond as Document).$options ?? ''));
    return (name) => re.test(name);
  }
  throw new CommandError('BadValue', 'this listener filters by name with a string, $in or a regular expression only');
}

export async function listCollections(call: Call): Promise<Document> {
  const store = await call.store(false);
  const matches = nameFilter(call);
  const readOnly = call.conn.user?.role === 'read';
  // The analyst is not told the other collections exist (mongod's authorizedCollections does the same).
  const names = store ? (await store.db.listCollectionNames()).filter((name) => (!readOnly || analystMayRead(name)) && matches(name)) : [];
  const docs = names.map((name) =>
    call.command.nameOnly === true
      ? { name, type: 'collection' }
      : { name, type: 'collection', options: {}, info: { readOnly }, idIndex: { v: 2, key: { _id: 1 }, name: '_id_' } },
  );
  return call.server.cursors.open(`${call.db}.$cmd.listCollections`, call.owner, docs, undefined);
}

export function listDatabases(call: Call): Document {
  const matches = nameFilter(call);
  const names = call.server.databases.names().filter(matches);
  const databases = names.map((name) => (call.command.nameOnly === true ? { name } : { name, sizeOnDisk: 0, empty: false }));
  return { databases, totalSize: 0, totalSizeMb: 0, ok: 1 };
}

async function existing(call: Call): Promise<{ name: string; exists: boolean }> {
  const name = call.command[call.name];
  if (typeof name !== 'string' || name === '') throw new CommandError('BadValue', `${call.name} needs a collection name`);
  const store = await call.store(false);
  return { name, exists: store ? (await store.db.listCollectionNames()).includes(name) : false };
}

export async function listIndexes(call: Call): Promise<Document> {
  const { name, exists } = await existing(call);
  if (!exists) throw new CommandError('NamespaceNotFound', `ns does not exist: ${call.db}.${name}`);
  const store = await call.store(false);
  const indexes = await store!.db.collection(name).indexes();
  return call.server.cursors.open(`${call.db}.${name}`, call.owner, indexes, undefined);
}

export async function createIndexes(call: Call): Promise<Document> {
  const { name, exists } = await existing(call);
  const specs = call.command.indexes;
  if (!Array.isArray(specs) || specs.length === 0) throw new CommandError('BadValue', 'createIndexes needs a non-empty indexes array');
  const store = await call.store(true);
  const coll = store!.db.collection(name);
  const before = exists ? (await coll.indexes()).length : 1;
  for (const spec of specs as Document[]) {
    const { key, v: _version, ns: _ns, ...options } = spec;
    if (!key || typeof key !== 'object') throw new CommandError('BadValue', 'every index needs a key document');
    await coll.createIndex(key as Document, options);
  }
  const after = (await coll.indexes()).length;
  return { numIndexesBefore: before, numIndexesAfter: after, createdCollectionAutomatically: !exists, ok: 1 };
}

/**
 * `index` is a name, '*' (all but _id_), an array of names or a key pattern, as mongosh's dropIndex and
 * dropIndexes send it. Every index named must exist, or none is dropped.
 */
export async function dropIndexes(call: Call): Promise<Document> {
  const { name, exists } = await existing(call);
  if (!exists) throw new CommandError('NamespaceNotFound', `ns not found ${call.db}.${name}`);
  const coll = (await call.store(false))!.db.collection(name);
  const index: unknown = call.command.index;
  if (typeof index === 'string') return coll.dropIndex(index);
  const indexes = await coll.indexes();
  let names: string[];
  if (Array.isArray(index) && index.every((n) => typeof n === 'string')) {
    names = index;
    if (names.includes('_id_')) throw new CommandError('InvalidOptions', 'cannot drop _id index');
    const missing = names.find((n) => !indexes.some((i) => i.name === n));
    if (missing !== undefined) throw new CommandError('IndexNotFound', `index not found with name [${missing}]`);
  } else if (index !== null && typeof index === 'object' && !Array.isArray(index)) {
    const found = indexes.find((i) => EJSON.stringify(i.key) === EJSON.stringify(index));
    if (!found) throw new CommandError('IndexNotFound', `can't find index with key: ${EJSON.stringify(index)}`);
    names = [String(found.name)];
  } else {
    throw new CommandError('TypeMismatch', 'dropIndexes needs index: a name, "*", an array of names or a key pattern');
  }
  for (const n of names) await coll.dropIndex(n);
  return { nIndexesWas: indexes.length, ok: 1 };
}

export async function create(call: Call): Promise<Document> {
  const { name, exists } = await existing(call);
  if (exists) throw new CommandError('NamespaceExists', `Collection ${call.db}.${name} already exists.`);
  const store = await call.store(true);
  await store!.db.raw.createCollection(name);
  return { ok: 1 };
}

export async function drop(call: Call): Promise<Document> {
  const { name, exists } = await existing(call);
  if (!exists) return { ok: 1 };
  const store = await call.store(false);
  const nIndexesWas = (await store!.db.collection(name).indexes()).length;
  await store!.db.raw.dropCollection(name);
  return { ns: `${call.db}.${name}`, nIndexesWas, ok: 1 };
}

export async function dropDatabase(call: Call): Promise<Document> {
  await call.server.databases.drop(call.db);
  return { dropped: call.db, ok: 1 };
}

export async function dbStats(call: Call): Promise<Document> {
  const store = await call.store(false);
  const all = store ? await store.db.listCollectionNames() : [];
  const names = call.conn.user?.role === 'read' ? all.filter(analystMayRead) : all;
  let objects = 0;
  for (const name of names) objects += await store!.db.collection(name).countDocuments({});
  return { db: call.db, collections: names.length, views: 0, objects, dataSize: 0, storageSize: 0, indexes: 0, indexSize: 0, ok: 1 };
}

export function configureFailPoint(call: Call): Document {
  const { configureFailPoint: name, mode, data } = call.command;
  return { count: call.server.failPoints.configure(String(name), mode, data), ok: 1 };
}
