// The OpenAPI 3.1 document of the /v1 contract, built from the same TypeBox schemas the service
// validates requests with and shapes its responses by. `npm run schemas` writes it to
// schemas/openapi.json; GET /v1/openapi.json serves it with this deployment's URLs.
import { EventData } from './events.ts';
import { Currency, MinorAmount, Timestamp, Uuid } from './common.ts';
import { A401, A403_AGENT, A403_ORG, ERROR_DESCRIPTIONS, ErrorBody, ErrorIssue, type ErrorCodes } from './errors.ts';
import { Agent, AgentList } from './agents.ts';
import {
  Approval,
  Decision,
  Outcome,
  PurchaseDecisionResponse,
  PurchaseReadback,
  PurchaseReadbackResponse,
  PurchaseStatus,
  ReasonCode,
  RuleEvaluation,
  SubmittedVia,
} from './decisions.ts';
import { ReplayBody, ReplayChange, ReplayPageQuery, ReplayResponse, ReplaySummary, ShadowResponse, SimulatedBudget, SimulationResponse } from './simulations.ts';
import { Jwks, ReceiptList } from './receipts.ts';
import { RECEIPT_HEADER_MAX } from '../src/receipts/header.ts';
import {
  Pagination,
  PolicyDetail,
  PolicyIssue,
  PolicyList,
  PolicyListQuery,
  PolicyMerchantEntry,
  PolicyRule,
  PolicySummary,
  PolicyVersion,
  PolicyVersionDetail,
  PolicyVersionSummary,
  ValidateBody,
  ValidationResult,
} from './policies.ts';
import { CurrentPoliciesSimulationBody, IDEMPOTENCY_KEY, PurchaseRequestBody, VersionSimulationBody } from './purchases.ts';
import { CreateWebhookBody, RotateSecretBody, TestWebhookBody, UpdateWebhookBody, WEBHOOK_API_VERSION } from './webhooks.ts';
import {
  DELIVERABLE_EVENT_TYPES,
  DeliveriesQuery,
  IssuedWebhookEndpoint,
  TestEventQueued,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  eventEnvelope,
} from './webhook-resources.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Named schemas: wherever one appears inside another, the document refers to it by name. */
const COMPONENTS: Record<string, unknown> = {
  Uuid,
  Timestamp,
  MinorAmount,
  Currency,
  Outcome,
  ReasonCode,
  PurchaseStatus,
  ErrorIssue,
  ErrorBody,
  Agent,
  AgentList,
  Decision,
  RuleEvaluation,
  SubmittedVia,
  Approval,
  PurchaseDecisionResponse,
  PurchaseReadback,
  PurchaseReadbackResponse,
  SimulatedBudget,
  SimulationResponse,
  ReplaySummary,
  ReplayChange,
  ReplayResponse,
  ShadowResponse,
  ReplayBody,
  ReceiptList,
  Jwks,
  PolicyVersionSummary,
  PolicyRule,
  PolicyMerchantEntry,
  PolicyVersion,
  PolicySummary,
  Pagination,
  PolicyList,
  PolicyDetail,
  PolicyVersionDetail,
  PolicyIssue,
  ValidationResult,
  WebhookEndpoint,
  IssuedWebhookEndpoint,
  WebhookEndpointList,
  WebhookDelivery,
  WebhookDeliveryList,
  TestEventQueued,
  PurchaseRequestBody,
  CurrentPoliciesSimulationBody,
  VersionSimulationBody,
  CreateWebhookBody,
  UpdateWebhookBody,
  RotateSecretBody,
};

// TypeBox keeps its bookkeeping in non-enumerable keys; a JSON round trip leaves plain JSON Schema.
const plain = (schema: unknown): Json => JSON.parse(JSON.stringify(schema));

const byShape = new Map(Object.entries(COMPONENTS).map(([name, schema]) => [JSON.stringify(plain(schema)), name]));

/** Replaces every sub-schema equal to a named component by a $ref to it (the largest match wins). */
function refer(value: Json, self?: string): Json {
  if (Array.isArray(value)) return value.map((v) => refer(v));
  if (value === null || typeof value !== 'object') return value;
  const name = byShape.get(JSON.stringify(value));
  if (name !== undefined && name !== self) return { $ref: `#/components/schemas/${name}` };
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, refer(v)]));
}

