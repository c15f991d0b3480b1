// The composition root: the one list of the capabilities the service is made of, and the one place
// where its dependencies are built. The web process (src/main.ts), the worker (src/worker/), index creation
// (scripts/create-indexes.ts, the Procfile's release step) and the tests (test/helpers/app.ts) all start
// from here; the HTTP app, the worker and the store's set-up read the list and name no capability.
// What each capability serves over HTTP is listed apart, in src/service-app.ts, so that a process that
// only runs jobs (`npm run worker`) loads none of it (src/capability.ts).
import type { Agenda } from 'agenda';
import type { AppDeps, OrganizationMemory } from './app-deps.ts';
import type { Capability, WorkerOptions } from './capability.ts';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import type { Store, StoreDb } from './store/store.ts';
import { collections } from './store/collections.ts';
import { createIndexes as createStoreIndexes, type StoreLayout } from './store/indexes.ts';
import { OrganizationActors } from './commands/organization-actors.ts';
import type { Scheduler } from './jobs/scheduler.ts';
import { startWorker } from './jobs/start-worker.ts';
import { jobs } from './jobs/capability.ts';
import { configCache } from './cache/capability.ts';
import { events } from './events/capability.ts';
import { identity } from './identity/capability.ts';
import { agents } from './agents/capability.ts';
import { policies } from './policies/capability.ts';
import { budgets } from './budgets/capability.ts';
import { purchases } from './purchases/capability.ts';
import { approvals } from './approvals/capability.ts';
import { receipts } from './receipts/capability.ts';
import { simulations } from './simulations/capability.ts';
import { webhooks } from './webhooks/capability.ts';
import { shadowDrain } from './simulations/shadow.ts';

/** In this order jobs are defined and declared. */
export const CAPABILITIES: readonly Capability[] = [jobs, configCache, events, identity, agents, policies, budgets, purchases, approvals, receipts, simulations, webhooks];

/** What the store needs, gathered from every capability. */
export const STORE_LAYOUT: StoreLayout = {
  collections: [...new Set(CAPABILITIES.flatMap((c) => [...(c.indexes ?? []).map((i) => i.collection), ...(c.collections ?? [])]))].sort(),
  indexes: CAPABILITIES.flatMap((c) => c.indexes ?? []),
  retired: CAPABILITIES.flatMap((c) => c.retiredIndexes ?? []),
  before: CAPABILITIES.flatMap((c) => (c.beforeIndexes ? [c.beforeIndexes] : [])),
};

/** Creates every collection and index (idempotent), and drops the retired indexes. */
export const createIndexes = (db: StoreDb): Promise<void> => createStoreIndexes(db, STORE_LAYOUT);

/** The dependencies, built once per process (docs/internals/design.md §1). */
/**
 * This process's organisation actors: an organisation weighs 1 plus the windows it remembers, and 50,000 in
 * all bounds their windows to about 30 MB however many organisations there are.
 */
const organizationActors = () => new OrganizationActors<OrganizationMemory>(50_000, (memory) => 1 + (memory.windows?.size ?? 0));

export function composeDeps(parts: { config: Config; store: Store; log: Logger; scheduler: Scheduler; now?: () => Date }): AppDeps {
  const { config, store, log, scheduler } = parts;
  const deps: AppDeps = { config, store, collections: collections(store.db), log, now: parts.now ?? (() => new Date()), actors: organizationActors(), scheduler };
  deps.shadows = shadowDrain(() => deps);
  return deps;
}

/** Runs every capability's jobs on this Agenda (intervals from the configuration unless given); returns the function that stops them. */
export const startJobs = (deps: AppDeps, agenda: Agenda, options: WorkerOptions = {}): Promise<() => Promise<void>> =>
  startWorker(deps, agenda, CAPABILITIES, { webhookSweepEvery: deps.config.webhookSweepEveryMs, ...options });
