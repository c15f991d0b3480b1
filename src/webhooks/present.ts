// Wire shapes of docs/reference/contract.md §2.8. No read ever carries a secret: only creation and rotation add one.
import type { WebhookDeliveryDoc, WebhookEndpointDoc } from './documents.ts';

import { iso } from '../timestamps.ts';
import type { Static } from 'typebox';
import type { IssuedWebhookEndpoint, WebhookDelivery, WebhookEndpoint } from '../../schemas/webhook-resources.ts';
import type { SubscribableEventType } from '../../schemas/webhooks.ts';

export function presentEndpoint(e: WebhookEndpointDoc): Static<typeof WebhookEndpoint> {
  return {
    id: e._id,
    url: e.url,
    description: e.description,
    status: e.status,
    subscribedTypes: [...e.subscribedTypes] as SubscribableEventType[], // validated against the schema when written
    apiVersion: e.apiVersion,
    consecutiveFailures: e.consecutiveFailures,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
    disabledAt: iso(e.disabledAt),
    revokedAt: iso(e.revokedAt),
    lastFailureAt: iso(e.lastFailureAt),
    lastSuccessAt: iso(e.lastSuccessAt),
    // The latest attempt's outcome at this endpoint (additions to docs/reference/contract.md §2.8; clients ignore
    // unknown fields, rule 7).
    lastStatusCode: e.lastStatusCode ?? null,
    lastDurationMs: e.lastDurationMs ?? null,
    lastErrorClass: e.lastErrorClass ?? null,
    lastResponseSnippet: e.lastResponseSnippet ?? null,
  };
}

/** IssuedWebhookEndpoint: the endpoint plus its new secret, shown exactly once. */
export const presentIssuedEndpoint = (e: WebhookEndpointDoc, secret: string): Static<typeof IssuedWebhookEndpoint> => ({ ...presentEndpoint(e), secret });

export function presentDelivery(d: WebhookDeliveryDoc): Static<typeof WebhookDelivery> {
  return {
    id: d._id,
    eventId: d.eventId,
    eventType: d.eventType,
    occurredAt: d.occurredAt.toISOString(),
    status: d.status,
    attemptCount: d.attemptCount,
    createdAt: d.createdAt.toISOString(),
    deliveredAt: iso(d.deliveredAt),
    lastAttemptAt: iso(d.lastAttemptAt),
    nextAttemptAt: iso(d.nextAttemptAt),
    lastDurationMs: d.lastDurationMs,
    lastStatusCode: d.lastStatusCode,
    lastErrorClass: d.lastErrorClass,
    lastResponseSnippet: d.lastResponseSnippet,
  };
}