const schema = (s: unknown): Json => refer(plain(s));
const json = (s: unknown) => ({ 'application/json': { schema: schema(s) } });

type Access = 'agent' | 'simulation' | 'organization' | 'public';

interface Operation {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: string;
  id: string;
  summary: string;
  description?: string;
  access: Access;
  scope?: 'purchase:check' | 'purchase:read' | 'purchase:request';
  query?: Record<string, unknown>;
  idempotencyKey?: boolean;
  body?: { schema: unknown; required: boolean; limit: string };
  ok: { status: number; description: string; schema: unknown; serverTiming?: boolean; receipt?: 'decision' | 'replay' }[];
  errors: ErrorCodes;
}

const standard = '64 KB';
const webhooks = '16 KB';
const org = { 401: A401, 403: A403_ORG };
const orgRead = { ...org, 404: ['not_found'] };

const OPERATIONS: Operation[] = [
  {
    method: 'post',
    path: '/v1/purchase-requests',
    id: 'submitPurchaseRequest',
    summary: 'Ask whether the agent may make a purchase, and record the answer',
    description:
      'All three outcomes are 201: a REJECTED decision is an answer, not an error; branch on `decision.outcome`. ' +
      'The same Idempotency-Key with the same body replays the stored decision (200, `replayed: true`) and reserves nothing.',
    access: 'agent',
    scope: 'purchase:request',
    idempotencyKey: true,
    body: { schema: PurchaseRequestBody, required: true, limit: standard },
    ok: [
      { status: 201, description: 'Evaluated now.', schema: PurchaseDecisionResponse, serverTiming: true, receipt: 'decision' },
      { status: 200, description: 'Replayed for the same Idempotency-Key and body.', schema: PurchaseDecisionResponse, serverTiming: true, receipt: 'replay' },
    ],
    errors: { 400: ['invalid_request', 'malformed_json'], 401: A401, 403: A403_AGENT, 409: ['idempotency_key_reuse'], 413: ['payload_too_large'], 415: ['unsupported_media_type'] },
  },
  {
    method: 'get',
    path: '/v1/purchase-requests/{purchaseRequestId}',
    id: 'getPurchaseRequest',
    summary: 'Read back a purchase the calling credential submitted',
    description: 'Another agent\'s, another connection\'s or another organisation\'s purchase, and a malformed id, are the same 404. Reading writes nothing.',
    access: 'agent',
    scope: 'purchase:read',
    ok: [{ status: 200, description: 'The purchase and the decision in force.', schema: PurchaseReadbackResponse }],
    errors: { 401: A401, 403: A403_AGENT, 404: ['not_found'] },
  },
  {
    method: 'get',
    path: '/v1/purchase-requests/{purchaseRequestId}/receipts',
    id: 'listPurchaseReceipts',
    summary: 'The signed receipts of a purchase\'s decisions, oldest first',
    description:
      'Readable by whoever may read the purchase (GET /v1/purchase-requests/{purchaseRequestId}); anything else is the same 404. ' +
      'Each receipt verifies with a key of GET /.well-known/jwks.json and is a link of its organisation\'s hash chain (docs/integrate/receipts.md).',
    access: 'agent',
    scope: 'purchase:read',
    ok: [{ status: 200, description: 'The receipts.', schema: ReceiptList }],
    errors: { 401: A401, 403: A403_AGENT, 404: ['not_found'] },
  },
  {
    method: 'post',
    path: '/v1/simulations/current-policies',
    id: 'simulateCurrentPolicies',
    summary: 'Evaluate a purchase against the policies in force; writes nothing',
    description: 'An organization-scoped key must send `agentId` (issue code AGENT_ID_REQUIRED); an agent-bound key or a connection must omit it (AGENT_ID_NOT_PERMITTED).',
    access: 'simulation',
    scope: 'purchase:check',
    body: { schema: CurrentPoliciesSimulationBody, required: true, limit: standard },
    ok: [{ status: 200, description: 'What would happen.', schema: SimulationResponse, serverTiming: true }],
    errors: {
      400: ['invalid_request', 'malformed_json'],
      401: A401,
      403: ['connection_unauthorized', 'organization_suspended', 'insufficient_scope'],
      404: ['not_found'],
      413: ['payload_too_large'],
      415: ['unsupported_media_type'],
    },
  },
  ...(
    [
      ['draft-policy', 'simulateDraftPolicy', 'Evaluate a purchase against one DRAFT version as currently written', 'VERSION_NOT_DRAFT'],
      ['policy-version', 'simulatePolicyVersion', 'Evaluate a purchase against one ACTIVE or ARCHIVED version as frozen', 'VERSION_IS_DRAFT'],
    ] as const
  ).map(
    ([slug, id, summary, wrongKind]): Operation => ({
      method: 'post',
      path: `/v1/simulations/${slug}`,
      id,
      summary,
      description: `A version of the other kind is 400 invalid_request (issue code ${wrongKind}); an unknown version is 404.`,
      access: 'organization',
      body: { schema: VersionSimulationBody, required: true, limit: standard },
      ok: [{ status: 200, description: 'What would happen.', schema: SimulationResponse, serverTiming: true }],
      errors: { 400: ['invalid_request', 'malformed_json'], ...orgRead, 413: ['payload_too_large'], 415: ['unsupported_media_type'] },
    }),
  ),
  {
    method: 'post',
    path: '/v1/simulations/replay',
    id: 'replayPolicyVersion',
    summary: 'Replay a policy version over the purchases recorded in a range; writes nothing a decision reads',
    description:
      'An addition to the contract (docs/integrate/simulations.md#replay). Every purchase requested in [from, to) is decided again, in request order, ' +
      'against the policies of its time with this version (DRAFT, ACTIVE or ARCHIVED) in its policy\'s place, over budget windows replayed from their recorded state at `from`. ' +
      'At most REPLAY_INLINE_LIMIT purchases (5,000 by default) answer 200 with the summary and a page of the changes; a larger range answers 202 and runs as a job: ' +
      'follow `replay.id` with GET /v1/simulations/replay/{replayId}. A range that is empty or longer than 92 days is 400 (issue codes RANGE_EMPTY, RANGE_TOO_LONG).',
    access: 'organization',
    query: ReplayPageQuery,
    body: { schema: ReplayBody, required: true, limit: standard },
    ok: [
      { status: 200, description: 'Replayed in the request.', schema: ReplayResponse },
      { status: 202, description: 'Queued as a job.', schema: ReplayResponse },
    ],
    errors: { 400: ['invalid_request', 'malformed_json'], ...orgRead, 413: ['payload_too_large'], 415: ['unsupported_media_type'] },
  },
  {
    method: 'get',
    path: '/v1/simulations/replay/{replayId}',
    id: 'getReplay',
    summary: 'A replay run as a job: its progress, then its summary and changes',
    description: 'An addition to the contract. Changes are listed once the replay SUCCEEDED, in request order, keyset-paged by `cursor`.',
    access: 'organization',
    query: ReplayPageQuery,
    ok: [{ status: 200, description: 'The replay.', schema: ReplayResponse }],
    errors: { 400: ['invalid_request'], ...orgRead },
  },
  {
    method: 'get',
    path: '/v1/policies/{policyId}/versions/{versionId}/shadow',
    id: 'getPolicyVersionShadow',
    summary: 'What a draft in shadow decided beside the live decisions, over its lifetime',
    description:
      'An addition to the contract (docs/integrate/simulations.md#shadow). The same summary as a replay, over the purchases since the shadow started, with the changes keyset-paged. ' +
      'A version never in shadow reports `shadow: false` and nothing evaluated. Operators start and stop a shadow (PATCH /admin/policy-versions/{versionId}).',
    access: 'organization',
    query: ReplayPageQuery,
    ok: [{ status: 200, description: 'The shadow\'s report.', schema: ShadowResponse }],
    errors: { 400: ['invalid_request'], ...orgRead },
  },
  {
    method: 'get',
    path: '/v1/policies',
    id: 'listPolicies',
    summary: 'Policies, newest first',
    access: 'organization',
    query: PolicyListQuery,
    ok: [{ status: 200, description: 'One page of policies.', schema: PolicyList }],
    errors: { 400: ['invalid_request'], ...org },
  },
  {
    method: 'get',
    path: '/v1/policies/{policyId}',
    id: 'getPolicy',
    summary: 'One policy with its agents and versions',
    access: 'organization',
    ok: [{ status: 200, description: 'The policy.', schema: PolicyDetail }],
    errors: orgRead,
  },
  {
    method: 'get',
    path: '/v1/policies/{policyId}/versions/{versionId}',
    id: 'getPolicyVersion',
    summary: 'One policy version with its rules and merchant entries',
    access: 'organization',
    ok: [{ status: 200, description: 'The version.', schema: PolicyVersionDetail }],
    errors: orgRead,
  },
  {
    method: 'post',
    path: '/v1/policies/{policyId}/versions/{versionId}/validate',
    id: 'validatePolicyVersion',
    summary: 'Dry run of activation\'s own check; no body; writes nothing',
    description: 'Always 200 when the question can be answered, `valid: false` included. No body (an empty JSON object is tolerated). Every other write under /v1/policies is 403 api_key_not_permitted.',
    access: 'organization',
    body: { schema: ValidateBody, required: false, limit: standard },
    ok: [{ status: 200, description: 'The verdict.', schema: ValidationResult }],
    errors: { 400: ['invalid_request', 'malformed_json'], ...orgRead, 413: ['payload_too_large'], 415: ['unsupported_media_type'] },
  },
  {
    method: 'get',
    path: '/v1/agents',
    id: 'listAgents',
    summary: 'All agents of the organisation (unpaginated, read-only)',
    access: 'organization',
    ok: [{ status: 200, description: 'The agents.', schema: AgentList }],
    errors: org,
  },
  {
    method: 'get',
    path: '/v1/webhooks',
    id: 'listWebhookEndpoints',
    summary: 'Webhook endpoints, revoked ones included (unpaginated, never a secret)',
    access: 'organization',
    ok: [{ status: 200, description: 'The endpoints.', schema: WebhookEndpointList }],
    errors: org,
  },
  {
    method: 'post',
    path: '/v1/webhooks',
    id: 'createWebhookEndpoint',
    summary: 'Register an HTTPS endpoint; its signing secret is shown once',
    access: 'organization',
    body: { schema: CreateWebhookBody, required: true, limit: webhooks },
    ok: [{ status: 201, description: 'The endpoint and its secret.', schema: IssuedWebhookEndpoint }],
    errors: {
      400: ['invalid_request', 'malformed_json', 'webhook_url_not_permitted'],
      ...org,
      409: ['webhook_limit_reached'],
      413: ['payload_too_large'],
      415: ['unsupported_media_type'],
      503: ['webhook_not_configured'],
    },
  },
  {
    method: 'get',
    path: '/v1/webhooks/{webhookId}',
    id: 'getWebhookEndpoint',
    summary: 'One webhook endpoint',
    access: 'organization',
    ok: [{ status: 200, description: 'The endpoint.', schema: WebhookEndpoint }],
    errors: orgRead,
  },
  {
    method: 'patch',
    path: '/v1/webhooks/{webhookId}',
    id: 'updateWebhookEndpoint',
    summary: 'Change an endpoint (at least one field); never its secret',
    access: 'organization',
    body: { schema: UpdateWebhookBody, required: true, limit: webhooks },
    ok: [{ status: 200, description: 'The endpoint.', schema: WebhookEndpoint }],
    errors: {
      400: ['invalid_request', 'malformed_json', 'webhook_url_not_permitted'],
      ...orgRead,
      409: ['webhook_endpoint_revoked'],
      413: ['payload_too_large'],
      415: ['unsupported_media_type'],
    },
  },
  {
    method: 'delete',
    path: '/v1/webhooks/{webhookId}',
    id: 'revokeWebhookEndpoint',
    summary: 'Revoke an endpoint for good (200 with the REVOKED endpoint)',
    description: 'No body (an empty JSON object is tolerated; a field is refused).',
    access: 'organization',
    body: { schema: TestWebhookBody, required: false, limit: webhooks },
    ok: [{ status: 200, description: 'The revoked endpoint.', schema: WebhookEndpoint }],
    errors: { 400: ['invalid_request', 'malformed_json'], ...orgRead, 409: ['webhook_endpoint_revoked'], 413: ['payload_too_large'], 415: ['unsupported_media_type'] },
  },
  {
    method: 'get',
    path: '/v1/webhooks/{webhookId}/deliveries',
    id: 'listWebhookDeliveries',
    summary: 'Recent deliveries to an endpoint, newest first',
    access: 'organization',
    query: DeliveriesQuery,
    ok: [{ status: 200, description: 'The deliveries.', schema: WebhookDeliveryList }],
    errors: { 400: ['invalid_request'], ...orgRead },
  },
  {
    method: 'post',
    path: '/v1/webhooks/{webhookId}/rotate-secret',
    id: 'rotateWebhookSecret',
    summary: 'Issue a new signing secret (shown once); the old one keeps signing for 24 hours unless retired now',
    access: 'organization',
    body: { schema: RotateSecretBody, required: false, limit: webhooks },
    ok: [{ status: 200, description: 'The endpoint and its new secret.', schema: IssuedWebhookEndpoint }],
    errors: {
      400: ['invalid_request', 'malformed_json'],
      ...orgRead,
      409: ['webhook_endpoint_revoked'],
      413: ['payload_too_large'],
      415: ['unsupported_media_type'],
      503: ['webhook_not_configured'],
    },
  },
  {
    method: 'post',
    path: '/v1/webhooks/{webhookId}/test',
    id: 'sendWebhookTest',
    summary: 'Queue a real, signed webhook.test event to this endpoint',
    description: 'No body (an empty JSON object is tolerated). Delivered whatever the subscriptions, recorded and retried like any delivery.',
    access: 'organization',
    body: { schema: TestWebhookBody, required: false, limit: webhooks },
    ok: [{ status: 202, description: 'Queued.', schema: TestEventQueued }],
    errors: {
      400: ['invalid_request', 'malformed_json'],
      ...orgRead,
      409: ['webhook_endpoint_revoked'],
      413: ['payload_too_large'],
      415: ['unsupported_media_type'],
      503: ['webhook_not_configured'],
    },
  },
  {
    method: 'get',
    path: '/v1/openapi.json',
    id: 'getOpenApiDocument',
    summary: 'This document, with this deployment\'s URLs; no credential needed',
    access: 'public',
    ok: [{ status: 200, description: 'The OpenAPI 3.1 document.', schema: { type: 'object' } }],
    errors: {},
  },
  {
    method: 'get',
    path: '/.well-known/jwks.json',
    id: 'getSigningKeys',
    summary: 'The public keys decision receipts are signed with; no credential needed',
    description: 'Ed25519 keys (RFC 8037), newest first; retired keys stay listed so that old receipts keep verifying. Never a private part.',
    access: 'public',
    ok: [{ status: 200, description: 'The JSON Web Key Set.', schema: Jwks }],
    errors: {},
  },
];

