// The MCP tools (docs/reference/contract.md §4.19), registered on a fresh McpServer for each HTTP request, for one
// connection. Only the tools its scopes allow are registered, so only those are listed. Each tool
// has an input and an output schema; every failure is an MCP tool error (`isError: true`) whose
// text is docs/reference/contract.md §7's error body, so an assistant (or its developer) can branch on `error.code`.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import Type, { type TObject } from 'typebox';
import type { AppDeps } from '../app-deps.ts';
import type { Scope } from '../identity/auth.ts';
import { ApiError, invalidRequest, type ErrorIssue } from '../http/errors.ts';
import { storeFailure } from '../http/store-failure.ts';
import { compile } from '../http/validate.ts';
import { isUuid } from '../ids.ts';
import { writtenAsInteger } from '../json.ts';
import type { OrganizationDoc } from '../store/collections.ts';
import { CurrentPoliciesSimulationBody, IDEMPOTENCY_KEY, PurchaseRequestBody } from '../../schemas/purchases.ts';
import { parsePurchase, metadataIssues } from '../purchases/input.ts';
import { submitPurchase } from '../purchases/submit.ts';
import { getPurchase } from '../purchases/read.ts';
import { receiptsOfPurchase } from '../receipts/read.ts';
import { simulateCurrentPolicies } from '../simulations/simulate.ts';
import type { ConnectionPrincipal } from '../identity/connections/resolve-token.ts';
import { LIST_LIMIT_MAX, LIST_LIMIT_MIN, listConnectionPurchases } from './list-purchases.ts';
import { TOOL_SCOPES } from './tool-scopes.ts';

const submissionBody = compile(PurchaseRequestBody);
// A connection checks as its own agent: /v1's agentId is no field of check_purchase.
const CheckArguments = Type.Omit(CurrentPoliciesSimulationBody, ['agentId'], { additionalProperties: false });
const simulationBody = compile(CheckArguments);

// ---- schemas ---------------------------------------------------------------------------------

/**
 * Tool arguments listed with a TypeBox schema's JSON Schema and judged by it, as on /v1: the purchase fields
 * by /v1's own schema and rules (parsePurchase), the others by validator.parse. So an assistant gets /v1's
 * issue codes (REQUIRED, TOO_LONG, INVALID_TYPE, OUT_OF_RANGE, AMOUNT_TOO_LARGE...) where zod would say
 * INVALID_ARGUMENT, a code /v1 does not have, for each (and its int() stops at 2^53-1). zod lets unknown
 * fields through too, so that the schema lists them as UNKNOWN_FIELD with every other problem, as /v1 does.
 */
function listedAs(schema: TObject, descriptions: Record<string, string>, more: Record<string, z.ZodType> = {}) {
  if ((schema as { additionalProperties?: unknown }).additionalProperties !== false) throw new Error('a tool schema refuses unknown fields');
  const fields = Object.keys(descriptions);
  const listed = (field: string) => JSON.parse(JSON.stringify(schema.properties[field])) as Record<string, unknown>;
  const shape = Object.fromEntries(fields.map((f) => [f, z.unknown().optional().meta(listed(f)).describe(descriptions[f])]));
  const required = schema.required?.filter((f) => fields.includes(f)) ?? [];
  return z.looseObject({ ...shape, ...more }).meta({ additionalProperties: false, ...(required.length > 0 ? { required } : {}) });
}

const PURCHASE_FIELDS = {
  merchant: 'Who would be paid, named as a person would name them, e.g. "Staples" or "Deutsche Bahn".',
  amountMinor: 'The amount in whole minor units of the currency, as a decimal string: "1999" means 19.99 EUR, "500" means 500 JPY. Never a decimal fraction.',
  reason: 'Why the agent wants to make this purchase, in a sentence a person reviewing it would understand.',
  currency: 'ISO 4217 currency code such as "EUR"; omit it to use the organisation\'s own currency. No conversion is ever made.',
  category: 'Optional category, e.g. "office-supplies".',
  merchantDomain: 'Optional web domain of the merchant, recorded as evidence only.',
};

