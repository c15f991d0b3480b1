// HTTP fuzzing of every route (docs/internals/testing.md): fast-check generates hostile requests (random
// JSON shapes, deep nesting, huge and negative numbers, unicode edge cases, wrong types, duplicate
// keys, wrong and missing headers, random methods, paths and query strings) and sends them over
// node:http to the real app on a port. Each answer is checked: never a 5xx; every error carries the
// error body its surface documents, with a known code; a refused request writes nothing.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import fc from 'fast-check';
import { ADMIN_TOKEN, type TestApp } from '../helpers/app.ts';
import { connect, setUpOrg, startConnectionsApp, startMetadataServer } from '../oauth/helpers.ts';
import { Client } from '../helpers/dashboard.ts';
import { STORE_LAYOUT } from '../../src/compose.ts';

/** docs/reference/contract.md §7, plus the additions docs/integrate/rest-api.md lists (read from its table, so the two cannot drift). */
const LISTED_ADDITIONS = [...readFileSync(new URL('../../docs/integrate/rest-api.md', import.meta.url), 'utf8').matchAll(/^\| error code \| \d{3} `([a-z_]+)` \|/gm)].map((m) => m[1]);
export const KNOWN_CODES = new Set([
  ...LISTED_ADDITIONS,
  'invalid_request', 'malformed_json', 'webhook_url_not_permitted', 'unauthorized', 'invalid_api_key', 'api_key_revoked',
  'api_key_expired', 'wrong_environment', 'invalid_token', 'connection_unauthorized', 'organization_suspended',
  'api_key_not_bound_to_agent', 'api_key_not_organization_scoped', 'api_key_not_permitted', 'insufficient_scope',
  'oauth_not_permitted', 'not_found', 'idempotency_key_reuse', 'webhook_limit_reached', 'webhook_endpoint_revoked',
  'payload_too_large', 'unsupported_media_type', 'internal_error', 'webhook_not_configured',
]);

/** RFC 6749 5.2 / RFC 7009 error codes of the token and revocation endpoints. */
const OAUTH_CODES = new Set(['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope', 'invalid_target', 'unsupported_token_type']);

/** RFC 7591 3.2.2 error codes of the registration endpoint, and its rate limit's (docs/reference/decisions.md). */
const REGISTRATION_CODES = new Set(['invalid_redirect_uri', 'invalid_client_metadata', 'too_many_requests']);

export interface FuzzTarget {
  app: TestApp;
  ids: Record<string, string>;
  credentials: Record<'agent' | 'org' | 'otherAgent' | 'connection' | 'admin', string>;
  /** A person signed in to the dashboard: the session cookie and the CSRF token its forms carry. */
  dashboard: { cookie: string; csrf: string };
  close(): Promise<void>;
}

/** The credential a route's caller would hold, so most requests get past authentication. */
function rightCredential(target: FuzzTarget, path: string): string {
  const c = target.credentials;
  if (path.startsWith('/admin')) return c.admin;
  if (path.startsWith('/mcp')) return c.connection;
  if (path.startsWith('/v1/purchase-requests') || path.startsWith('/v1/simulations/current')) return c.agent;
  return c.org;
}

export async function startFuzzTarget(): Promise<FuzzTarget> {
  // An organisation, and an assistant connected to its agent with every scope, so /mcp is reached too.
  const app = await startConnectionsApp();
  const meta = await startMetadataServer('Fuzzer');
  const org = await setUpOrg(app, 'fuzz');
  const connection = await connect(app, org, meta.clientId);
  const purchase = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: 25_000, reason: 'Held for a person' } });
  const ids = {
    agent: org.agents.buyer.id,
    policy: org.policies.office.id,
    version: org.policies.office.activeVersionId!,
    purchase: purchase.body.purchaseRequest.id,
    organization: org.organizationId,
    apiKey: org.keyIds['travel-key'],
    person: org.personId,
    // Not the connection's id: a DELETE /admin/connections/{it} that succeeds would end /mcp for the run.
  };
  const credentials = { agent: org.keys['buyer-key'], org: org.keys['admin-key'], otherAgent: org.keys['travel-key'], connection: connection.access_token, admin: ADMIN_TOKEN };
  // Ana (approver and admin) signed in, so the dashboard's form posts reach their handlers.
  const person = new Client(app.url);
  const signedIn = await person.signIn(org.email);
  if (signedIn.status !== 303) throw new Error(`dashboard sign-in refused: ${signedIn.status}`);
  const dashboard = { cookie: [...person.cookies].map(([k, v]) => `${k}=${v}`).join('; '), csrf: await person.csrf() };
  return {
    app,
    ids,
    credentials,
    dashboard,
    async close() {
      await meta.close();
      await app.close();
    },
  };
}

