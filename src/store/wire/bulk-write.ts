// MongoDB 8's `bulkWrite` command (what MongoClient.bulkWrite sends, on the admin database): inserts,
// updates and deletes on many collections in one command, translated to the store's own client bulk
// write (StoreDb.bulkWrite). This listener serves a database per store, so every namespace of one
// command must be in the same database.
import type { Document } from 'bson';
import { MongoClientBulkWriteError, type ClientBulkWriteResult } from 'mongodb';
import type { StoreBulkWriteModel } from '../store.ts';
import type { Call } from './call.ts';
import { CommandError } from './errors.ts';

function namespaces(command: Document): string[] {
  const nsInfo = command.nsInfo;
  if (!Array.isArray(nsInfo) || nsInfo.length === 0) throw new CommandError('BadValue', 'bulkWrite needs nsInfo, the namespaces its operations write');
  return nsInfo.map((entry: Document) => {
    if (typeof entry?.ns !== 'string' || !entry.ns.includes('.')) throw new CommandError('BadValue', 'each nsInfo entry needs ns, "database.collection"');
    return entry.ns;
  });
}

/** The one database a bulkWrite command writes (its transaction is that database's store). */
export function bulkWriteDatabase(command: Document): string {
  const databases = new Set(namespaces(command).map((ns) => ns.slice(0, ns.indexOf('.'))));
  if (databases.size !== 1) throw new CommandError('BadValue', 'this listener runs a bulkWrite on one database at a time');
  return [...databases][0];
}

function model(op: Document, ns: string[]): StoreBulkWriteModel {
  const at = (index: unknown) => {
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= ns.length) throw new CommandError('BadValue', 'a bulkWrite operation names a namespace index outside nsInfo');
    return ns[index];
  };
  if ('insert' in op) return { name: 'insertOne', namespace: at(op.insert), document: op.document };
  if ('delete' in op) return { name: op.multi === true ? 'deleteMany' : 'deleteOne', namespace: at(op.delete), filter: op.filter ?? {} };
  if ('update' in op) {
    const namespace = at(op.update);
    const common = { namespace, filter: op.filter ?? {}, upsert: op.upsert === true };
    const mods = op.updateMods;
    const replacement = mods !== null && typeof mods === 'object' && !Array.isArray(mods) && !Object.keys(mods).some((k) => k.startsWith('$'));
    if (replacement) {
      if (op.multi === true) throw new CommandError('FailedToParse', 'multi update is not supported for replacement-style update');
      return { name: 'replaceOne', ...common, replacement: mods };
    }
    return { name: op.multi === true ? 'updateMany' : 'updateOne', ...common, update: mods, ...(op.arrayFilters ? { arrayFilters: op.arrayFilters } : {}) };
  }
  throw new CommandError('BadValue', 'a bulkWrite operation is one of insert, update or delete');
}

export async function bulkWrite(call: Call): Promise<Document> {
  const { command } = call;
  const ns = namespaces(command);
  if (!Array.isArray(command.ops)) throw new CommandError('BadValue', 'bulkWrite needs ops');
  const models = (command.ops as Document[]).map((op) => model(op, ns));
  const store = (await call.store(true))!;
  let result: ClientBulkWriteResult;
  let errors = new Map<number, { code: number; message: string }>();
  try {
    result = await store.db.bulkWrite(models, { ordered: command.ordered !== false, verboseResults: true, ...(call.session ? { session: call.session } : {}) });
  } catch (error) {
    if (!(error instanceof MongoClientBulkWriteError) || !error.partialResult) throw error;
    result = error.partialResult;
    errors = error.writeErrors;
  }
  const replies: Document[] = [];
  if (command.errorsOnly !== true) {
    for (const idx of result.insertResults?.keys() ?? []) replies.push({ ok: 1, idx, n: 1 });
    for (const [idx, r] of result.updateResults ?? []) replies.push({ ok: 1, idx, n: r.matchedCount, nModified: r.modifiedCount, ...(r.didUpsert ? { upserted: { _id: r.upsertedId } } : {}) });
    for (const [idx, r] of result.deleteResults ?? []) replies.push({ ok: 1, idx, n: r.deletedCount });
  }
  for (const [idx, e] of errors) replies.push({ ok: 0, idx, code: e.code, errmsg: e.message });
  replies.sort((a, b) => a.idx - b.idx);
  return {
    ...call.server.cursors.open('admin.$cmd.bulkWrite', call.owner, replies, undefined),
    nErrors: errors.size,
    nInserted: result.insertedCount,
    nMatched: result.matchedCount,
    nModified: result.modifiedCount,
    nUpserted: result.upsertedCount,
    nDeleted: result.deletedCount,
  };
}
