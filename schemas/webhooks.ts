// Webhook management bodies (docs/reference/contract.md §4.12, §4.14, §4.17), the event types of docs/reference/contract.md §6.2 and the
// payload of the delivery-attempt job. Unknown fields are refused (docs/reference/contract.md §1 rule 6).
import Type from 'typebox';
import { Uuid } from './common.ts';

/** The current webhook contract version (docs/reference/contract.md §6.1); the only one PATCH accepts (docs/reference/decisions.md). */
export const WEBHOOK_API_VERSION = '2026-09-01';

/** The eleven subscribable event types (docs/reference/contract.md §6.2, `WebhookEventType`). */
export const SUBSCRIBABLE_EVENT_TYPES = [
  'purchase.approval_required',
  'purchase.approved',
  'purchase.rejected',
  'purchase.approval_expired',
  'budget.threshold_reached',
  'budget.exhausted',
  'agent.disabled',
  'agent.archived',
  'connection.created',
  'connection.revoked',
  'security.connection_token_reuse_detected',
] as const;

export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];

export const WebhookEventType = Type.Enum([...SUBSCRIBABLE_EVENT_TYPES]);

const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Description = Type.Union([Type.String({ maxLength: 1000 }), Type.Null()]);
const SubscribedTypes = Type.Array(WebhookEventType, { minItems: 1, maxItems: SUBSCRIBABLE_EVENT_TYPES.length, uniqueItems: true });

export const CreateWebhookBody = Type.Object(
  {
    url: Url,
    subscribedTypes: SubscribedTypes,
    description: Type.Optional(Description),
  },
  { additionalProperties: false },
);

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    description: Type.Optional(Description),
    subscribedTypes: Type.Optional(SubscribedTypes),
    status: Type.Optional(Type.Enum(['ACTIVE', 'DISABLED'])),
    apiVersion: Type.Optional(Type.Literal(WEBHOOK_API_VERSION)),
  },
  // docs/reference/contract.md §4.14: at least one field (the service answers {} with NO_FIELDS).
  { additionalProperties: false, minProperties: 1 },
);

export const RotateSecretBody = Type.Object({ retireImmediately: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

/** POST /v1/webhooks/{id}/test takes no body; an empty object is tolerated, any field is unknown. */
export const TestWebhookBody = Type.Object({}, { additionalProperties: false });

/** Data of the `webhooks.attempt` job. */
export const WebhookAttemptJob = Type.Object({ deliveryId: Uuid }, { additionalProperties: false });

export type CreateWebhookBody = Type.Static<typeof CreateWebhookBody>;
export type UpdateWebhookBody = Type.Static<typeof UpdateWebhookBody>;
export type RotateSecretBody = Type.Static<typeof RotateSecretBody>;
export type WebhookAttemptJob = Type.Static<typeof WebhookAttemptJob>;
