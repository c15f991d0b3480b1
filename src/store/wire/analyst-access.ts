// What the read-only analyst may read: the read models, and nothing else (docs/operate/analysts.md).
// An allow-list, not a deny-list: a collection added later (a new kind of credential, say) stays out
// of the analyst's reach until someone decides it is a read model. The write side holds people's
// password hashes, API-key and OAuth token digests, dashboard sessions and their CSRF tokens, sign-in
// attempts, sealed webhook secrets, idempotency records and the outbox: none of that is for analysts.
import type { Document } from 'bson';
import { forEachStage } from '../pipelines.ts';
import { CommandError } from './errors.ts';

/**
 * The read models (docs/internals/design.md §1: "analysts' spend tables", "a policy summary", "a
 * purchase readback"), projected from committed records and holding no credential material: names,
 * amounts, statuses and times, never a hash, digest, token or secret (test/store/wire-analyst.test.ts
 * scans them).
 */
export const ANALYST_COLLECTIONS: ReadonlySet<string> = new Set(['analytics_purchases', 'analytics_daily_spend', 'purchase_views', 'policy_views']);

/**
 * The analyst's role as connectionStatus reports it: what the listener lets it do, as a MongoDB
 * user-defined role would grant it (docs/operate/analysts.md shows the same role for MongoDB). The read
 * commands (find, getMore, aggregate, count, distinct) are MongoDB's find action, on the read models
 * only, in whichever database; listCollections and dbStats answer for the read models only; the
 * server's state and configuration (clusterMonitor's) are not granted.
 */
export const ANALYST_ROLE = { role: 'readModels', db: 'admin' } as const;

export function analystPrivileges(): Document[] {
  return [
    ...[...ANALYST_COLLECTIONS].map((collection) => ({ resource: { db: '', collection }, actions: ['find', 'killCursors', 'listIndexes'] })),
    { resource: { db: '', collection: '' }, actions: ['dbStats', 'listCollections'] },
    { resource: { cluster: true }, actions: ['listDatabases'] },
  ];
}

export function analystMayRead(collection: string): boolean {
  return ANALYST_COLLECTIONS.has(collection);
}

function refused(db: string, command: string, collection: unknown): CommandError {
  const what = typeof collection === 'string' ? `${db}.${collection}` : `a collection named by ${JSON.stringify(collection) ?? 'nothing'}`;
  return new CommandError('Unauthorized', `not authorized on ${db} to execute command { ${command}: ... }: user analyst may read the read models only, not ${what}`);
}

/**
 * Every collection a pipeline reads besides its own: $lookup and $graphLookup (from), $unionWith,
 * and the pipelines nested in $lookup, $unionWith and $facet; $out and $merge (which write) too, so
 * that their targets are checked even though writing is refused anyway. A name that is not a plain
 * string (mongod's {db, coll} form, or anything odd) is returned as it is, and refused.
 */
export function pipelineCollections(pipeline: unknown): unknown[] {
  const found: unknown[] = [];
  forEachStage(pipeline, (name, spec) => {
    const s = spec && typeof spec === 'object' && !Array.isArray(spec) ? (spec as Document) : undefined;
    switch (name) {
      case '$lookup':
      case '$graphLookup':
        // $lookup without from (a pipeline of $documents) reads no collection.
        if (s?.from !== undefined || name === '$graphLookup') found.push(s?.from);
        break;
      case '$unionWith':
        if (typeof spec === 'string') found.push(spec);
        else if (s?.coll !== undefined) found.push(s.coll);
        else if (!Array.isArray(s?.pipeline)) found.push(spec);
        break;
      case '$out':
        found.push(typeof spec === 'string' ? spec : s?.coll);
        break;
      case '$merge':
        found.push(typeof spec === 'string' ? spec : typeof s?.into === 'string' ? s.into : (s?.into as Document | undefined)?.coll);
        break;
      default:
        // A stage this list does not know that names a collection would be an unchecked way in.
        if (/lookup|union/i.test(name)) found.push(spec);
    }
  });
  return found;
}

/** The collection a read command names: its first field's value, or getMore's collection. */
function commandCollection(name: string, command: Document): unknown {
  return name === 'getMore' ? command.collection : command[name];
}

/** The namespace of listCollections' cursor, which the analyst's own listCollections filtered. */
const LIST_COLLECTIONS_CURSOR = '$cmd.listCollections';

/** Commands whose first field names the collection they read. */
const READS_A_COLLECTION = new Set(['find', 'getMore', 'killCursors', 'aggregate', 'count', 'distinct', 'listIndexes']);

/** Throws Unauthorized (13) when a command of the analyst would read a collection that is not a read model. */
export function checkAnalystRead(db: string, name: string, command: Document): void {
  if (!READS_A_COLLECTION.has(name)) return;
  const target = commandCollection(name, command);
  if (name === 'getMore' && target === LIST_COLLECTIONS_CURSOR) return;
  // aggregate: 1 (a collectionless pipeline) is refused later as unsupported; its stages are checked here all the same.
  if (!(name === 'aggregate' && target === 1) && (typeof target !== 'string' || !analystMayRead(target))) throw refused(db, name, target);
  if (name === 'aggregate') {
    for (const other of pipelineCollections(command.pipeline)) {
      if (typeof other !== 'string' || !analystMayRead(other)) throw refused(db, name, other);
    }
  }
}
