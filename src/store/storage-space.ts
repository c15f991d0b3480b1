// Whether the store last failed a write for lack of space, per store object (so per process, for the
// web process's store): src/http/store-failure.ts marks it when a request's write fails so
// (isStorageFull), and /health/ready (src/http/health.ts) answers 503 while it is marked, so that a
// platform stops routing to a process that can only refuse. Readiness clears it itself: while marked,
// each probe tries a write of a purchase's size (the largest body a client may send,
// docs/reference/contract.md §8) and clears the mark when that write succeeds, since a process the
// platform no longer routes to would otherwise never see a request's write succeed again.
import type { Store } from './store.ts';

export interface StorageSpace {
  /** When a write last failed for lack of space (ms since the epoch); null when none has since the last success. */
  fullSince: number | null;
}

const spaces = new WeakMap<Store, StorageSpace>();

export function storageSpace(store: Store): StorageSpace {
  let space = spaces.get(store);
  if (space === undefined) spaces.set(store, (space = { fullSince: null }));
  return space;
}

export function markStorageFull(store: Store, now = Date.now()): void {
  storageSpace(store).fullSince ??= now;
}
