// Webhook resources and the delivered envelope (docs/reference/contract.md §2.8, §4.11-4.18, §6.1). No read carries a
// secret: only creation and rotation return IssuedWebhookEndpoint.
import Type from 'typebox';
import { Nullable, Timestamp, Uuid } from './common.ts';
import { SUBSCRIBABLE_EVENT_TYPES, WEBHOOK_API_VERSION, WebhookEventType } from './webhooks.ts';

export const DELIVERABLE_EVENT_TYPES = [...SUBSCRIBABLE_EVENT_TYPES, 'webhook.test'] as const;

export const WebhookEndpoint = Type.Object({
  id: Uuid,
  url: Type.String({ format: 'uri' }),
  description: Nullable(Type.String()),
  status: Type.Enum(['ACTIVE', 'DISABLED', 'REVOKED']),
  subscribedTypes: Type.Array(WebhookEventType),
  apiVersion: Type.String({ description: `Pinned at creation, changed only by PATCH; currently ${WEBHOOK_API_VERSION}.` }),
  consecutiveFailures: Type.Integer({ minimum: 0, description: 'Reset by any success; failures never disable an endpoint.' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  disabledAt: Nullable(Timestamp),
  revokedAt: Nullable(Timestamp),
  lastFailureAt: Nullable(Timestamp),
  lastSuccessAt: Nullable(Timestamp),
  lastStatusCode: Nullable(Type.Integer()),
  lastDurationMs: Nullable(Type.Integer({ minimum: 0 })),
  lastErrorClass: Nullable(Type.String()),
  lastResponseSnippet: Nullable(Type.String()),
});

export const IssuedWebhookEndpoint = Type.Object({
  ...WebhookEndpoint.properties,
  secret: Type.String({ pattern: '^cmp_whs_[A-Za-z0-9_-]{43}$', description: 'Shown exactly once.' }),
});

export const WebhookEndpointList = Type.Object({ items: Type.Array(WebhookEndpoint) });

export const WebhookDelivery = Type.Object({
  id: Uuid,
  eventId: Uuid,
  eventType: Type.Enum([...DELIVERABLE_EVENT_TYPES]),
  occurredAt: Timestamp,
  status: Type.Enum(['PENDING', 'DELIVERED', 'FAILED', 'EXHAUSTED', 'CANCELLED']),
  attemptCount: Type.Integer({ minimum: 0 }),
  createdAt: Timestamp,
  deliveredAt: Nullable(Timestamp),
  lastAttemptAt: Nullable(Timestamp),
  nextAttemptAt: Nullable(Timestamp),
  lastDurationMs: Nullable(Type.Integer({ minimum: 0 })),
  lastStatusCode: Nullable(Type.Integer()),
  lastErrorClass: Nullable(Type.String()),
  lastResponseSnippet: Nullable(Type.String({ description: 'Up to 512 bytes of the receiver\'s non-2xx answer.' })),
});

export const WebhookDeliveryList = Type.Object({ items: Type.Array(WebhookDelivery), hasMore: Type.Boolean() });

export const TestEventQueued = Type.Object({ deliveryId: Uuid, eventId: Uuid, status: Type.Literal('queued') });

/** GET /v1/webhooks/{id}/deliveries `limit` (docs/reference/decisions.md); out of range is invalid_request. */
export const DELIVERIES_LIMIT = { default: 20, min: 1, max: 100 } as const;
export const DeliveriesQuery = { limit: Type.Integer({ minimum: DELIVERIES_LIMIT.min, maximum: DELIVERIES_LIMIT.max, default: DELIVERIES_LIMIT.default }) };

/** The delivered body (docs/reference/contract.md §6.1); `data` depends on `type` (schemas/events.ts). */
export const eventEnvelope = <T extends Parameters<typeof Type.Object>[0][string]>(type: string, data: T) =>
  Type.Object({
    id: Type.String({ format: 'uuid', description: 'The logical event; equals Service-Webhook-Id; deduplicate on it.' }),
    type: Type.Literal(type),
    apiVersion: Type.String(),
    createdAt: Timestamp,
    accountId: Uuid,
    data,
  });