const PATH_PARAMETERS: Record<string, string> = {
  purchaseRequestId: 'The purchase request.',
  policyId: 'The policy.',
  versionId: 'The policy version.',
  webhookId: 'The webhook endpoint.',
};

function security(op: Operation): Json {
  switch (op.access) {
    case 'public':
      return [];
    case 'organization':
      return [{ apiKey: [] }];
    default:
      return [{ apiKey: [] }, { connectionToken: [op.scope!] }];
  }
}

/** Error responses are shared components, one per status and list of codes. */
const errorResponses: JsonObject = {};

function errorResponse(status: number, codes: readonly string[]): Json {
  const name = `${status}-${codes.join('-')}`;
  errorResponses[name] ??= errorResponseBody(status, codes);
  return { $ref: `#/components/responses/${name}` };
}

function errorResponseBody(status: number, codes: readonly string[]): Json {
  const body = plain(ErrorBody) as JsonObject;
  const error = (body.properties as JsonObject).error as JsonObject;
  (error.properties as JsonObject).code = { type: 'string', enum: [...codes] };
  return {
    description: `${ERROR_DESCRIPTIONS[status]} Codes: ${codes.join(', ')}.`,
    headers: {
      'X-Request-Id': { $ref: '#/components/headers/RequestId' },
      ...(status === 401
        ? { 'WWW-Authenticate': { description: '`Bearer` when no credential was sent, `Bearer error="invalid_token"` when the one sent was refused (RFC 6750 3).', required: true, schema: { type: 'string' } } }
        : {}),
      ...(status === 403 && (codes.includes('insufficient_scope') || codes.includes('connection_unauthorized'))
        ? { 'WWW-Authenticate': { description: 'With `insufficient_scope`: `Bearer error="insufficient_scope", scope="…"`; with `connection_unauthorized`: `Bearer error="invalid_token"` (RFC 6750 3).', schema: { type: 'string' } } }
        : {}),
      // A command that could not commit in time (README: Decisions where the contract is silent).
      ...(status === 503 && codes.includes('internal_error')
        ? { 'Retry-After': { description: 'Seconds to wait before retrying, with internal_error (1).', schema: { type: 'integer', minimum: 0 } } }
        : {}),
    },
    content: { 'application/json': { schema: refer(body) } },
  };
}

