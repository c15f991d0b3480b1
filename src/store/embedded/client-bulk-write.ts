// MongoDB 8's client-level bulk write (MongoClient.bulkWrite) on the embedded engine: the models run
// in order through the collections' own write steps, in the caller's session, so inside its transaction
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
import { MingoError } from 'mingo/util';
import type { StoreBulkWriteModel, StoreBulkWriteOptions } from '../store.ts';
import { writeStep, type EmbeddedCollection, type StepOutcome } from './collection.ts';

/** What a client bulk write needs of the embedded Db (embedded-store.ts's EmbeddedDb is one). */
export interface BulkWriteTarget {
  readonly databaseName: string;
  collection(name: string): EmbeddedCollection;
  /** Runs synchronous collection steps as one write; `atomic` undoes one step that fails. */
  _write<T>(session: unknown, op: (atomic: <S>(step: () => S) => S) => T): Promise<T>;
}

export async function clientBulkWrite(db: BulkWriteTarget, models: ReadonlyArray<StoreBulkWriteModel>, options: StoreBulkWriteOptions = {}): Promise<ClientBulkWriteResult> {
  if (models.length === 0) throw new MongoInvalidArgumentError('No client bulk write models were provided.');
  const prefix = `${db.databaseName}.`;
  // Checked before anything is written, as the driver does before it sends the command.
  const steps = models.map((model) => {
    if (!model.namespace.startsWith(prefix)) throw new MongoInvalidArgumentError(`bulkWrite: ${model.namespace} is not in this store's database ${db.databaseName}`);
    const collection = db.collection(model.namespace.slice(prefix.length));
    const raw = model as unknown as Document;
    const options = { upsert: raw.upsert === true, ...(raw.arrayFilters ? { arrayFilters: raw.arrayFilters } : {}) };
    return { collection, step: writeStep(model.name, { ...raw, ...options }) };
  });
  const totals = { insertedCount: 0, upsertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0 };
  const insertResults = new Map<number, ClientInsertOneResult>();
  const updateResults = new Map<number, ClientUpdateResult>();
  const deleteResults = new Map<number, ClientDeleteResult>();
  const writeErrors = new Map<number, { code: number; message: string }>();

  // One write for the lot (no promise per model); each model in a savepoint of its own, so that a
  // failing one leaves those before it written, as on MongoDB.
  const failure = await db._write(options.session, (atomic) => {
    for (const [index, { collection, step }] of steps.entries()) {
      let outcome: StepOutcome;
      try {
        outcome = atomic(() => collection._step(step));
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (typeof code !== 'number') {
          // mingo refusing an update, where MongoDB answers a write error (TypeMismatch, FailedToParse...):
          // thrown as is once the models before it are written, as the collection-level bulkWrite does.
          // Thrown from here, it would undo them.
          if (error instanceof MingoError) return { error };
          throw error;
        }
        writeErrors.set(index, { code, message: (error as Error).message });
        if (options.ordered !== false || options.session) break; // in a transaction MongoDB fails the whole batch
        continue;
      }
      if ('insertedId' in outcome) {
        totals.insertedCount++;
        insertResults.set(index, { insertedId: outcome.insertedId });
      } else if ('deletedCount' in outcome) {
        totals.deletedCount += outcome.deletedCount;
        deleteResults.set(index, { deletedCount: outcome.deletedCount });
      } else {
        totals.matchedCount += outcome.matchedCount;
        totals.modifiedCount += outcome.modifiedCount;
        totals.upsertedCount += outcome.upsertedCount;
        // As the driver reads mongod's reply: the model's n counts the document it upserted too.
        const didUpsert = outcome.upsertedCount > 0;
        updateResults.set(index, {
          matchedCount: outcome.matchedCount + outcome.upsertedCount,
          modifiedCount: outcome.modifiedCount,
          didUpsert,
          ...(didUpsert ? { upsertedId: outcome.upsertedId } : {}),
        });
      }
    }
    return undefined;
  });
  if (failure) throw failure.error;

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
