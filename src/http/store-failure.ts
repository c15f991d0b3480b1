// A request that failed because of the store, not because of the request: a store busy or failing
// over for a moment (isStoreUnavailable, or a command that gave up: StoreUnavailable), or a write that
// found no space (isStorageFull). /v1's error middleware, MCP's tools and the dashboard's pages all
// answer it the same way (docs/reference/decisions.md, "Storage busy or unreachable" and "Disk
// full"): 503 with Retry-After, a warning in the log rather than an unexpected failure, and, for no
// space, readiness failing until a write succeeds (src/store/storage-space.ts).
import type { Store } from '../store/store.ts';
import { isStorageFull, isStoreUnavailable } from '../store/store.ts';
import { markStorageFull } from '../store/storage-space.ts';
import type { Logger } from '../log.ts';
import { StorageFull, StoreUnavailable } from './errors.ts';

/** The 503 to answer for `err`, logged and noted once here; null when `err` is not the store's failure. */
export function storeFailure(deps: { store: Store; log: Logger }, err: unknown, where: Record<string, unknown>): StoreUnavailable | StorageFull | null {
  if (err instanceof StoreUnavailable || (!(err instanceof StorageFull) && isStoreUnavailable(err))) {
    const failure = err instanceof StoreUnavailable ? err : new StoreUnavailable(err);
    deps.log.warn('store unavailable: a request gave up', { err: describeError(failure.cause), ...where });
    return failure;
  }
  if (err instanceof StorageFull || isStorageFull(err)) {
    const failure = err instanceof StorageFull ? err : new StorageFull(err);
    markStorageFull(deps.store);
    deps.log.warn('storage full: a write found no space', { err: describeError(failure.cause), ...where });
    return failure;
  }
  return null;
}

export function describeError(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { value: String(err) };
}