const ListArguments = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: LIST_LIMIT_MIN, maximum: LIST_LIMIT_MAX })), cursor: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])) },
  { additionalProperties: false },
);
const GetArguments = Type.Object({ purchaseRequestId: Type.String({ maxLength: 100 }) }, { additionalProperties: false });
const listArguments = compile(ListArguments);
const getArguments = compile(GetArguments);

const Decision = z.looseObject({
  id: z.string(),
  outcome: z.string().describe('APPROVED, REJECTED or REQUIRES_APPROVAL (more values may be added).'),
  reasonCodes: z.array(z.string()),
  explanation: z.string(),
  evaluatedAt: z.string(),
  engineVersion: z.string(),
});

const Readback = z.looseObject({
  id: z.string(),
  status: z.string().describe('EVALUATING, PENDING_APPROVAL, APPROVED, REJECTED, EXPIRED or CANCELLED.'),
  merchant: z.string(),
  reason: z.string(),
  amountMinor: z.string(),
  currency: z.string(),
  requestedAt: z.string(),
  agent: z.looseObject({ id: z.string(), name: z.string(), status: z.string() }),
  decision: Decision.extend({ kind: z.string() }).nullable().optional(),
  approval: z.looseObject({ state: z.string(), isPending: z.boolean(), expiresAt: z.string() }).nullable().optional(),
});

const SubmissionOutput = z.looseObject({
  purchaseRequest: z.looseObject({ id: z.string(), status: z.string(), amountMinor: z.string(), currency: z.string() }),
  decision: Decision,
  approval: z.looseObject({ required: z.boolean(), expiresAt: z.string().nullable() }),
  policyVersions: z.array(z.looseObject({ policyVersionId: z.string(), applicabilityReason: z.string() })),
  ruleEvaluations: z.array(z.looseObject({})),
  replayed: z.boolean(),
  /** The decision's signed receipt (docs/integrate/receipts.md); null only when replaying a decision recorded before receipts. */
  receipt: z.string().nullable(),
});

const SimulationOutput = z.looseObject({
  simulation: z.looseObject({ isSimulation: z.literal(true), mode: z.string(), disclaimer: z.string(), simulatedAt: z.string() }),
  simulatedDecision: z.looseObject({ outcome: z.string(), wouldRequireApproval: z.boolean(), reasonCodes: z.array(z.string()), explanation: z.string() }),
  ruleEvaluations: z.array(z.looseObject({})),
  budgets: z.array(z.looseObject({})),
});

// ---- results ---------------------------------------------------------------------------------

const plain = <T>(value: T): Record<string, unknown> => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;

export function toolResult(value: unknown): CallToolResult {
  const structured = plain(value);
  return { structuredContent: structured, content: [{ type: 'text', text: JSON.stringify(structured) }] };
}

export function toolError(error: ApiError): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(error.toBody()) }] };
}

/**
 * The SDK reports schema failures as one message, a line per problem ("... at amountMinor",
 * 'Unrecognized key: "x"'); turn each line into an ErrorIssue (docs/reference/contract.md §7; docs/reference/decisions.md's UNKNOWN_FIELD).
 */
export function sdkIssues(message: string): ErrorIssue[] {
  const detail = message.replace(/^.*?Invalid arguments for tool \S+: /s, '');
  const issues = detail.split('\n').filter((l) => l.trim() !== '').flatMap((line): ErrorIssue[] => {
    const unknown = /^Unrecognized keys?: (.+)$/.exec(line);
    if (unknown) return [...unknown[1].matchAll(/"([^"]+)"/g)].map((m) => ({ path: m[1], code: 'UNKNOWN_FIELD', message: `Unknown field "${m[1]}".` }));
    const at = / at (\S+)$/.exec(line);
    return [{ path: at ? at[1] : '', code: 'INVALID_ARGUMENT', message: line }];
  });
  return issues.length > 0 ? issues : [{ path: '', code: 'INVALID_ARGUMENT', message }];
}

/**
 * The SDK's zod parsing copies objects key by key, so a `__proto__` key becomes a prototype and
 * vanishes: at the top level in its own tools/call parse, inside metadata in the tool's schema. The
 * raw arguments, as parsed from the request body, are judged first by /v1's rules for it (docs/reference/decisions.md):
 * an unknown field (every tool's schema is closed), and a reserved key inside metadata; and an amount
 * not written as an integer.
 */