function operation(op: Operation): JsonObject {
  const parameters: Json[] = [];
  for (const name of op.path.match(/\{(\w+)\}/g) ?? []) {
    const key = name.slice(1, -1);
    parameters.push({ name: key, in: 'path', required: true, description: `${PATH_PARAMETERS[key]} A malformed id is 404, like an unknown one.`, schema: { $ref: '#/components/schemas/Uuid' } });
  }
  for (const [name, s] of Object.entries(op.query ?? {})) {
    const { description, ...rest } = plain(s) as JsonObject;
    parameters.push({ name, in: 'query', required: false, ...(description ? { description } : {}), schema: refer(rest) });
  }
  if (op.idempotencyKey) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: '1..255 printable ASCII characters, scoped to the submitting credential, kept 24 hours.',
      schema: { type: 'string', pattern: IDEMPOTENCY_KEY.source },
    });
  }
  const responses: JsonObject = {};
  for (const ok of op.ok) {
    const headers: JsonObject = { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } };
    if (ok.serverTiming) headers['Server-Timing'] = { $ref: '#/components/headers/ServerTiming' };
    if (ok.receipt) {
      headers['Decision-Receipt'] = {
        description:
          'The decision\'s signed receipt, a compact JWS (docs/integrate/receipts.md)' +
          (ok.receipt === 'replay' ? '; the same as on the 201 (absent for a decision recorded before receipts existed)' : '') +
          `; absent when it is longer than ${RECEIPT_HEADER_MAX} characters (a decision that considered hundreds of policy versions): ` +
          'GET /v1/purchase-requests/{purchaseRequestId}/receipts lists it.',
        required: false,
        schema: { type: 'string' },
      };
    }
    responses[String(ok.status)] = { description: ok.description, headers, content: json(ok.schema) };
  }
  // Unknown query parameters are refused on every operation (README decisions table).
  const errors = op.access === 'public' ? op.errors : { 400: ['invalid_request'], ...op.errors };
  // Every operation that touches the store answers 503 internal_error (Retry-After) when a transaction
  // cannot commit within its deadline and retry budget (README: Production on MongoDB).
  const unavailable = op.access === 'public' ? {} : { 503: [...((errors as Record<number, readonly string[]>)[503] ?? []), 'internal_error'] };
  for (const [status, codes] of Object.entries({ ...errors, 500: ['internal_error'], ...unavailable })) {
    responses[status] = errorResponse(Number(status), codes as readonly string[]);
  }
  return {
    operationId: op.id,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    ...(op.access === 'public' ? { security: [] } : { security: security(op) }),
    ...(parameters.length ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: op.body.required, description: `JSON, at most ${op.body.limit}. Unknown fields are refused.`, content: json(op.body.schema) } }
      : {}),
    responses,
  };
}

