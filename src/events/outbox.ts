// Domain events go into the `events` outbox in the same transaction as the change they report
// (SPEC.md 6.1-6.2). The webhook dispatcher fans them out to endpoints later; nothing here does I/O.
import type { StoreDb, StoreSession } from '../store/store.ts';
import { newId } from '../ids.ts';

export type EventType =
  | 'purchase.approval_required'
  | 'purchase.approved'
  | 'purchase.rejected'
  | 'purchase.approval_expired'
  | 'budget.threshold_reached'
  | 'budget.exhausted'
  | 'agent.disabled'
  | 'agent.archived'
  | 'connection.created'
  | 'connection.revoked'
  | 'security.connection_token_reuse_detected'
  | 'webhook.test';

export interface EventDoc {
  _id: string;
  type: EventType;
  organizationId: string;
  createdAt: Date;
  data: Record<string, unknown>;
  /** Set once the dispatcher has created a delivery for every subscribed endpoint. */
  dispatchedAt: Date | null;
}

export const eventsCollection = (db: StoreDb) => db.collection<EventDoc>('events');

export async function recordEvent(
  db: StoreDb,
  session: StoreSession,
  event: { type: EventType; organizationId: string; createdAt: Date; data: Record<string, unknown> },
): Promise<string> {
  const id = newId();
  await eventsCollection(db).insertOne({ _id: id, ...event, dispatchedAt: null }, { session });
  return id;
}
