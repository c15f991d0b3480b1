// A transaction's writes gathered into one client bulk write (StoreDb.bulkWrite): one round trip to
// MongoDB for all the collections a command writes, instead of one per document. A write may say what
// its failure means for the command: a version-checked update that matched nothing, or an insert whose
// key exists already, is a lost race (a VersionConflict, and the command is retried) or whatever the
// caller says. The writes run in the order they were added, and stop at the first that fails.
import type { Document, Filter, UpdateFilter } from 'mongodb';
import type { StoreBulkWriteModel, StoreDb, StoreSession } from './store.ts';

type Id = { _id: string };

export interface WriteChecks {
  /** The error when an update matched no document (and upserted none). */
  unlessMatched?: () => Error;
  /** The error when the write hit a unique key that exists (code 11000). */
  onDuplicate?: () => Error;
}

export class WriteBatch {
  readonly #db: StoreDb;
  readonly #prefix: string;
  readonly #models: StoreBulkWriteModel[] = [];
  readonly #unlessMatched = new Map<number, () => Error>();
  readonly #onDuplicate = new Map<number, () => Error>();

  constructor(db: StoreDb) {
    this.#db = db;
    this.#prefix = `${db.raw.databaseName}.`;
  }

  #add(model: StoreBulkWriteModel, checks: WriteChecks): void {
    const index = this.#models.push(model) - 1;
    if (checks.unlessMatched) this.#unlessMatched.set(index, checks.unlessMatched);
    if (checks.onDuplicate) this.#onDuplicate.set(index, checks.onDuplicate);
  }

  insertOne<T extends Id>(collection: string, document: T, checks: WriteChecks = {}): void {
    this.#add({ namespace: this.#prefix + collection, name: 'insertOne', document }, checks);
  }

  updateOne<T extends Id>(collection: string, filter: Filter<T>, update: UpdateFilter<T>, checks: WriteChecks & { upsert?: boolean } = {}): void {
    this.#add({ namespace: this.#prefix + collection, name: 'updateOne', filter: filter as Filter<Document & Id>, update: update as UpdateFilter<Document & Id>, upsert: checks.upsert === true }, checks);
  }

  replaceOne<T extends Id>(collection: string, filter: Filter<T>, replacement: Omit<T, '_id'>, checks: WriteChecks = {}): void {
    this.#add({ namespace: this.#prefix + collection, name: 'replaceOne', filter: filter as Filter<Document & Id>, replacement: replacement as Document }, checks);
  }

  /** Sends every write added, in one command; nothing when there is none. */
  async write(session: StoreSession): Promise<void> {
    if (this.#models.length === 0) return;
    let result;
    try {
      result = await this.#db.bulkWrite(this.#models, { session, verboseResults: this.#unlessMatched.size > 0 });
    } catch (error) {
      const failed = (error as { writeErrors?: unknown }).writeErrors;
      if (failed instanceof Map) {
        for (const [index, e] of failed as Map<number, { code?: number }>) {
          const meaning = e.code === 11000 ? this.#onDuplicate.get(index) : undefined;
          if (meaning) throw meaning();
        }
      }
      throw error;
    }
    for (const [index, conflict] of this.#unlessMatched) {
      const r = result.updateResults?.get(index);
      if (!r || (r.matchedCount === 0 && !r.didUpsert)) throw conflict();
    }
  }
}