const EVENT_SUMMARIES: Record<(typeof DELIVERABLE_EVENT_TYPES)[number], string> = {
  'purchase.approval_required': 'A purchase needs a person\'s approval before it can go ahead',
  'purchase.approved': 'A purchase was approved, by policies or by a person',
  'purchase.rejected': 'A purchase was refused, by policies or by a person',
  'purchase.approval_expired': 'Nobody answered in time, so the purchase was refused',
  'budget.threshold_reached': 'Spending under a policy passed 80% of its limit',
  'budget.exhausted': 'A policy used its full limit; purchases under it are being refused',
  'agent.disabled': 'An agent was switched off',
  'agent.archived': 'An agent was archived',
  'connection.created': 'An AI assistant was connected to an agent',
  'connection.revoked': 'An assistant\'s access to an agent was withdrawn',
  'security.connection_token_reuse_detected': 'A connected application reused a token it should not have; its access was withdrawn',
  'webhook.test': 'Sent by POST /v1/webhooks/{webhookId}/test; deliverable to any endpoint, not subscribable',
};

const WEBHOOK_HEADERS: Json[] = [
  { name: 'Service-Webhook-Id', in: 'header', required: true, description: 'The event id (envelope `id`): the same on every retry and endpoint; deduplicate on it.', schema: { type: 'string', format: 'uuid' } },
  { name: 'Service-Webhook-Timestamp', in: 'header', required: true, description: 'Unix seconds of this attempt; refuse a delivery more than 300 s from your clock.', schema: { type: 'string', pattern: '^\\d+$' } },
  {
    name: 'Service-Webhook-Signature',
    in: 'header',
    required: true,
    description: 'Comma-separated `v1=<base64url(HMAC-SHA256(secret, "v1:" + timestamp + ":" + raw body))>` entries (two for 24 hours after a rotation); accept if any matches.',
    schema: { type: 'string' },
  },
  { name: 'Service-Webhook-Attempt', in: 'header', required: true, description: 'The attempt number, 1..7.', schema: { type: 'string', pattern: '^[1-9]\\d*$' } },
];

