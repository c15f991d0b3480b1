// Whether anything would receive an event: an ACTIVE endpoint of its organisation subscribed to its
// type. Asked when the event is recorded, from the per-process configuration cache, so an
// organisation without endpoints costs the dispatcher nothing: its events are recorded as already
// dispatched (to nobody) and never enter the outbox queue. An endpoint receives the events committed
// after it was created or subscribed (docs/reference/decisions.md, "Which events an endpoint receives").
import { viewIn } from '../cache/config-cache.ts';
import type { EventType } from '../events/documents.ts';
import { VersionConflict } from '../http/errors.ts';
import type { StoreDb, StoreSession } from '../store/store.ts';
import type { WriteBatch } from '../store/write-batch.ts';
import { webhookCollections, type WebhookQuotaDoc } from './documents.ts';

export async function hasSubscribers(db: StoreDb, session: StoreSession, organizationId: string, type: EventType): Promise<boolean> {
  const view = await viewIn(db, session);
  const types = await view.get(`webhook-types:${organizationId}`, async () => {
    const active = await webhookCollections(db).endpoints.find({ organizationId, status: 'ACTIVE' }, { session }).toArray();
    return new Set<string>(active.flatMap((endpoint) => endpoint.subscribedTypes));
  });
  return types.has(type);
}

// The organisation's webhook fence (docs/internals/design.md §2). "To nobody" is decided on the snapshot of
// the event's transaction; under MongoDB's snapshot isolation an endpoint created, re-enabled or
// subscribed by a transaction that commits meanwhile is not in it, and both would commit: the event,
// committed after the endpoint, would never reach it. So such an event and every change that may add a
// receiver write the organisation's quota document (a creation already does, for its count): of two
// that overlap, one is retried and sees the other. An event that does go to the dispatcher needs no
// fence: the dispatcher reads the endpoints after it committed.
const fence = { $inc: { fence: 1 } };
const raced = (organizationId: string) => () => new VersionConflict(`webhook fence of ${organizationId}`);

export async function fenceSubscriptions(db: StoreDb, session: StoreSession, organizationId: string): Promise<void> {
  await webhookCollections(db).quotas.updateOne({ _id: organizationId }, fence, { session, upsert: true });
}

/** The fence as one more write of a command's batch. */
export function fenceSubscriptionsIn(batch: WriteBatch, organizationId: string): void {
  batch.updateOne<WebhookQuotaDoc>('webhook_quotas', { _id: organizationId }, fence, { upsert: true, onDuplicate: raced(organizationId) });
}