// ---- requests ----------------------------------------------------------------------------------

export interface FuzzRequest {
  method: string;
  path: string;
  /** A list is sent as that many header lines. */
  headers: Record<string, string | string[]>;
  body: string | null;
}

const ROUTES: [string, string][] = [
  ['POST', '/v1/purchase-requests'],
  ['GET', '/v1/purchase-requests/{purchase}'],
  ['POST', '/v1/simulations/current-policies'],
  ['POST', '/v1/simulations/draft-policy'],
  ['POST', '/v1/simulations/policy-version'],
  ['POST', '/v1/simulations/replay'],
  ['GET', '/v1/simulations/replay/{any}'],
  ['GET', '/v1/policies/{policy}/versions/{version}/shadow'],
  ['GET', '/v1/purchase-requests/{purchase}/receipts'],
  ['GET', '/.well-known/jwks.json'],
  ['GET', '/v1/policies'],
  ['GET', '/v1/policies/{policy}'],
  ['GET', '/v1/policies/{policy}/versions/{version}'],
  ['POST', '/v1/policies/{policy}/versions/{version}/validate'],
  ['POST', '/v1/policies'],
  ['GET', '/v1/agents'],
  ['GET', '/v1/webhooks'],
  ['POST', '/v1/webhooks'],
  ['GET', '/v1/webhooks/{any}'],
  ['PATCH', '/v1/webhooks/{any}'],
  ['DELETE', '/v1/webhooks/{any}'],
  ['GET', '/v1/webhooks/{any}/deliveries'],
  ['POST', '/v1/webhooks/{any}/rotate-secret'],
  ['POST', '/v1/webhooks/{any}/test'],
  ['POST', '/admin/manifests'],
  ['PATCH', '/admin/agents/{agent}'],
  ['PATCH', '/admin/organizations/{organization}'],
  ['DELETE', '/admin/api-keys/{apiKey}'],
  ['POST', '/admin/purchase-requests/{purchase}/answer'],
  ['GET', '/admin/purchase-requests/{purchase}'],
  ['PATCH', '/admin/policy-versions/{version}'],
  ['PUT', '/admin/people/{person}/password'],
  ['GET', '/admin/connections'],
  ['DELETE', '/admin/connections/{any}'],
  ['GET', '/oauth/authorize'],
  ['POST', '/oauth/sign-in'],
  ['GET', '/oauth/consent'],
  ['POST', '/oauth/consent'],
  ['POST', '/oauth/token'],
  ['POST', '/oauth/revoke'],
  ['GET', '/.well-known/oauth-authorization-server'],
  ['GET', '/.well-known/oauth-protected-resource/mcp'],
  ['POST', '/mcp'],
  ['GET', '/mcp'],
  ['GET', '/health'],
  // Dynamic client registration and the registered clients' documents.
  ['POST', '/oauth/register'],
  ['GET', '/oauth/clients/{any}'],
  ['GET', '/admin/oauth-clients'],
  ['DELETE', '/admin/oauth-clients/{any}'],
  // The dashboard's forms and pages, as the signed-in person (sign-out left out: it would end the session for the run).
  ['POST', '/dashboard/purchases'],
  ['POST', '/dashboard/approvals/{purchase}/answer'],
  ['POST', '/dashboard/keys/{apiKey}/revoke'],
  ['POST', '/dashboard/connections/{any}/revoke'],
  ['POST', '/dashboard/policies/{policy}/versions/{version}/shadow'],
  ['POST', '/dashboard/sign-in'],
  ['GET', '/dashboard'],
  ['GET', '/dashboard/purchases'],
  ['GET', '/dashboard/purchases/{purchase}'],
  ['GET', '/dashboard/policies'],
  ['GET', '/dashboard/budgets'],
];

