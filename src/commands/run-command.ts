// One shape for every command handler (DESIGN.md 6a): a transaction, retried as a whole with a
// bounded, jittered p-retry when one of our versioned documents changed underneath it.
// The driver's own TransientTransactionError / UnknownTransactionCommitResult retries happen inside
// withTransaction; we only add retries for our own version conflicts.
import pRetry from 'p-retry';
import { VersionConflict } from '../http/errors.ts';
import type { Store, StoreSession } from '../store/store.ts';
import { transactionRetried, versionConflicted } from '../metrics/metrics.ts';

export function runCommand<T>(store: Store, fn: (session: StoreSession) => Promise<T>): Promise<T> {
  let runs = 0;
  const counted = (session: StoreSession) => {
    if (runs++ > 0) transactionRetried();
    return fn(session);
  };
  return pRetry(() => store.withTransaction(counted), {
    retries: 10,
    minTimeout: 5,
    maxTimeout: 250,
    factor: 1.5,
    randomize: true,
    shouldRetry: ({ error }) => error instanceof VersionConflict,
    onFailedAttempt: ({ error }) => {
      if (error instanceof VersionConflict) versionConflicted();
    },
  });
}
