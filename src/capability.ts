// What one capability contributes to the service: its jobs, its gauges, the collections and indexes it
// needs in the store (its `capability.ts`), and apart from those its HTTP routes and middleware (its
// `surface.ts`). The composition root (src/compose.ts) lists the capabilities and src/service-app.ts the
// surfaces, and the HTTP app, the worker and index creation read only those lists, so none of them names
// a capability. Kept apart so that a process that only runs jobs (`npm run worker`)
// loads no HTTP code: no route, no dashboard page, no MCP SDK (test/worker/jobs-graph.test.ts).
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Agenda } from 'agenda';
import type { AppDeps } from './app-deps.ts';
import type { StoreDb } from './store/store.ts';
import type { IndexSpec, RetiredIndex } from './store/indexes.ts';

/** How often the worker's recurring jobs run; the tests shorten them. */
export interface WorkerOptions {
  /** How often the overdue-approval sweep runs (human interval, e.g. '1 minute'). */
  sweepEvery?: string;
  /** How often outbox events are fanned out to webhook endpoints (default 5 seconds). */
  webhookDispatchEvery?: string | number;
  /** How often due webhook deliveries without a job are swept up (default 1 minute). */
  webhookSweepEvery?: string | number;
  /** How often shadows with purchases left to evaluate are caught up (default 30 seconds). */
  shadowCatchUpEvery?: string | number;
}

/** What a capability contributes to the HTTP app. */
export interface HttpSurface {
  readonly name: string;
  /** Middleware that runs before any surface's routes (authentication on /v1, say), in the list's order. */
  readonly middleware?: (deps: AppDeps) => Middleware[];
  /** Its routers, mounted in the list's order. */
  readonly routes?: (deps: AppDeps) => Router[];
}

export interface Capability {
  readonly name: string;
  /** Says how its gauges are measured (when /metrics is scraped); called as the app is made. */
  readonly metrics?: (deps: AppDeps) => void;
  /** Defines its jobs, in every process that runs jobs. */
  readonly defineJobs?: (agenda: Agenda, deps: AppDeps) => void;
  /** Declares its recurring jobs (from the job runner only, docs/internals/design.md §8). */
  readonly scheduleJobs?: (agenda: Agenda, options: WorkerOptions) => Promise<void>;
  /**
   * Called as the process stops, before the jobs in hand are drained: ends their slow work (a request
   * to another server) at once, leaving it to be done again by the next worker.
   */
  readonly stopping?: (deps: AppDeps) => void;
  /** The collections it writes that none of its indexes names (all are created at start). */
  readonly collections?: readonly string[];
  readonly indexes?: readonly IndexSpec[];
  readonly retiredIndexes?: readonly RetiredIndex[];
  /**
   * Runs at start and in the release step, before any index is built: brings its data up to date
   * (clears what would stop one of its unique indexes being built, completes fields an older release
   * did not write). Idempotent: several processes may run it at once.
   */
  readonly beforeIndexes?: (db: StoreDb) => Promise<void>;
}
