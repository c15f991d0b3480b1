// One shape for every command handler (docs/internals/design.md §6a): a transaction, retried as a whole with a
// bounded, jittered p-retry when it lost a race: one of our versioned documents changed underneath it
// (VersionConflict), or MongoDB reported a write conflict (code 112, label TransientTransactionError).
// This is the only retry loop around a transaction (MongoStore.withTransaction makes one attempt), and
// it has a budget of attempts AND time: a command that cannot commit within it answers 503, never hangs.
import pRetry from 'p-retry';
import { VersionConflict, storeUnavailable } from '../http/errors.ts';
import { hasErrorLabel, isStoreUnavailable, type Store, type StoreSession, type StoreTransactionOptions } from '../store/store.ts';
import { transactionRetried, versionConflicted } from '../metrics/metrics.ts';

export interface RetryBudget {
  /** Attempts in all, the first included. */
  attempts: number;
  /** No new attempt starts after this long (an attempt in flight is bounded by MONGODB_TIMEOUT_MS). */
  totalMs: number;
}

export const COMMAND_BUDGET: RetryBudget = { attempts: 20, totalMs: 20_000 };

const lostRace = (error: unknown) => error instanceof VersionConflict || hasErrorLabel(error, 'TransientTransactionError');

export async function runCommand<T>(
  store: Store,
  fn: (session: StoreSession) => Promise<T>,
  { budget = COMMAND_BUDGET, onApplied }: { budget?: RetryBudget } & StoreTransactionOptions = {},
): Promise<T> {
  let runs = 0;
  const counted = (session: StoreSession) => {
    if (runs++ > 0) transactionRetried();
    return fn(session);
  };
  try {
    return await pRetry(() => store.withTransaction(counted, { onApplied }), {
      retries: budget.attempts - 1,
      maxRetryTime: budget.totalMs,
      minTimeout: 5,
      maxTimeout: 250,
      factor: 1.5,
      randomize: true,
      shouldRetry: ({ error }) => lostRace(error),
      onFailedAttempt: ({ error }) => {
        if (lostRace(error)) versionConflicted();
      },
    });
  } catch (error) {
    if (lostRace(error) || isStoreUnavailable(error) || hasErrorLabel(error, 'UnknownTransactionCommitResult')) throw storeUnavailable(error);
    throw error;
  }
}
