// Write-side documents of the webhook capability: endpoints (with their encrypted signing secrets)
// and deliveries (one per endpoint and event, docs/reference/contract.md §2.8). The outbox events they come from live
// in src/events/outbox.ts.
import type { StoreDb } from '../store/store.ts';
import type { IndexSpec } from '../store/indexes.ts';
import type { EventType } from '../events/documents.ts';

export type EndpointStatus = 'ACTIVE' | 'DISABLED' | 'REVOKED';

/**
 * Signing secrets, each an AES-256-GCM blob of secrets.ts bound to the endpoint id. `previous`
 * keeps signing beside `current` until `previousExpiresAt` (docs/reference/contract.md §4.17). Removed entirely on
 * revocation (docs/reference/contract.md §3.4).
 */
export interface EndpointSecrets {
  current: string;
  previous: string | null;
  previousExpiresAt: Date | null;
}

export interface WebhookEndpointDoc {
  _id: string;
  organizationId: string;
  url: string;
  description: string | null;
  status: EndpointStatus;
  subscribedTypes: string[];
  apiVersion: string;
  consecutiveFailures: number;
  createdAt: Date;
  updatedAt: Date;
  disabledAt: Date | null;
  /** When it was last enabled again after being disabled (not presented): events before it are not delivered. */
  enabledAt?: Date | null;
  revokedAt: Date | null;
  lastFailureAt: Date | null;
  lastSuccessAt: Date | null;
  /** The outcome of the latest attempt to this endpoint, whatever its delivery (null before any). */
  lastStatusCode: number | null;
  lastDurationMs: number | null;
  lastErrorClass: string | null;
  lastResponseSnippet: string | null;
  /** Absent once revoked: the secrets are destroyed. */
  secrets?: EndpointSecrets;
  /** Bumped by every management change (PATCH, DELETE, rotate); attempts do not bump it. */
  version: number;
}

/**
 * Delivery status values (docs/reference/contract.md §2.8 leaves them open; documented in docs/reference/decisions.md):
 *   PENDING    waiting for its next attempt at nextAttemptAt (an attempt may be in flight)
 *   DELIVERED  a 2xx answer was received (deliveredAt set)
 *   FAILED     a permanent failure: a 3xx, a 4xx other than 408/429, or a URL that breaks docs/reference/contract.md §6.6
 *   EXHAUSTED  seven attempts without success (docs/reference/contract.md §6.5)
 *   CANCELLED  the endpoint was disabled or revoked, or unsubscribed from its type, before it succeeded; no more attempts
 */
export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED' | 'EXHAUSTED' | 'CANCELLED';

export interface WebhookDeliveryDoc {
  _id: string;
  organizationId: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
  occurredAt: Date;
  /** The envelope exactly as sent, stored once: every attempt sends these bytes (UTF-8). */
  body: string;
  status: DeliveryStatus;
  attemptCount: number;
  createdAt: Date;
  deliveredAt: Date | null;
  lastAttemptAt: Date | null;
  nextAttemptAt: Date | null;
  lastDurationMs: number | null;
  lastStatusCode: number | null;
  lastErrorClass: string | null;
  lastResponseSnippet: string | null;
  /**
   * An attempt in flight holds the delivery until `leaseUntil` under `leaseToken`; its result is
   * recorded only while it still holds the lease (epoch 0 when free).
   */
  leaseUntil: Date;
  leaseToken: string | null;
}

/**
 * One per organisation, written by every endpoint creation: two concurrent creations then touch
 * the same document, so MongoDB makes one of them retry (a write conflict) and the allowance
 * count it made cannot be outdated by the other's insert. It is also the organisation's webhook
 * fence (subscriptions.ts): every PATCH and every event recorded for no endpoint write it too.
 */
export interface WebhookQuotaDoc {
  _id: string;
  /** Endpoints created on `creationsDay` (a UTC date, YYYY-MM-DD): at most WEBHOOK_CREATIONS_PER_DAY. */
  creations?: number;
  creationsDay?: string;
  fence?: number;
}

export const webhookCollections = (db: StoreDb) => ({
  endpoints: db.collection<WebhookEndpointDoc>('webhook_endpoints'),
  deliveries: db.collection<WebhookDeliveryDoc>('webhook_deliveries'),
  quotas: db.collection<WebhookQuotaDoc>('webhook_quotas'),
});

/** The indexes of these collections (created at start: src/webhooks/capability.ts). */
export const WEBHOOK_INDEXES: readonly IndexSpec[] = [
  // GET /v1/webhooks in its order, read off the index: the list keeps revoked endpoints for ever (contract §4.11).
  { collection: 'webhook_endpoints', keys: { organizationId: 1, createdAt: 1, _id: 1 } },
  { collection: 'webhook_endpoints', keys: { organizationId: 1, status: 1, subscribedTypes: 1 } },
  { collection: 'webhook_deliveries', keys: { eventId: 1, endpointId: 1 }, options: { unique: true } },
  { collection: 'webhook_deliveries', keys: { endpointId: 1, _id: -1 } },
  // The sweep's due deliveries, oldest due first: with _id, its tie-break, the index gives that order, and the
  // sweep reads a batch instead of sorting every due delivery in memory (a backlog at a dead receiver).
  { collection: 'webhook_deliveries', keys: { status: 1, nextAttemptAt: 1, _id: 1 } },
  // An endpoint's pending deliveries (disable/revoke), and its due ones oldest first, in the order read off
  // the index with _id, their tie-break (resuming the deliveries deferred by the in-flight caps,
  // src/webhooks/attempt-slots.ts): a backlog at an endpoint is not sorted in memory for a few slots.
  { collection: 'webhook_deliveries', keys: { endpointId: 1, status: 1, nextAttemptAt: 1, _id: 1 } },
];

export const NO_LEASE = new Date(0);