const unicode = fc.constantFrom('', 'é', '\u0000', '\u202e', '\ud83d\ude00', '\u200b', 'Ω≈ç√', '𝔘𝔫𝔦', '\ufeff', '\\', '"', '%', '../', '\r\n');
const hostileString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  unicode,
  fc.constantFrom('Paper Co', 'Shady Goods Ltd', '   ', 'EUR', 'eur', 'XAU', 'https://127.0.0.1/x', 'https://user:pw@hooks.example/x', 'ftp://x', '__proto__', 'constructor', 'APPROVE', 'ACTIVE', 'DISABLED'),
  fc.integer({ min: 1, max: 3000 }).map((n) => 'x'.repeat(n)),
);
const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, -1, 1, 1.5, 2 ** 53, 2 ** 53 + 2, -(2 ** 63), 1e21, Number.MAX_VALUE, Number.MIN_VALUE),
);
/** Tokens written straight into the JSON text: values JSON.stringify cannot produce. */
const rawNumber = fc.constantFrom('1e400', '-1e400', '99999999999999999999999999999999', '-0', '1.0', '0.1e1', '00', '1E2', '-9007199254740993');

const FIELDS = ['merchant', 'amountMinor', 'reason', 'currency', 'category', 'merchantDomain', 'metadata', 'agentId', 'policyVersionId', 'url', 'subscribedTypes', 'description', 'status', 'apiVersion', 'retireImmediately', 'answer', 'person', 'comment', 'password', 'organization', 'policies', 'jsonrpc', 'method', 'params', 'id', '__proto__', 'constructor', ''];

const leaf: fc.Arbitrary<string> = fc.oneof(
  hostileString.map((s) => JSON.stringify(s)),
  hostileNumber.map((n) => (Number.isFinite(n) ? JSON.stringify(n) : '0')),
  rawNumber,
  fc.constantFrom('null', 'true', 'false', '"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '[]', '{}'),
);

/** A JSON text (as a string, so duplicate keys and raw numbers are possible). */
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
    fc
      .array(fc.tuple(fc.oneof(fc.constantFrom(...FIELDS), hostileString), tie('value')), { maxLength: 12 })
      .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  ),
})).value;

const purchaseLike = fc
  .record(
    {
      merchant: fc.oneof(hostileString, hostileNumber),
      amountMinor: fc.oneof(hostileNumber, hostileString, fc.constantFrom('1999', '-5', '0', '01999', '9007199254740992')),
      reason: fc.oneof(hostileString, fc.constant(null)),
      currency: fc.oneof(hostileString, fc.constant(null)),
      metadata: fc.oneof(fc.constant(null), fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 })),
      agentId: fc.oneof(fc.uuid(), hostileString),
    },
    { requiredKeys: [] },
  )
  .map((o) => JSON.stringify(o));

/** A valid purchase whose metadata nests n levels (objects, or arrays inside one object). */
const deep = fc
  .tuple(fc.oneof(fc.integer({ min: 20, max: 100 }), fc.integer({ min: 100, max: 13_000 }), fc.integer({ min: 13_000, max: 40_000 })), fc.boolean())
  .map(([n, objects]) => {
    const nested = objects ? '{"a":'.repeat(n) + '1' + '}'.repeat(n) : '{"a":' + '['.repeat(n) + ']'.repeat(n) + '}';
    return `{"merchant":"Paper Co","amountMinor":1,"reason":"r","metadata":${nested}}`;
  });
const duplicateKeys = fc.tuple(fc.constantFrom(...FIELDS), leaf, leaf).map(([k, a, b]) => `{"merchant":"Paper Co","amountMinor":1,"reason":"r",${JSON.stringify(k)}:${a},${JSON.stringify(k)}:${b}}`);
const broken = fc.oneof(
  jsonText.map((t) => t.slice(0, Math.max(0, t.length - 1))),
  fc.string({ maxLength: 40 }),
  fc.constantFrom('', ' ', '{', '{"a":1,}', "{'a':1}", 'NaN', 'undefined', '\ufeff{}', '{"a":1}{"b":2}'),
);
const big = fc.integer({ min: 16_000, max: 70_000 }).map((n) => `{"merchant":"Paper Co","amountMinor":1,"reason":"${'r'.repeat(n)}"}`);

const manyUnknown = fc
  .tuple(purchaseLike, fc.uniqueArray(hostileString, { minLength: 5, maxLength: 20 }))
  .map(([base, keys]) => JSON.stringify({ ...JSON.parse(base), ...Object.fromEntries(keys.map((k, i) => [k, i])) }));

