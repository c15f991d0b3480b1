// What the HTTP layer and the worker are given by the composition root (src/main.ts).
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import type { Store } from './store/store.ts';
import type { Collections } from './store/collections.ts';

export interface AppDeps {
  config: Config;
  store: Store;
  collections: Collections;
  log: Logger;
  now: () => Date;
}