export function rawArgumentsError(name: string, args: unknown): ApiError | null {
  if (!Object.hasOwn(TOOL_SCOPES, name) || args === null || typeof args !== 'object') return null;
  const issues: ErrorIssue[] = Object.hasOwn(args, '__proto__') ? [{ path: '__proto__', code: 'UNKNOWN_FIELD', message: 'Unknown field "__proto__".' }] : [];
  // The copy also loses what parseJson knew of how an amount was written (0.99999999999999999 is 1 once parsed).
  if (typeof (args as { amountMinor?: unknown }).amountMinor === 'number' && !writtenAsInteger(args, 'amountMinor')) {
    issues.push({ path: 'amountMinor', code: 'AMOUNT_NOT_INTEGER', message: 'amountMinor is a whole number of minor units.' });
  }
  const { metadata } = args as { metadata?: unknown };
  if (name === 'request_purchase' && metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata)) issues.push(...metadataIssues(metadata, 'metadata'));
  return issues.length > 0 ? invalidRequest(issues, 'The tool arguments are not valid.') : null;
}

// ---- the server ------------------------------------------------------------------------------

export interface ToolContext {
  deps: AppDeps;
  principal: ConnectionPrincipal;
  organization: OrganizationDoc;
}

export function buildMcpServer(ctx: ToolContext): McpServer {
  const { deps, principal, organization } = ctx;
  const server = new McpServer(
    { name: 'spend-control', title: 'Spend control', version: '1.0.0' },
    {
      capabilities: { tools: {} },
      instructions:
        `You act as the agent chosen when this connection was made. Before buying anything, call check_purchase; ` +
        `to actually ask for the purchase, call request_purchase and follow decision.outcome: APPROVED means go ahead, ` +
        `REJECTED means do not buy (explain decision.explanation to the person), REQUIRES_APPROVAL means a person must decide: ` +
        `check later with get_purchase. Amounts are whole minor units as strings ("1999" = 19.99).`,
    },
  );

  // Everything a tool does goes through here: docs/reference/contract.md errors become tool errors, anything else is
  // logged and reported as internal_error.
  const run = async (work: () => Promise<unknown>): Promise<CallToolResult> => {
    try {
      return toolResult(await work());
    } catch (err) {
      // A store busy, failing over or full: the same answer and log as on /v1 (src/http/store-failure.ts).
      const failure = storeFailure(deps, err, { surface: 'mcp' });
      if (failure) return toolError(failure);
      if (err instanceof ApiError) return toolError(err);
      deps.log.error('mcp tool failed', { err: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err) });
      return toolError(new ApiError(500, 'internal_error', 'Something went wrong on our side. It is safe to retry request_purchase with the same idempotencyKey.'));
    }
  };
  // Input the SDK itself refuses is reported in docs/reference/contract.md's shape as well (listedAs leaves it little: arguments that are no object are screened by serve.ts).
  (server as unknown as { createToolError: (message: string) => CallToolResult }).createToolError = (message: string) =>
    /Input validation error/.test(message)
      ? toolError(new ApiError(400, 'invalid_request', 'The tool arguments are not valid.', sdkIssues(message)))
      : toolError(new ApiError(404, 'not_found', message));

  const allowed = (scope: Scope) => principal.scopes.includes(scope);

  if (allowed('purchase:read')) {
    server.registerTool(
      'list_purchases',
      {
        title: 'List my purchases',
        description:
          'Lists the purchases this connection requested, and those a person made for its agent on the dashboard, newest first, with their current status and decision. ' +
          'Returns {purchases, nextCursor, hasMore}; when hasMore is true, call again with cursor set to nextCursor for older ones.',
        inputSchema: listedAs(ListArguments, {
          limit: `How many purchases to return, ${LIST_LIMIT_MIN} to ${LIST_LIMIT_MAX} (default 20).`,
          cursor: 'The nextCursor of a previous call, to continue after it; omit for the newest purchases.',
        }),
        outputSchema: z.strictObject({ purchases: z.array(Readback), nextCursor: z.string().nullable(), hasMore: z.boolean() }),
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      (args) => run(() => listConnectionPurchases(deps.store.db, principal, listArguments.parse(args))),
    );
    server.registerTool(
      'get_purchase',
      {
        title: 'Get one purchase',
        description:
          'Reads one purchase this connection requested, by its id (purchaseRequest.id from request_purchase): status, decision in force, and approval. ' +
          'Use it to learn whether a purchase that REQUIRES_APPROVAL has been approved. Purchases requested by anyone else are not found. ' +
          '`receipts` are the signed receipts of its decisions, oldest first: a person\'s answer adds one.',
        inputSchema: listedAs(GetArguments, { purchaseRequestId: 'The purchase request id (a UUID).' }),
        outputSchema: z.strictObject({ purchase: Readback, receipts: z.array(z.strictObject({ seq: z.number().int(), receipt: z.string() })) }),
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      (args) =>
        run(async () => {
          const { purchaseRequestId } = getArguments.parse(args);
          // A malformed id is the same 404 as an unknown one (docs/reference/contract.md §7).
          if (!isUuid(purchaseRequestId)) throw new ApiError(404, 'not_found', 'No such purchase request.');
          const { purchase } = await getPurchase(deps.store.db, principal, purchaseRequestId.toLowerCase());
          // The decisions' receipts (docs/integrate/receipts.md), as GET /v1/purchase-requests/{id}/receipts gives them.
          return { purchase, ...(await receiptsOfPurchase(deps.store.db, principal.organizationId, purchase.id)) };
        }),
    );
  }

  if (allowed('purchase:check')) {
    server.registerTool(
      'check_purchase',
      {
        title: 'Check a purchase (simulation)',
        description:
          'Asks whether a purchase would be allowed by the policies in force right now, without recording anything or reserving budget. ' +
          'simulatedDecision.outcome is APPROVED, REJECTED or REQUIRES_APPROVAL, with reasonCodes and an explanation. A real request may still be decided differently later.',
        inputSchema: listedAs(CheckArguments, PURCHASE_FIELDS),
        outputSchema: SimulationOutput,
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      (args) =>
        run(async () => {
          const { purchase } = parsePurchase(simulationBody, args, organization.currency);
          return simulateCurrentPolicies(deps, organization, principal.agentId, purchase);
        }),
    );
  }

  if (allowed('purchase:request')) {
    server.registerTool(
      'request_purchase',
      {
        title: 'Request a purchase',
        description:
          'Requests a real purchase as this connection\'s agent. The policies decide at once: decision.outcome APPROVED (go ahead), REJECTED (do not buy), ' +
          'or REQUIRES_APPROVAL (a person must approve first; check later with get_purchase). The request and its decision are recorded, and an approved amount counts against budgets. ' +
          'Pass an idempotencyKey to retry safely: the same key with the same details returns the first decision instead of requesting twice. ' +
          '`receipt` is the decision\'s signed receipt (a compact JWS anyone can check against the service\'s /.well-known/jwks.json).',
        inputSchema: listedAs(PurchaseRequestBody, { ...PURCHASE_FIELDS, metadata: 'Optional details recorded with the request (order number, cart id...). No policy reads them.' }, {
          idempotencyKey: z
            .unknown()
            .optional()
            .meta({ type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY.source })
            .describe('Optional key (1 to 255 printable ASCII characters) making retries safe.'),
        }),
        outputSchema: SubmissionOutput,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      (args) =>
        run(async () => {
          const { idempotencyKey, ...fields } = args;
          const key = (): ErrorIssue[] =>
            idempotencyKey === undefined || (typeof idempotencyKey === 'string' && IDEMPOTENCY_KEY.test(idempotencyKey))
              ? []
              : [{ path: 'idempotencyKey', code: 'INVALID_IDEMPOTENCY_KEY', message: 'idempotencyKey is 1 to 255 printable ASCII characters.' }];
          const { body, purchase } = parsePurchase(submissionBody, fields, organization.currency, key);
          const result = await submitPurchase(deps, {
            organization,
            principal,
            purchase,
            body: body as Record<string, unknown>,
            rawBody: JSON.stringify(fields),
            idempotencyKey: (idempotencyKey as string | undefined) ?? null,
            origin: 'MCP',
          });
          return { ...result.body, receipt: result.receipt ?? null };
        }),
    );
  }
  return server;
}
