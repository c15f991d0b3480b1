// The contract check behind every /v1 response the HTTP tests receive: the committed
// schemas/openapi.json must document the operation and its status, the body must match the
// documented schema (with no undocumented fields), and documented required headers must be there.
// A mismatch throws, failing the test that made the request. Covered operations are recorded.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

type Json = any;

export const openApi: Json = JSON.parse(readFileSync(new URL('../../schemas/openapi.json', import.meta.url), 'utf8'));

/**
 * Responses may gain fields (docs/reference/contract.md §1 rule 7), so the document leaves objects open; the test
 * closes them, so that a field the service sends but the document does not describe is caught.
 */
function closeObjects(value: Json): Json {
  if (Array.isArray(value)) return value.map(closeObjects);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, closeObjects(v)]));
  if (out.type === 'object' && out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

const DOC_ID = 'openapi.json';
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: DOC_ID, ...closeObjects(openApi) });

const validators = new Map<string, ValidateFunction>();
function validatorFor(pointer: string): ValidateFunction {
  let v = validators.get(pointer);
  if (!v) {
    v = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
    validators.set(pointer, v);
  }
  return v;
}

const escape = (segment: string) => encodeURIComponent(segment.replace(/~/g, '~0').replace(/\//g, '~1'));

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
}

const ROUTES: Route[] = Object.entries(openApi.paths as Record<string, Record<string, unknown>>).flatMap(([template, item]) =>
  Object.keys(item).map((method) => ({
    method: method.toUpperCase(),
    template,
    pattern: new RegExp('^' + template.replace(/[.]/g, '\\.').replace(/\{\w+\}/g, '[^/]+') + '/?$'),
  })),
);

/** Every documented (method, path) pair, as `METHOD /v1/path/{param}`. */
export const documentedOperations = (): string[] => ROUTES.map((r) => `${r.method} ${r.template}`);

/** `METHOD template` -> statuses seen, for this test process. */
export const covered = new Map<string, Set<number>>();

function resolve(object: Json): { value: Json; pointer: string | null } {
  if (object && typeof object.$ref === 'string') {
    const pointer = object.$ref.slice(1);
    const value = pointer.split('/').slice(1).reduce((node: Json, key: string) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], openApi);
    return { value, pointer };
  }
  return { value: object, pointer: null };
}

export interface CheckedResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

/** Throws when the response to `method path` disagrees with the document. */
export function checkAgainstDocument(method: string, path: string, res: CheckedResponse): void {
  const pathname = new URL(path, 'http://x').pathname;
  // /v1, and the few documented operations outside it (GET /.well-known/jwks.json).
  if (!pathname.startsWith('/v1') && !ROUTES.some((r) => r.pattern.test(pathname))) return;
  const fail = (problem: string): never => {
    throw new Error(`contract: ${method} ${pathname} answered ${res.status}: ${problem}\n${res.text.slice(0, 2000)}`);
  };
  const route = ROUTES.find((r) => r.method === method && r.pattern.test(pathname));
  if (!route) {
    // Not an operation (an unknown path, a refused method, policy authoring): still the error body.
    if (res.status < 400 || method === 'HEAD') return;
    const validate = validatorFor('/components/schemas/ErrorBody');
    if (!validate(res.body)) fail(`not the error body: ${ajv.errorsText(validate.errors)}`);
    return;
  }
  const key = `${route.method} ${route.template}`;
  const operationPointer = `/paths/${escape(route.template)}/${route.method.toLowerCase()}`;
  const operation = openApi.paths[route.template][route.method.toLowerCase()];
  const documented = operation.responses[String(res.status)];
  if (!documented) fail(`status ${res.status} is not documented for ${key}`);
  const { value: response, pointer } = resolve(documented);
  for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
    if (resolve(header).value.required && !res.headers.has(name)) fail(`the documented header ${name} is missing`);
  }
  if (response.content?.['application/json']) {
    if (!(res.headers.get('content-type') ?? '').startsWith('application/json')) fail(`content-type ${res.headers.get('content-type')} is not JSON`);
    const schemaPointer = `${pointer ? encodeURI(pointer) : `${operationPointer}/responses/${res.status}`}/content/application~1json/schema`;
    const validate = validatorFor(schemaPointer);
    if (!validate(res.body)) fail(ajv.errorsText(validate.errors, { separator: '\n  ' }));
  }
  const statuses = covered.get(key) ?? new Set<number>();
  statuses.add(res.status);
  covered.set(key, statuses);
}

/** Throws when an event's `data` disagrees with its webhook body in the document (no undocumented field either). */
export function checkEventData(type: string, data: unknown): void {
  if (!openApi.webhooks[type]) throw new Error(`contract: event type ${type} is not documented`);
  const validate = validatorFor(`/webhooks/${escape(type)}/post/requestBody/content/application~1json/schema/properties/data`);
  if (!validate(data)) throw new Error(`contract: ${type} data: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(data)}`);
}

/**
 * Throws when a delivery as a receiver got it disagrees with the document's webhook for its type: the
 * whole envelope (no undocumented field either) and every documented header.
 */
export function checkDelivery(headers: Record<string, string | string[] | undefined>, rawBody: Buffer): void {
  const envelope: Json = JSON.parse(rawBody.toString('utf8'));
  const type: string = envelope.type;
  const webhook = openApi.webhooks[type]?.post;
  if (!webhook) throw new Error(`contract: event type ${type} is not documented`);
  const validate = validatorFor(`/webhooks/${escape(type)}/post/requestBody/content/application~1json/schema`);
  if (!validate(envelope)) throw new Error(`contract: ${type} body: ${ajv.errorsText(validate.errors)}\n${rawBody}`);
  for (const [i, parameter] of (webhook.parameters as Json[]).entries()) {
    const value = headers[parameter.name.toLowerCase()];
    if (value === undefined) {
      if (parameter.required) throw new Error(`contract: ${type} lacks the header ${parameter.name}`);
      continue;
    }
    const check = validatorFor(`/webhooks/${escape(type)}/post/parameters/${i}/schema`);
    if (!check(value)) throw new Error(`contract: ${type} header ${parameter.name}: ${ajv.errorsText(check.errors)}`);
  }
}