function webhookEvents(): JsonObject {
  const events: JsonObject = {};
  for (const type of DELIVERABLE_EVENT_TYPES) {
    events[type] = {
      post: {
        operationId: `event.${type}`,
        summary: EVENT_SUMMARIES[type],
        parameters: WEBHOOK_HEADERS,
        requestBody: { required: true, content: json(eventEnvelope(type, EventData[type])) },
        responses: {
          '2XX': { description: 'Received. Answer quickly and do the work afterwards.' },
          default: { description: '408, 429, 5xx and network failures are retried (7 attempts over about 24 hours); 3xx and other 4xx drop the event for this endpoint.' },
        },
      },
    };
  }
  return events;
}

export interface DocumentUrls {
  baseUrl: string;
  authUrl: string;
}

export function openApiDocument(urls: DocumentUrls = { baseUrl: 'http://localhost:3000', authUrl: 'http://localhost:3000' }): JsonObject {
  const paths: JsonObject = {};
  for (const op of OPERATIONS) {
    const item = (paths[op.path] ??= {}) as JsonObject;
    item[op.method] = operation(op);
  }
  const schemas: JsonObject = {};
  for (const [name, s] of Object.entries(COMPONENTS)) schemas[name] = refer(plain(s), name);
  const responses = Object.fromEntries(Object.entries(errorResponses).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: '3.1.1',
    info: {
      title: 'Spend control for software agents',
      version: '1',
      summary: 'Ask whether a purchase is allowed; read back purchases, policies, agents; manage signed webhooks.',
      description:
        'Every request carries `Authorization: Bearer <credential>`: an API key (`cmp_live_…`, bound to an agent or organization-scoped) or a connection\'s OAuth access token (`cmp_oat_…`). ' +
        'Clients ignore unknown response fields, enum values and event types: all may be added at any time. Amounts are whole minor units as decimal strings; no currency conversion ever happens.',
    },
    servers: [{ url: urls.baseUrl }],
    security: [{ apiKey: [] }],
    paths,
    webhooks: webhookEvents(),
    components: {
      schemas,
      responses,
      headers: {
        RequestId: { description: 'The request\'s id (echoes a well-formed X-Request-Id sent by the client); it appears in every log line.', required: true, schema: { type: 'string' } },
        ServerTiming: { description: 'W3C Server-Timing: `engine`, `store` and `total` durations in milliseconds.', required: true, schema: { type: 'string' } },
      },
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'cmp_live_<12>_<43>',
          description: 'An API key. Bound to an agent: submit and read back its own purchases, simulate as itself. Organization-scoped: everything else, never purchases.',
        },
        connectionToken: {
          type: 'oauth2',
          description:
            'A connection: one person\'s grant letting one application act as one existing agent. Authorization code with PKCE (S256) only; `resource` must be `{BASE_URL}/mcp`. ' +
            'Access tokens (`cmp_oat_…`) last 60 minutes; refresh tokens rotate on every use.',
          flows: {
            authorizationCode: {
              authorizationUrl: `${urls.authUrl}/oauth/authorize`,
              tokenUrl: `${urls.authUrl}/oauth/token`,
              refreshUrl: `${urls.authUrl}/oauth/token`,
              scopes: {
                'purchase:check': 'Check whether a purchase would be allowed (POST /v1/simulations/current-policies)',
                'purchase:read': 'See what happened to purchases it requested (GET /v1/purchase-requests/{id})',
                'purchase:request': 'Request a purchase (POST /v1/purchase-requests)',
              },
            },
          },
        },
      },
    },
    'x-webhook-api-version': WEBHOOK_API_VERSION,
  } as JsonObject;
}
