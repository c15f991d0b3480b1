// The `events` outbox's documents (docs/reference/contract.md §6.1-6.2): what src/events/outbox.ts records and the webhook
// dispatcher reads. Apart from the recording so that the readers need not import the writer.
import type { StoreDb } from '../store/store.ts';

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
  /** Set once the dispatcher has created a delivery for every subscribed endpoint (at once when none subscribes). */
  dispatchedAt: Date | null;
  /** How many dispatch runs failed on this event (absent: none); see src/webhooks/dispatch.ts. */
  dispatchFailures?: number;
  /** Set when the dispatcher gave up on it after MAX_DISPATCH_FAILURES: never dispatched again, kept for an operator. */
  dispatchSetAsideAt?: Date;
}

export const eventsCollection = (db: StoreDb) => db.collection<EventDoc>('events');
