// Graceful shutdown (docs/operate/deployment.md). On SIGTERM: readiness turns 503, the server stops
// accepting connections, requests in flight finish (each answer closes its connection), the jobs
// in hand finish or are released, then the store closes. Everything is bounded so the process
// exits inside the 30 s a platform allows between SIGTERM and SIGKILL.
import type { Server } from 'node:http';
import type { Logger } from '../log.ts';
import type { Store } from '../store/store.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { stopAccepting } from './listen.ts';

/** In-flight requests get this long; the jobs' own drain is bounded at 15 s and runs alongside. */
export const REQUEST_DRAIN_MS = 20_000;
/** Past this the process exits 1 whatever is still running. */
export const HARD_EXIT_MS = 28_000;

/**
 * Stops accepting, lets the requests in flight finish (their answers say Connection: close, see
 * closeWhenStopping), and cuts whatever is left at the deadline.
 */
export async function drainServer(server: Server, deadlineMs = REQUEST_DRAIN_MS): Promise<void> {
  const others = stopAccepting(server);
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const cut = setTimeout(() => server.closeAllConnections(), deadlineMs);
  try {
    await Promise.all([closed, others]);
  } finally {
    clearTimeout(cut);
  }
}

export interface Stoppable {
  log: Logger;
  store: Store;
  server?: Server;
  lifecycle?: Lifecycle;
  /** Finishes or releases the jobs in hand (the stop function startJobs returns). */
  stopJobs?: (() => Promise<void>) | null;
  /** Closes other listeners on the store (the wire-protocol listener), after requests drained. */
  stopListeners?: (() => Promise<void>) | null;
}

export function stopGracefully(parts: Stoppable): (signal: string) => Promise<void> {
  return async (signal) => {
    const started = performance.now();
    parts.log.info('stopping', { signal });
    if (parts.lifecycle) parts.lifecycle.stopping = true;
    const stopJobs = async () => {
      if (!parts.stopJobs) return;
      await parts.stopJobs();
      if (parts.lifecycle) parts.lifecycle.jobsRunning = false;
    };
    await Promise.all([parts.server ? drainServer(parts.server) : undefined, stopJobs()]);
    await parts.stopListeners?.();
    await parts.store.close();
    parts.log.info('stopped', { signal, ms: Math.round(performance.now() - started) });
  };
}
