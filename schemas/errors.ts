// The error body of docs/reference/contract.md §7, and which codes each HTTP status carries. The OpenAPI
// document narrows `code` per operation and status from these lists.
import Type from 'typebox';

export const ErrorIssue = Type.Object({
  path: Type.String({ description: 'The field as sent (`metadata.a.0`, a query parameter, `Idempotency-Key`); the whole body is `body`, on webhook management the empty string.' }),
  code: Type.String({ description: 'Stable; branch on it.' }),
  message: Type.String(),
});

export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.String({ description: 'Stable; branch on it.' }),
    message: Type.String({ description: 'For people; may change.' }),
    issues: Type.Optional(Type.Array(ErrorIssue, { description: 'Only with invalid_request (and draft_invalid): every problem found.' })),
  }),
});

/** docs/reference/contract.md §4 "A401": every way a credential can be unusable. */
export const A401 = ['unauthorized', 'invalid_api_key', 'api_key_revoked', 'api_key_expired', 'wrong_environment', 'invalid_token'] as const;
/** docs/reference/contract.md §4 "A403-org": operations only an organization-scoped API key may call. */
export const A403_ORG = ['connection_unauthorized', 'organization_suspended', 'api_key_not_organization_scoped', 'oauth_not_permitted'] as const;
/** 403s of the operations an agent identity (agent-bound key or connection) calls. */
export const A403_AGENT = ['connection_unauthorized', 'organization_suspended', 'api_key_not_bound_to_agent', 'insufficient_scope'] as const;

export type ErrorCodes = Partial<Record<400 | 401 | 403 | 404 | 409 | 413 | 415 | 500 | 503, readonly string[]>>;

export const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is not valid.',
  401: 'No usable credential.',
  403: 'The credential may not do this.',
  404: 'No such resource (another organisation\'s, or a malformed id, is the same 404).',
  409: 'Conflicts with the current state.',
  413: 'The body is over the size limit.',
  415: 'A write without Content-Type: application/json.',
  500: 'A server failure; safe to retry (a purchase with the same Idempotency-Key).',
  503: 'The facility is unavailable (webhook_not_configured), or the store could not commit within its deadline (internal_error, with Retry-After; safe to retry).',
};
