// One MCP exchange (routes.ts step 5): a fresh McpServer and stateless Streamable HTTP transport of the
// official SDK for the request, bridged into Koa, with the tools/call answers the SDK would get wrong
// given first. Loaded by routes.ts with the first MCP call, so that a process that serves none never
// loads the SDK.
import type { Context } from 'koa';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ClientRequestSchema, ErrorCode, isJSONRPCRequest, JSONRPCMessageSchema, JSONRPCRequestSchema, RequestIdSchema, type JSONRPCMessage, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { AppDeps } from '../app-deps.ts';
import type { OrganizationDoc } from '../store/collections.ts';
import type { ConnectionPrincipal } from '../identity/connections/resolve-token.ts';
import { buildMcpServer, rawArgumentsError, toolError } from './tools.ts';
import { TOOL_SCOPES } from './tool-scopes.ts';

/** Answers the request's JSON-RPC body (parsed in ctx.state.body) for an authenticated connection. */
export async function serveMcp(ctx: Context, deps: AppDeps, principal: ConnectionPrincipal, organization: OrganizationDoc): Promise<void> {
  const body: unknown = ctx.state.body;
  // A message whose params alone the SDK's schema refuses reaches the transport with empty params (which it
  // would otherwise answer -32700 for the whole body), and is answered -32602 by the screen (invalidMeta).
  const handed = Array.isArray(body) ? body.map(withValidParams) : withValidParams(body);
  const invalid = invalidRequest(handed);
  if (invalid) {
    ctx.status = 400;
    ctx.body = invalid;
    return;
  }
  const server = buildMcpServer({ deps, principal, organization });
  // Stateless (no session id) and plain JSON responses: every call is one HTTP exchange.
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  ctx.res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  screenToolCalls(transport, body, deps);
  ctx.respond = false;
  await transport.handleRequest(ctx.req, ctx.res, handed);
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Whether `message` is a JSON-RPC request or notification but for its params, an object the SDK's
 * message schema refuses: a `_meta` that is not an object, or whose `progressToken` is neither a string
 * nor a number (MCP 2025-11-25, General fields: `_meta`). That is -32602 Invalid params (JSON-RPC 2.0
 * section 5.1), not -32600: the request itself is well formed.
 */
function paramsRefused(message: unknown): message is Record<string, unknown> & { params: Record<string, unknown> } {
  if (!isRecord(message) || !isRecord(message.params)) return false;
  return !JSONRPCMessageSchema.safeParse(message).success && JSONRPCMessageSchema.safeParse({ ...message, params: {} }).success;
}

const withValidParams = (message: unknown): unknown => (paramsRefused(message) ? { ...message, params: {} } : message);

/** The answer to a message paramsRefused: -32602 for a request; a notification gets none (JSON-RPC 2.0 section 4.1). */
function invalidMeta(message: JSONRPCMessage, raw: unknown): JSONRPCMessage | 'ignore' | null {
  if (!paramsRefused(raw)) return null;
  if (!isJSONRPCRequest(message)) return 'ignore';
  const refused = JSONRPCRequestSchema.safeParse(raw);
  return invalidParams(message, refused.success ? [] : refused.error.issues, '_meta, when sent, is an object, and its progressToken a string or a number (MCP 2025-11-25, General fields).');
}

/**
 * JSON that is not JSON-RPC 2.0 messages, answered -32600 Invalid Request (JSON-RPC 2.0 section 5.1):
 * the SDK's transport answers -32700 Parse error for any body its message schema refuses, though the
 * body parsed (text that does not is malformed_json before this), and 202 with nothing for an empty
 * batch, which JSON-RPC 2.0 section 6 calls an invalid request. The id is the message's when it has one.
 */
function invalidRequest(body: unknown): JSONRPCMessage | null {
  const batch = Array.isArray(body);
  const messages: unknown[] = batch ? body : [body];
  const invalid = (what: string, id: unknown = null): JSONRPCMessage => {
    const known = RequestIdSchema.safeParse(id);
    return { jsonrpc: '2.0', id: known.success ? known.data : null, error: { code: ErrorCode.InvalidRequest, message: `Invalid Request: ${what}.` } } as JSONRPCMessage;
  };
  if (messages.length === 0) return invalid('the batch is empty');
  const i = messages.findIndex((message) => !JSONRPCMessageSchema.safeParse(message).success);
  if (i === -1) return batch ? repeatedId(messages as JSONRPCMessage[], invalid) : null;
  const what = `${batch ? `message ${i + 1} of the batch` : 'the body'} is not a JSON-RPC 2.0 request, notification or response`;
  // A batch gets one answer for all its messages: no single id is its.
  return invalid(what, batch ? null : (messages[i] as { id?: unknown } | null)?.id);
}

/**
 * Two requests of a batch with one id: the transport answers by id, so only one of them was answered,
 * though both ran (two purchases, one answer). Refused before anything runs (JSON-RPC 2.0 section 6
 * matches answers to requests by id).
 */
function repeatedId(messages: JSONRPCMessage[], invalid: (what: string) => JSONRPCMessage): JSONRPCMessage | null {
  const ids = new Set<unknown>();
  for (const [i, message] of messages.entries()) {
    if (!isJSONRPCRequest(message)) continue;
    if (ids.has(message.id)) return invalid(`message ${i + 1} of the batch repeats the id of an earlier request`);
    ids.add(message.id);
  }
  return null;
}

/**
 * The answer to a tools/call the SDK's server would get wrong, if any:
 * - params its own schema refuses (`arguments: null`, a `name` that is not a string): its request
 *   parse throws a plain validation error, answered -32603 Internal error with the validator's dump;
 *   JSON-RPC 2.0 says -32602 Invalid params.
 * - a tool that does not exist: its server answers a tool result (isError, "Tool toString disabled"
 *   for a name its tool table inherits); the MCP specification's tools page says a protocol error,
 *   -32602. (A tool the connection's scopes do not reach never gets here: routes.ts answers 403.)
 * - raw arguments whose `__proto__` keys its parsing would drop (rawArgumentsError): a tool error.
 */
function screenToolCall(message: JSONRPCRequest, rawArguments: unknown): JSONRPCMessage | null {
  const parsed = CallToolRequestSchema.safeParse(message);
  if (!parsed.success) return invalidParams(message, parsed.error.issues, 'tools/call takes params {name: string, arguments?: object}.');
  const { name } = parsed.data.params;
  if (!Object.hasOwn(TOOL_SCOPES, name)) return { jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: `Unknown tool: ${name}` } };
  const refused = rawArgumentsError(name, rawArguments);
  return refused ? { jsonrpc: '2.0', id: message.id, result: toolError(refused) } : null;
}

