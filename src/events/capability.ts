// What the events outbox needs in the store: the dispatcher reads undispatched events in order.
import type { Capability } from '../capability.ts';

export const events: Capability = {
  name: 'events',
  indexes: [{ collection: 'events', keys: { dispatchedAt: 1, _id: 1 } }],
};
