// Domain events go into the `events` outbox in the same transaction as the change they report
// (docs/reference/contract.md §6.1-6.2). The webhook dispatcher fans them out to endpoints later; nothing here does I/O
// beyond the store.
import type { StoreDb, StoreSession } from '../store/store.ts';
import { newId } from '../ids.ts';
import { fenceSubscriptions, fenceSubscriptionsIn, hasSubscribers } from '../webhooks/subscriptions.ts';
import type { WriteBatch } from '../store/write-batch.ts';
import { eventsCollection, type EventDoc, type EventType } from './documents.ts';

export type NewEvent = { type: EventType; organizationId: string; createdAt: Date; data: Record<string, unknown> };

async function eventDocument(db: StoreDb, session: StoreSession, event: NewEvent): Promise<EventDoc> {
  // An event no endpoint subscribes to is dispatched (to nobody) as it is recorded.
  const dispatchedAt = (await hasSubscribers(db, session, event.organizationId, event.type)) ? null : event.createdAt;
  return { _id: newId(), ...event, dispatchedAt };
}

// One recorded for nobody writes the organisation's webhook fence, so that it cannot commit beside an
// endpoint it did not see being created or subscribed (src/webhooks/subscriptions.ts).
export async function recordEvent(db: StoreDb, session: StoreSession, event: NewEvent): Promise<string> {
  const doc = await eventDocument(db, session, event);
  await eventsCollection(db).insertOne(doc, { session });
  if (doc.dispatchedAt !== null) await fenceSubscriptions(db, session, doc.organizationId);
  return doc._id;
}

/** recordEvent, as more writes of the transaction's batch. */
export async function queueEvent(db: StoreDb, session: StoreSession, batch: WriteBatch, event: NewEvent): Promise<void> {
  const doc = await eventDocument(db, session, event);
  batch.insertOne('events', doc);
  if (doc.dispatchedAt !== null) fenceSubscriptionsIn(batch, doc.organizationId);
}