/** The SDK's schema of each request the server answers, by method (any other is -32601, as the SDK says). */
const ANSWERED = new Set(['initialize', 'ping', 'tools/list']);
const REQUEST_SCHEMAS = new Map(ClientRequestSchema.options.filter((schema) => ANSWERED.has(schema.shape.method.value)).map((schema) => [schema.shape.method.value as string, schema] as const));

/** -32602 for a known method whose params its schema refuses (the SDK's server would answer -32603 with the dump). */
function screenRequest(message: JSONRPCRequest): JSONRPCMessage | null {
  const parsed = REQUEST_SCHEMAS.get(message.method)?.safeParse(message);
  return parsed && !parsed.success ? invalidParams(message, parsed.error.issues, `see the params of ${message.method} in the MCP specification.`) : null;
}

function invalidParams(message: JSONRPCRequest, issues: ReadonlyArray<{ path: PropertyKey[] }>, hint: string): JSONRPCMessage {
  const at = [...new Set(issues.map((i) => i.path.map(String).join('.')))].join(', ');
  return { jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: `Invalid params at ${at}: ${hint}` } };
}

/** Puts invalidMeta, then screenToolCall (screenRequest for other requests), between the transport and the server, for every message of `body` (a batch too). */
function screenToolCalls(transport: StreamableHTTPServerTransport, body: unknown, deps: AppDeps): void {
  // The transport hands the body's messages on one by one, in order: `sent` holds them as parsed.
  const sent: unknown[] = Array.isArray(body) ? body : [body];
  let next = 0;
  const deliver = transport.onmessage!;
  transport.onmessage = (message, extra) => {
    const raw = sent[next++] as { params?: { arguments?: unknown } } | null | undefined;
    const answer =
      invalidMeta(message, raw) ??
      (!isJSONRPCRequest(message) ? null : message.method === 'tools/call' ? screenToolCall(message, raw?.params?.arguments) : screenRequest(message));
    if (answer === 'ignore') return;
    if (answer) transport.send(answer).catch((err: unknown) => deps.log.warn('mcp answer not sent', { err: String(err) }));
    else deliver(withoutTask(message), extra);
  };
}

/**
 * MCP 2025-11-25, tasks: a receiver that does not declare the tasks capability (this server) MUST
 * process a task-augmented request normally, ignoring `params.task`; the SDK's server answers it
 * -32603 Internal error instead.
 */
function withoutTask(message: JSONRPCMessage): JSONRPCMessage {
  if (!isJSONRPCRequest(message) || message.params === undefined || !Object.hasOwn(message.params, 'task')) return message;
  const { task: _ignored, ...params } = message.params;
  return { ...message, params };
}
