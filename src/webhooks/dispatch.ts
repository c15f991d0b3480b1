// Fan-out of the outbox (docs/reference/contract.md §6.2, §6.3): each undispatched event, oldest first, becomes one
// delivery per ACTIVE endpoint of its organisation subscribed to its type, and the event is marked
// dispatched, all in one transaction. Running twice creates nothing twice: an event already
// dispatched is skipped inside the transaction, and (eventId, endpointId) is unique.
import type { AppDeps } from '../app-deps.ts';
import { runCommand } from '../commands/run-command.ts';
import { eventsCollection, type EventDoc } from '../events/documents.ts';
import { StorageFull, StoreUnavailable, VersionConflict } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { isStorageFull, isStoreUnavailable, type StoreSession } from '../store/store.ts';
import { NO_LEASE, webhookCollections, type WebhookDeliveryDoc, type WebhookEndpointDoc } from './documents.ts';
import { scheduleAttempts } from './queue.ts';
import { webhookEventSetAside } from '../metrics/metrics.ts';

/**
 * The envelope of docs/reference/contract.md §6.1, serialised once: these exact bytes are signed and sent on every
 * attempt (6.3 rule 3). `apiVersion` is the endpoint's, `accountId` the organisation.
 */
export function envelopeBody(event: Pick<EventDoc, '_id' | 'type' | 'createdAt' | 'organizationId' | 'data'>, apiVersion: string): string {
  return JSON.stringify({
    id: event._id,
    type: event.type,
    apiVersion,
    createdAt: event.createdAt.toISOString(),
    accountId: event.organizationId,
    data: event.data,
  });
}

/** A delivery whose first attempt is due at `now` (offset 0 of docs/reference/contract.md §6.5). */
export function newDelivery(event: EventDoc, endpoint: WebhookEndpointDoc, now: Date): WebhookDeliveryDoc {
  return {
    _id: newId(),
    organizationId: event.organizationId,
    endpointId: endpoint._id,
    eventId: event._id,
    eventType: event.type,
    occurredAt: event.createdAt,
    body: envelopeBody(event, endpoint.apiVersion),
    status: 'PENDING',
    attemptCount: 0,
    createdAt: now,
    deliveredAt: null,
    lastAttemptAt: null,
    nextAttemptAt: now,
    lastDurationMs: null,
    lastStatusCode: null,
    lastErrorClass: null,
    lastResponseSnippet: null,
    leaseUntil: NO_LEASE,
    leaseToken: null,
  };
}

/** Inside the caller's transaction. Returns the deliveries created (none if already dispatched). */
export async function dispatchEventIn(deps: AppDeps, session: StoreSession, eventId: string, now: Date): Promise<WebhookDeliveryDoc[]> {
  const events = eventsCollection(deps.store.db);
  const { endpoints, deliveries } = webhookCollections(deps.store.db);
  const event = await events.findOne({ _id: eventId }, { session });
  if (!event || event.dispatchedAt !== null) return [];
  const targets = await endpoints
    .find({ organizationId: event.organizationId, status: 'ACTIVE', subscribedTypes: event.type }, { session })
    .sort({ _id: 1 })
    .toArray();
  const created: WebhookDeliveryDoc[] = [];
  for (const endpoint of targets) {
    if (await deliveries.findOne({ eventId: event._id, endpointId: endpoint._id }, { session })) continue;
    const delivery = newDelivery(event, endpoint, now);
    await deliveries.insertOne(delivery, { session });
    created.push(delivery);
  }
  const marked = await events.updateOne({ _id: event._id, dispatchedAt: null }, { $set: { dispatchedAt: now } }, { session });
  if (marked.matchedCount === 0) throw new VersionConflict(`event ${event._id}`);
  return created;
}

// A store that is down or full fails every event alike: the run stops and the next one starts over.
const storeDown = (err: unknown) => err instanceof StoreUnavailable || err instanceof StorageFull || isStoreUnavailable(err) || isStorageFull(err);

/** Failed dispatch runs after which an event is set aside: about a minute at the default 5 s interval. */
export const MAX_DISPATCH_FAILURES = 10;

/**
 * Counts a failed dispatch of the event; the failure that reaches MAX_DISPATCH_FAILURES sets it aside
 * (dispatchSetAsideAt), logged at error and counted once, by whichever run set it.
 */
async function dispatchFailed(deps: AppDeps, eventId: string, err: unknown): Promise<void> {
  const events = eventsCollection(deps.store.db);
  const counted = await events.findOneAndUpdate({ _id: eventId, dispatchedAt: null }, { $inc: { dispatchFailures: 1 } }, { returnDocument: 'after' });
  const failures = counted?.dispatchFailures ?? 0;
  deps.log.warn('webhook dispatch failed', { eventId, failures, err: String(err) });
  if (failures < MAX_DISPATCH_FAILURES) return;
  const setAside = await events.updateOne({ _id: eventId, dispatchedAt: null, dispatchSetAsideAt: { $exists: false } }, { $set: { dispatchSetAsideAt: deps.now() } });
  if (setAside.modifiedCount === 0) return;
  deps.log.error('webhook event set aside', { eventId, failures, err: String(err) });
  webhookEventSetAside();
}

/**
 * Dispatches every undispatched event in `_id` (creation) order, in batches, then schedules the
 * first attempt of each new delivery. Returns how many events were dispatched. An event whose
 * dispatch fails is left undispatched for the next run and the later ones go on: there is no
 * ordering guarantee to keep (docs/reference/contract.md §6.3 rule 2), and one event that always
 * fails must not hold up every organisation's events behind it. After MAX_DISPATCH_FAILURES runs
 * it is set aside, no longer tried (docs/operate/observability.md).
 */
export async function dispatchEvents(deps: AppDeps, batch = 100): Promise<number> {
  const events = eventsCollection(deps.store.db);
  let dispatched = 0;
  let after: string | null = null;
  for (;;) {
    const pending = await events
      .find({ dispatchedAt: null, dispatchSetAsideAt: { $exists: false }, ...(after === null ? {} : { _id: { $gt: after } }) })
      .sort({ _id: 1 })
      .limit(batch)
      .toArray();
    for (const event of pending) {
      after = event._id;
      let created: WebhookDeliveryDoc[];
      try {
        created = await runCommand(deps.store, (session) => dispatchEventIn(deps, session, event._id, deps.now()));
      } catch (err) {
        if (storeDown(err)) {
          deps.log.error('webhook dispatch failed', { eventId: event._id, err: String(err) });
          return dispatched;
        }
        await dispatchFailed(deps, event._id, err);
        continue;
      }
      dispatched++;
      await scheduleAttempts(deps, created.map((d) => ({ deliveryId: d._id, at: d.createdAt })));
    }
    if (pending.length < batch) return dispatched;
  }
}
