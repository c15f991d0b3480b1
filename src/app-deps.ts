// What the HTTP layer and the worker are given by the composition root (src/main.ts).
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import type { Store } from './store/store.ts';
import type { Collections } from './store/collections.ts';
import type { OrganizationActors } from './commands/organization-actors.ts';
import type { ChainHead } from './receipts/chain.ts';
import type { BudgetWindowDoc } from './budgets/window-state.ts';
import type { Scheduler } from './jobs/scheduler.ts';
import type { Lifecycle } from './lifecycle.ts';

export interface AppDeps {
  config: Config;
  store: Store;
  collections: Collections;
  log: Logger;
  now: () => Date;
  /** The organisation actors of this process: one mailbox and a small memory each (docs/internals/design.md §1). */
  actors: OrganizationActors<OrganizationMemory>;
  /** Puts one-off jobs on the schedule (approval expiry, webhook attempts). */
  scheduler: Scheduler;
  /** Readiness and shutdown state of this process (main.ts); absent in tests that need none. */
  lifecycle?: Lifecycle;
  /** Evaluates committed purchases against drafts in shadow, off the request path (src/simulations/shadow.ts). */
  shadows?: ShadowDrain;
}

/**
 * What an organisation's actor remembers between its commands, each a guess the record's versioned
 * write confirms (src/commands/organization-actors.ts).
 */
export interface OrganizationMemory {
  /** The head of the organisation's receipt chain after its last committed decision. */
  receiptChain: ChainHead;
  /** Its budget windows as its last commands read or wrote them (at most REMEMBERED_WINDOWS, src/budgets/window-state.ts). */
  windows: ReadonlyMap<string, BudgetWindowDoc>;
}

/** This process's shadow drain (src/simulations/shadow.ts): the handler nudges it after a commit of an organisation with a shadow. */
export interface ShadowDrain {
  nudge(organizationId: string): void;
  /** Resolves once every nudge so far has been drained (tests, the bench and shutdown). */
  idle(): Promise<void>;
}