/** Bodies for the purchase-shaped routes: mostly near-valid purchases, broken in one way. */
const purchaseBodyArb: fc.Arbitrary<string | null> = fc.oneof(
  { arbitrary: purchaseLike, weight: 5 },
  { arbitrary: manyUnknown, weight: 2 },
  { arbitrary: deep, weight: 3 },
  { arbitrary: duplicateKeys, weight: 1 },
  { arbitrary: broken, weight: 1 },
  { arbitrary: jsonText, weight: 1 },
  { arbitrary: big, weight: 1 },
  { arbitrary: fc.constant(null), weight: 1 },
);
const TOOLS = ['request_purchase', 'check_purchase', 'get_purchase', 'list_purchases', 'no_such_tool'];
const toolArguments = fc.oneof(purchaseLike, manyUnknown, deep.map((d) => d), jsonText, fc.record({ purchaseRequestId: fc.oneof(fc.uuid(), hostileString) }).map((o) => JSON.stringify(o)), fc.record({ limit: hostileNumber, cursor: hostileString }, { requiredKeys: [] }).map((o) => JSON.stringify(o)));
const rpc = fc.oneof(
  fc.tuple(fc.constantFrom(...TOOLS), toolArguments, fc.oneof(fc.integer(), hostileString)).map(([name, args, id]) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`),
  fc.constantFrom('tools/list', 'initialize', 'ping', 'resources/list', 'prompts/get', 'nonsense').map((method) => `{"jsonrpc":"2.0","id":1,"method":"${method}","params":{}}`),
  fc.constantFrom('{"jsonrpc":"1.0","id":1,"method":"tools/list"}', '{"jsonrpc":"2.0","method":"notifications/initialized"}', '[]', '{"jsonrpc":"2.0","id":null,"method":"tools/call"}'),
);
/** JSON-RPC for /mcp: tool calls with hostile arguments, batches, other methods. */
const mcpBodyArb: fc.Arbitrary<string | null> = fc.oneof(
  { arbitrary: rpc, weight: 6 },
  { arbitrary: fc.array(rpc, { minLength: 1, maxLength: 3 }).map((items) => `[${items.join(',')}]`), weight: 1 },
  { arbitrary: jsonText, weight: 1 },
  { arbitrary: broken, weight: 1 },
);

/** Hostile amounts as a person would type them into the dashboard (major units). */
const majorAmount = fc.oneof(fc.constantFrom('12.50', '0', '0.00', '-1', '1,50', '1e3', '12.345', '9999999999999999', '90071992547409.92', '١٢', '１２', ' 12 ', '', '.5', '5.'), hostileString);
const FORM_FIELDS = ['csrf', 'token', 'agent', 'merchant', 'amount', 'currency', 'reason', 'category', 'answer', 'comment', 'shadow', 'email', 'password', 'next', ''];

/** An application/x-www-form-urlencoded body: the right CSRF token or a wrong one, hostile fields, names twice. */
function formBodyArb(target: FuzzTarget): fc.Arbitrary<string | null> {
  const value = fc.oneof(hostileString, majorAmount, fc.constantFrom(target.ids.agent, 'APPROVE', 'REJECT', 'on', 'EUR', 'eur', 'XXX'));
  const fields = fc.array(fc.tuple(fc.oneof({ arbitrary: fc.constantFrom(...FORM_FIELDS), weight: 4 }, { arbitrary: hostileString, weight: 1 }), value), { maxLength: 8 });
  const csrf = fc.oneof({ arbitrary: fc.constant([['csrf', target.dashboard.csrf]] as [string, string][]), weight: 4 }, { arbitrary: fc.constant([] as [string, string][]), weight: 1 });
  const form = fc.tuple(csrf, fields).map(([c, f]) => [...c, ...f].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'));
  return fc.oneof({ arbitrary: form, weight: 6 }, { arbitrary: fc.constantFrom('%', '%zz=%zz', 'a=1&a=2', '&&&', '='), weight: 1 }, { arbitrary: fc.constant(null), weight: 1 }, { arbitrary: jsonText, weight: 1 });
}

/** RFC 7591 client metadata: near-valid registrations with hostile redirect URIs and fields. */
const registrationBody = fc
  .record(
    {
      redirect_uris: fc.oneof(fc.array(fc.oneof(fc.constantFrom('https://ok.example/cb', 'http://127.0.0.1/cb', 'http://[::1]/cb', 'http://localhost./cb', 'javascript:alert(1)', 'https://ok.example/cb#f', 'http://evil.example/cb', 'https://u:p@ok.example/cb', 'https://ok.example/\u0000'), hostileString), { maxLength: 3 }), hostileString),
      client_name: fc.oneof(hostileString, hostileNumber),
      token_endpoint_auth_method: fc.constantFrom('none', 'client_secret_basic', ''),
      grant_types: fc.array(fc.constantFrom('authorization_code', 'refresh_token', 'password', 'implicit'), { maxLength: 3 }),
      scope: fc.oneof(hostileString, fc.constant('purchase:check purchase:admin')),
    },
    { requiredKeys: [] },
  )
  .map((o) => JSON.stringify(o));

const PURCHASE_SHAPED = /^\/v1\/(purchase-requests|simulations\/)/;

const bodyArb: fc.Arbitrary<string | null> = fc.oneof(
  { arbitrary: fc.constant(null), weight: 2 },
  { arbitrary: jsonText, weight: 3 },
  { arbitrary: purchaseLike, weight: 5 },
  { arbitrary: manyUnknown, weight: 2 },
  { arbitrary: deep, weight: 2 },
  { arbitrary: duplicateKeys, weight: 1 },
  { arbitrary: broken, weight: 2 },
  { arbitrary: big, weight: 1 },
  { arbitrary: fc.webQueryParameters().map((q) => q), weight: 1 },
);

const contentType = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 9 },
  { arbitrary: fc.constantFrom('application/json; charset=utf-8', 'application/merge-patch+json', 'application/x-www-form-urlencoded', 'text/plain', 'application/yaml', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/json;;', '*/*', 'garbage'), weight: 3 },
  { arbitrary: fc.constant(null), weight: 1 },
);

const queryArb = fc.oneof(
  { arbitrary: fc.constant(''), weight: 4 },
  { arbitrary: fc.webQueryParameters(), weight: 1 },
  {
    arbitrary: fc
      .array(fc.tuple(fc.constantFrom('page', 'pageSize', 'status', 'search', 'limit', 'cursor', 'x', 'organizationId', 'client_id', 'response_type', 'redirect_uri', 'request', 'scope', '__proto__'), fc.oneof(hostileString, fc.integer().map(String), fc.constantFrom('99999999999', '2147483647', '-1', '0', '1e3', ''))), { maxLength: 4 })
      .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')),
    weight: 3,
  },
);

export function requestArb(target: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const ids = target.ids;
  const segment = fc.oneof(
    { arbitrary: fc.constantFrom(...Object.values(ids)), weight: 4 },
    { arbitrary: fc.uuid(), weight: 2 },
    { arbitrary: fc.constantFrom(ids.purchase.toUpperCase(), '..', '%2e%2e', '%00', '%ZZ', 'null', '0', '-1', '%E2%80%AE', 'x'.repeat(300)), weight: 1 },
    { arbitrary: fc.string({ maxLength: 20 }).map(encodeURIComponent), weight: 1 },
  );
  const path = fc.oneof(
    {
      // Routes that take a body come up three times as often: that is where the parsing is.
      arbitrary: fc.tuple(fc.constantFrom(...ROUTES.flatMap((route) => (route[0] === 'GET' || route[0] === 'DELETE' ? [route] : [route, route, route]))), fc.array(fc.tuple(fc.boolean(), segment), { minLength: 2, maxLength: 2 })).map(([[method, template], picks]) => {
        let n = 0;
        // Each placeholder is the real id of that kind (when there is one) or a hostile segment.
        const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
          const [real, other] = picks[n++];
          return real && ids[name] ? ids[name] : other;
        });
        return { method, path };
      }),
      weight: 9,
    },
    { arbitrary: fc.tuple(fc.constantFrom('/v1', '/admin', '/oauth', '/mcp', '/', '/v2', '/.well-known'), fc.array(segment, { maxLength: 3 })).map(([root, parts]) => ({ method: 'GET', path: [root, ...parts].join('/').replace(/\/+/g, '/') })), weight: 1 },
  );
  const method = fc.oneof(
    { arbitrary: fc.constant(null), weight: 8 },
    { arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'MKCOL', 'PURGE'), weight: 2 },
  );
  const authorization = fc.oneof(
    { arbitrary: fc.constant('right'), weight: 12 },
    { arbitrary: fc.constantFrom(...Object.values(target.credentials)).map((c) => `Bearer ${c}`), weight: 3 },
    { arbitrary: fc.constant(null), weight: 1 },
    {
      arbitrary: fc.oneof(
        fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'bearer cmp_live_', 'Bearer cmp_test_abc', 'Bearer cmp_oat_' + 'a'.repeat(43), 'Bearer cmp_ort_x', 'Bearer cmp_live_abcdefabcdef_' + 'A'.repeat(43), 'Bearer  ' + target.credentials.agent),
        hostileString.map((s) => `Bearer ${s.replace(/[^\x20-\x7e]/g, '')}`),
      ),
      weight: 2,
    },
  );
  // Each extra header is sent now and then (one request in five), so most requests get past them.
  const sometimes = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: arb, weight: 1 });
  const extraHeaders = fc
    .record({
      'idempotency-key': sometimes(fc.oneof(fc.string({ maxLength: 30 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')), fc.constant('k'.repeat(300)), fc.constant(['k-1', 'k-2']))),
      origin: sometimes(fc.constantFrom('https://evil.example', 'null', 'http://127.0.0.1')),
      accept: sometimes(fc.constantFrom('application/json, text/event-stream', 'text/html', '*/*', 'application/xml')),
      'content-encoding': sometimes(fc.constantFrom('gzip', 'br', 'identity', 'x-unknown')),
      'x-request-id': sometimes(fc.oneof(fc.uuid(), fc.constant('bad id with spaces'))),
      'mcp-protocol-version': sometimes(fc.constantFrom('2025-06-18', '1999-01-01', 'x')),
    })
    .map((headers) => Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<string, string | string[]>);
  // A replay: near-valid, with hostile ids, timestamps, ranges and paging.
  const instant = fc.oneof(fc.date({ min: new Date('1970-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()), fc.constantFrom('2026-02-30T00:00:00Z', '2026-13-01', 'yesterday', '', '2026-11-27T00:00:00+25:00'), hostileString);
  const replayBody = fc
    .record(
      { policyVersionId: fc.oneof(fc.constant(ids.version), fc.uuid(), hostileString), from: instant, to: instant, agentId: fc.oneof(fc.constant(ids.agent), fc.uuid(), hostileString), limit: hostileNumber, cursor: hostileString },
      { requiredKeys: ['policyVersionId', 'from', 'to'] },
    )
    .map((o) => JSON.stringify(o));
  const replayBodyArb = fc.oneof({ arbitrary: replayBody, weight: 5 }, { arbitrary: bodyArb, weight: 2 });
  const shadowBodyArb = fc.oneof({ arbitrary: fc.constantFrom('{"shadow":true}', '{"shadow":false}', '{"shadow":"yes"}', '{"shadow":true,"x":1}', '{}'), weight: 3 }, { arbitrary: bodyArb, weight: 1 });
  const formBody = formBodyArb(target);
  const registrationBodyArb = fc.oneof({ arbitrary: registrationBody, weight: 4 }, { arbitrary: bodyArb, weight: 1 });
  const bodyFor = (path: string) =>
    path === '/v1/simulations/replay' ? replayBodyArb : path.startsWith('/admin/policy-versions/') ? shadowBodyArb : PURCHASE_SHAPED.test(path) ? purchaseBodyArb : path === '/mcp' ? mcpBodyArb : path.startsWith('/dashboard') ? formBody : path === '/oauth/register' ? registrationBodyArb : bodyArb;
  const routeAndBody = path.chain((route) => bodyFor(route.path).map((body) => ({ route, body })));
  return fc.record({ rb: routeAndBody, method, query: queryArb, authorization, contentType, extra: extraHeaders, twice: fc.integer({ min: 0, max: 7 }).map((n) => n === 0) }).map(({ rb, ...rest }) => ({ ...rest, ...rb })).map((r) => {
    const headers: Record<string, string | string[]> = { ...r.extra };
    if (r.authorization !== null) headers.authorization = r.authorization === 'right' ? `Bearer ${rightCredential(target, r.route.path)}` : r.authorization;
    // Now and then the credential twice, on two header lines, the second another one.
    if (r.authorization === 'right' && r.twice) headers.authorization = [headers.authorization as string, `Bearer ${target.credentials.otherAgent}`];
    if (r.contentType !== null && r.body !== null) headers['content-type'] = r.contentType;
    if (r.route.path.startsWith('/mcp')) headers.accept ??= 'application/json, text/event-stream';
    if (r.route.path.startsWith('/dashboard')) {
      // The signed-in person's browser, as long as the credential drawn is the right one; forms are url-encoded.
      if (r.authorization === 'right') {
        headers.cookie = target.dashboard.cookie;
        headers.origin ??= target.app.url;
      }
      if (r.body !== null && r.contentType === 'application/json') headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    return { method: r.method ?? r.route.method, path: r.route.path + (r.query ? `?${r.query}` : ''), headers, body: r.body };
  });
}

// ---- sending and judging -----------------------------------------------------------------------

export interface FuzzResponse {
  status: number;
  contentType: string;
  text: string;
}

export function send(target: FuzzTarget, r: FuzzRequest): Promise<FuzzResponse> {
  return new Promise((resolve, reject) => {
    const body = r.body === null ? undefined : Buffer.from(r.body, 'utf8');
    const headers = { ...r.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
    const req = request(target.app.url + r.path, { method: r.method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Collections with a TTL index, and its field: the store deletes their expired documents on its own. */
const TTL_FIELDS = new Map(STORE_LAYOUT.indexes.filter((i) => i.options?.expireAfterSeconds !== undefined).map((i) => [i.collection, Object.keys(i.keys)[0]]));

/**
 * Every document of every collection, hashed: equal digests mean nothing was written. Documents a
 * TTL index removes before `ttlCutoff` are left out, so an expiry between two digests is not a write,
 * and so is a credential's `lastUsedAt`.
 */
export async function storeDigest(target: FuzzTarget, ttlCutoff: Date): Promise<string> {
  const db = target.app.store.db;
  const hash = createHash('sha256');
  for (const name of (await db.listCollectionNames()).sort()) {
    const ttl = TTL_FIELDS.get(name);
    const docs = (await db.collection(name).find({}).sort({ _id: 1 }).toArray())
      .filter((d) => !(ttl && d[ttl] instanceof Date && d[ttl] <= ttlCutoff))
      // Authentication records a credential's last use (at most once a minute; docs/reference/decisions.md),
      // whatever the request then does: bookkeeping, not a write of the refused request.
      .map(({ lastUsedAt: _lastUse, ...rest }) => rest)
      // A signed-in session slides on use (at most once a minute): bookkeeping too.
      .map((d) => (name === 'dashboard_sessions' ? { ...d, lastSeenAt: null, expiresAt: null } : d));
    // Every registration attempt is counted, refused or not (docs/reference/decisions.md: 20 per address per hour).
    if (name === 'oauth_registration_windows') continue;
    hash.update(`${name}:${JSON.stringify(docs)}\n`);
  }
  return hash.digest('hex');
}

/** A cutoff for a pair of digests taken around one request: anything expiring within the minute. */
export const ttlCutoff = () => new Date(Date.now() + 60_000);

/** The error code of an answer, or null for a success; throws with the reason when the answer breaks the rules. */
export function judge(r: FuzzRequest, res: FuzzResponse): string | null {
  const where = `${r.method} ${r.path.slice(0, 120)} -> ${res.status} ${res.text.slice(0, 200)}`;
  if (res.status >= 500) throw new Error(`5xx: ${where}`);
  // As the server sees it: dot segments resolved, a trailing slash matching the route without it.
  const route = new URL(r.path, 'http://x').pathname.replace(/(.)\/$/, '$1');
  if (route === '/mcp' && res.status === 200) return judgeToolErrors(res.text, where);
  if (res.status < 400 || r.method === 'HEAD') return null;
  const isHtml = res.contentType.startsWith('text/html');
  if (isHtml && /^\/oauth\/(authorize|sign-in|consent)$/.test(route)) return `html ${res.status}`;
  // The dashboard answers people with pages (its 405s are the error body, below).
  if (isHtml && (route === '/dashboard' || route.startsWith('/dashboard/'))) return `dashboard ${res.status}`;
  if (!res.contentType.startsWith('application/json')) throw new Error(`not JSON: ${res.contentType}: ${where}`);
  let body: any;
  try {
    body = JSON.parse(res.text);
  } catch {
    throw new Error(`unparseable error body: ${where}`);
  }
  if (/^\/oauth\/(token|revoke)$/.test(route) && typeof body?.error === 'string') {
    if (!OAUTH_CODES.has(body.error)) throw new Error(`unknown OAuth error ${body.error}: ${where}`);
    return `oauth:${body.error}`;
  }
  if (route === '/oauth/register' && typeof body?.error === 'string') {
    if (!REGISTRATION_CODES.has(body.error) || typeof body.error_description !== 'string') throw new Error(`not an RFC 7591 error: ${where}`);
    return `registration:${body.error}`;
  }
  if (route === '/mcp' && body?.jsonrpc === '2.0' && typeof body.error?.code === 'number') return `jsonrpc:${body.error.code}`;
  const e = body?.error;
  if (!e || typeof e.code !== 'string' || typeof e.message !== 'string') throw new Error(`not the error body: ${where}`);
  if (!KNOWN_CODES.has(e.code)) throw new Error(`unknown code ${e.code}: ${where}`);
  const allowedKeys = new Set(['code', 'message', 'issues']);
  if (Object.keys(e).some((k) => !allowedKeys.has(k))) throw new Error(`extra keys in the error body: ${where}`);
  if (e.issues !== undefined) {
    if (e.code !== 'invalid_request') throw new Error(`issues on ${e.code}: ${where}`);
    if (!Array.isArray(e.issues) || e.issues.length === 0) throw new Error(`empty issues: ${where}`);
    for (const i of e.issues) if (typeof i?.path !== 'string' || typeof i?.code !== 'string' || typeof i?.message !== 'string') throw new Error(`malformed issue: ${where}`);
  } else if (e.code === 'invalid_request') {
    throw new Error(`invalid_request without issues: ${where}`);
  }
  return e.code;
}

/** MCP tool failures are results with isError whose text is docs/reference/contract.md §7's error body (README). */
function judgeToolErrors(text: string, where: string): string | null {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`unparseable MCP answer: ${where}`);
  }
  let code: string | null = null;
  for (const message of Array.isArray(body) ? body : [body]) {
    if (message?.error) code = `jsonrpc:${message.error.code}`;
    if (message?.result?.isError !== true) continue;
    let error: any;
    try {
      error = JSON.parse(message.result.content[0].text).error;
    } catch {
      // The SDK's own refusals (an unknown tool) are plain text: still a tool error, not a 5xx.
      code = 'tool:text';
      continue;
    }
    if (typeof error?.code !== 'string' || !KNOWN_CODES.has(error.code)) throw new Error(`tool error without a known code: ${where}`);
    if (error.code === 'internal_error') throw new Error(`tool internal_error: ${where}`);
    if (error.code === 'invalid_request' && (!Array.isArray(error.issues) || error.issues.length === 0)) throw new Error(`tool invalid_request without issues: ${where}`);
    code = `tool:${error.code}`;
  }
  return code;
}

/**
 * Undoes what successful hostile requests may have switched off (the agent disabled, the
 * organisation suspended), so a long run keeps reaching the routes behind them.
 */
export async function restore(target: FuzzTarget): Promise<void> {
  await target.app.admin(`/admin/agents/${target.ids.agent}`, { method: 'PATCH', body: { status: 'ENABLED' } });
  await target.app.admin(`/admin/organizations/${target.ids.organization}`, { method: 'PATCH', body: { status: 'ACTIVE' } });
}

/** An error answer, or an MCP tool call answered with a tool error: either must write nothing. */
export const refused = (res: FuzzResponse, code: string | null): boolean => res.status >= 400 || (code?.startsWith('tool:') ?? false);

/** Sends one request and checks it; a refused request must leave the store as it was. */
export async function check(target: FuzzTarget, r: FuzzRequest): Promise<string | null> {
  const cutoff = ttlCutoff();
  const before = await storeDigest(target, cutoff);
  const res = await send(target, r);
  const code = judge(r, res);
  if (refused(res, code)) {
    const after = await storeDigest(target, cutoff);
    if (after !== before) throw new Error(`refused request wrote to the store: ${r.method} ${r.path.slice(0, 120)} -> ${res.status} ${res.text.slice(0, 200)}`);
  }
  return code;
}
