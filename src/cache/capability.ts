// What the configuration cache needs in the store: the stamp it compares (src/cache/config-cache.ts).
import type { Capability } from '../capability.ts';

export const configCache: Capability = { name: 'config-cache', collections: ['config_stamps'] };
