// Where an analyst's read runs (docs/operate/analysts.md): on a query thread with a deadline when its
// store is a database file, here otherwise. Apart from query-threads.ts so that the threads know
// nothing of a command's call.
import type { Call } from './call.ts';
import type { QueryRequest, QueryResult } from './query-threads.ts';

/**
 * The analyst's read, on a query thread when its store is a database file; anything else (the
 * service user's reads, which may be in a transaction, or a ':memory:' store, which no other
 * connection can open) runs here, in this thread.
 */
export async function analystRead<T>(call: Call, request: QueryRequest, here: () => Promise<T>, fromThread: (result: QueryResult) => T): Promise<T> {
  const threads = call.server.queries;
  if (call.conn.user?.role !== 'read' || call.session || !threads) return here();
  const deadline = threads.deadline(call.command);
  const store = await call.store(false);
  const location = (store as { location?: unknown } | undefined)?.location;
  if (!store || typeof location !== 'string' || location === ':memory:') return here();
  // A result is bounded where it is built: decoded here whole, one past the user's cursor budget would
  // be refused anyway, and one far past it would take the web process's memory first.
  return fromThread(await threads.run(location, store.db.raw.databaseName, request, deadline, call.server.cursors.limits.bytesPerUser, call.conn.closed));
}
