// Whether anything would receive an event: an ACTIVE endpoint of its organisation subscribed to its
// type. Asked when the event is recorded, from the per-process configuration cache, so an
// organisation without endpoints costs the dispatcher nothing: its events are recorded as already
// dispatched (to nobody) and never enter the outbox queue. An endpoint receives the events recorded
// after it was created or subscribed (docs/reference/contract.md §6.2: gaps in what an endpoint sees are normal).
import { viewIn } from '../cache/config-cache.ts';
import type { EventType } from '../events/documents.ts';
import type { StoreDb, StoreSession } from '../store/store.ts';
import { webhookCollections } from './documents.ts';

export async function hasSubscribers(db: StoreDb, session: StoreSession, organizationId: string, type: EventType): Promise<boolean> {
  const view = await viewIn(db, session);
  const types = await view.get(`webhook-types:${organizationId}`, async () => {
    const active = await webhookCollections(db).endpoints.find({ organizationId, status: 'ACTIVE' }, { session }).toArray();
    return new Set<string>(active.flatMap((endpoint) => endpoint.subscribedTypes));
  });
  return types.has(type);
}
