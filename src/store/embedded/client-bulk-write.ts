// MongoDB 8's client-level bulk write (MongoClient.bulkWrite) on the embedded engine: the models run
// in order through the collections' own methods, in the caller's session, so inside its transaction
// they commit or roll back with it. Results and errors take the driver's shapes: totals, per-model
// maps with verboseResults, and a MongoClientBulkWriteError whose writeErrors map the failing
// model's index to its code (a duplicate key is 11000).
import {
  MongoClientBulkWriteError,
  MongoInvalidArgumentError,
  type ClientBulkWriteResult,
  type ClientDeleteResult,
  type ClientInsertOneResult,
  type ClientUpdateResult,
  type Document,
} from 'mongodb';
import type { StoreBulkWriteModel, StoreBulkWriteOptions } from '../store.ts';
import type { EmbeddedDb } from './embedded-store.ts';

interface UpdateOutcome {
  matchedCount: number;
  modifiedCount: number;
  upsertedCount: number;
  upsertedId: unknown;
}

export async function clientBulkWrite(db: EmbeddedDb, models: ReadonlyArray<StoreBulkWriteModel>, options: StoreBulkWriteOptions = {}): Promise<ClientBulkWriteResult> {
  if (models.length === 0) throw new MongoInvalidArgumentError('No client bulk write models were provided.');
  const prefix = `${db.databaseName}.`;
  const session = options.session ? { session: options.session } : {};
  const totals = { insertedCount: 0, upsertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0 };
  const insertResults = new Map<number, ClientInsertOneResult>();
  const updateResults = new Map<number, ClientUpdateResult>();
  const deleteResults = new Map<number, ClientDeleteResult>();
  const writeErrors = new Map<number, { code: number; message: string }>();

  for (const [index, model] of models.entries()) {
    if (!model.namespace.startsWith(prefix)) throw new MongoInvalidArgumentError(`bulkWrite: ${model.namespace} is not in this store's database ${db.databaseName}`);
    const collection = db.collection(model.namespace.slice(prefix.length));
    try {
      if (model.name === 'insertOne') {
        const { insertedId } = await collection.insertOne(model.document as Document, session);
        totals.insertedCount++;
        insertResults.set(index, { insertedId });
      } else if (model.name === 'deleteOne' || model.name === 'deleteMany') {
        const filter = model.filter as Document;
        const { deletedCount } = model.name === 'deleteOne' ? await collection.deleteOne(filter, session) : await collection.deleteMany(filter, session);
        totals.deletedCount += deletedCount;
        deleteResults.set(index, { deletedCount });
      } else {
        const filter = model.filter as Document;
        const opts = { ...session, upsert: model.upsert === true, ...('arrayFilters' in model && model.arrayFilters ? { arrayFilters: model.arrayFilters } : {}) };
        const r = (
          model.name === 'replaceOne'
            ? await collection.replaceOne(filter, model.replacement as Document, opts)
            : model.name === 'updateOne'
              ? await collection.updateOne(filter, model.update as Document, opts)
              : await collection.updateMany(filter, model.update as Document, opts)
        ) as UpdateOutcome;
        totals.matchedCount += r.matchedCount;
        totals.modifiedCount += r.modifiedCount;
        totals.upsertedCount += r.upsertedCount;
        // As the driver reads mongod's reply: the model's n counts the document it upserted too.
        const didUpsert = r.upsertedCount > 0;
        updateResults.set(index, { matchedCount: r.matchedCount + r.upsertedCount, modifiedCount: r.modifiedCount, didUpsert, ...(didUpsert ? { upsertedId: r.upsertedId } : {}) });
      }
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'number') throw error; // the arguments were wrong: nothing the server would have answered
      writeErrors.set(index, { code, message: (error as Error).message });
      if (options.ordered !== false) break;
    }
  }

  const verbose = options.verboseResults === true;
  const result: ClientBulkWriteResult = {
    acknowledged: true,
    ...totals,
    insertResults: verbose ? insertResults : undefined,
    updateResults: verbose ? updateResults : undefined,
    deleteResults: verbose ? deleteResults : undefined,
  };
  if (writeErrors.size > 0) {
    const error = new MongoClientBulkWriteError({ message: 'Mongo client bulk write encountered errors during execution.' });
    error.writeErrors = writeErrors;
    error.partialResult = result;
    throw error;
  }
  return result;
}
