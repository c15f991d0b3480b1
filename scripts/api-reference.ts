// docs/reference/api.md: the OpenAPI document (itself generated from the TypeBox schemas in schemas/)
// written out for people: every operation with its credentials, parameters, body, responses and error
// codes, every schema's fields, and every webhook event. `npm run schemas` writes it beside
// schemas/openapi.json, and test/openapi/document.test.ts fails while the committed copy is stale.

type Json = Record<string, any>;

const REF = '#/components/schemas/';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Table cells hold no pipes or line breaks. */
const cell = (text: unknown) => String(text ?? '').replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
const code = (text: string) => '`' + text + '`';
const schemaLink = (name: string) => `[${name}](#${name.toLowerCase()})`;

function constValues(s: Json): string[] | null {
  if (Array.isArray(s.enum)) return s.enum.map(String);
  if ('const' in s) return [String(s.const)];
  const alts: Json[] | undefined = s.anyOf ?? s.oneOf;
  if (alts && alts.every((a) => 'const' in a || Array.isArray(a.enum))) return alts.flatMap((a) => constValues(a)!);
  return null;
}

/** A schema's type in a few words, with links to named schemas. */
export function typeOf(s: Json | undefined): string {
  if (!s) return 'any';
  if (s.$ref) return schemaLink(String(s.$ref).slice(REF.length));
  const values = constValues(s);
  if (values) return values.map(code).join(', ');
  const alts: Json[] | undefined = s.anyOf ?? s.oneOf;
  if (alts) return alts.map(typeOf).join(' or ');
  if (Array.isArray(s.type)) return s.type.join(' or ');
  if (s.type === 'array') return `array of ${typeOf(s.items)}`;
  if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object' && !s.properties) {
    return `object of ${typeOf(s.additionalProperties)}`;
  }
  return s.format ? `${s.type} (${s.format})` : String(s.type ?? 'any');
}

function constraints(s: Json): string {
  const parts: string[] = [];
  const words: Array<[string, string]> = [
    ['minLength', 'at least %s characters'],
    ['maxLength', 'at most %s characters'],
    ['minimum', '≥ %s'],
    ['maximum', '≤ %s'],
    ['minItems', 'at least %s items'],
    ['maxItems', 'at most %s items'],
    ['pattern', 'pattern `%s`'],
    ['default', 'default `%s`'],
  ];
  for (const [key, text] of words) if (key in s) parts.push(text.replace('%s', typeof s[key] === 'object' ? JSON.stringify(s[key]) : String(s[key])));
  return parts.join('; ');
}

/** Rows of an object's fields; inline objects (and arrays of them) are flattened with dotted names. */
function fieldRows(s: Json, prefix = ''): string[] {
  const required = new Set<string>(s.required ?? []);
  const rows: string[] = [];
  for (const [name, raw] of Object.entries<Json>(s.properties ?? {})) {
    const inner = raw.type === 'array' && raw.items?.properties ? raw.items : raw;
    const nullable = (raw.anyOf ?? []).find((a: Json) => a.type === 'object' && a.properties);
    const nested = inner.properties ? inner : nullable;
    const type = nested ? (raw.type === 'array' ? 'array of object' : nullable ? 'object or null' : 'object') : typeOf(raw);
    const notes = [raw.description, constraints(raw.type === 'array' ? { ...raw, ...raw.items } : raw)].filter(Boolean).join(' ');
    rows.push(`| ${code(prefix + name)} | ${cell(type)} | ${required.has(name) ? 'yes' : 'no'} | ${cell(notes)} |`);
    if (nested) rows.push(...fieldRows(nested, `${prefix}${name}${raw.type === 'array' ? '[]' : ''}.`));
  }
  return rows;
}

function fieldsTable(s: Json): string[] {
  const rows = fieldRows(s);
  if (rows.length === 0) return [];
  return ['| Field | Type | Required | Notes |', '|---|---|---|---|', ...rows];
}

function resolve(doc: Json, value: Json): Json {
  const ref: string | undefined = value?.$ref;
  if (!ref) return value;
  return ref.split('/').slice(1).reduce((node: Json, key) => node[key], doc);
}

/** The error codes an error response lists (its body's `error.code` enumeration). */
function errorCodes(response: Json): string[] {
  const body = response.content?.['application/json']?.schema;
  const codeSchema = body?.properties?.error?.properties?.code;
  return codeSchema ? (constValues(codeSchema) ?? []) : [];
}

function bodySchema(content: Json | undefined): Json | undefined {
  if (!content) return undefined;
  const first = Object.values<Json>(content)[0];
  return first?.schema;
}

function operation(doc: Json, method: string, path: string, op: Json): string[] {
  const lines = [`### ${op.operationId}`, '', `${code(`${method.toUpperCase()} ${path}`)}: ${op.summary ?? ''}`, ''];
  if (op.description) lines.push(op.description, '');
  const security: Json[] = op.security ?? doc.security ?? [];
  const credentials = security.map((entry) =>
    Object.entries<string[]>(entry)
      .map(([scheme, scopes]) => (scopes.length ? `${scheme} (${scopes.map(code).join(', ')})` : scheme))
      .join(' + '),
  );
  lines.push(`**Credentials:** ${credentials.length && credentials.some(Boolean) ? credentials.join(' or ') : 'none'}`, '');
  const parameters: Json[] = (op.parameters ?? []).map((p: Json) => resolve(doc, p));
  if (parameters.length) {
    lines.push('| Parameter | In | Type | Required | Notes |', '|---|---|---|---|---|');
    for (const p of parameters) {
      lines.push(`| ${code(p.name)} | ${p.in} | ${cell(typeOf(p.schema))} | ${p.required ? 'yes' : 'no'} | ${cell([p.description, constraints(p.schema ?? {})].filter(Boolean).join(' '))} |`);
    }
    lines.push('');
  }
  if (op.requestBody) {
    const body = resolve(doc, op.requestBody);
    const schema = bodySchema(body.content);
    const types = Object.keys(body.content ?? {}).map(code).join(', ');
    lines.push(`**Request body** (${types}${body.required ? '' : ', optional'}): ${schema ? typeOf(schema) : ''}${body.description ? '. ' + body.description : ''}`, '');
  }
  lines.push('| Status | Meaning | Body | Error codes |', '|---|---|---|---|');
  for (const [status, raw] of Object.entries<Json>(op.responses ?? {})) {
    const response = resolve(doc, raw);
    const schema = bodySchema(response.content);
    const codes = errorCodes(response);
    const description = codes.length ? String(response.description).replace(/\s*Codes:.*$/, '') : response.description;
    lines.push(`| ${status} | ${cell(description)} | ${codes.length ? 'error body' : schema ? cell(typeOf(schema)) : ''} | ${codes.map(code).join(', ')} |`);
  }
  lines.push('');
  return lines;
}

function webhookEvent(doc: Json, type: string, item: Json): string[] {
  const op = item.post ?? {};
  const schema = bodySchema(resolve(doc, op.requestBody ?? {}).content);
  const lines = [`### ${type}`, '', op.summary ?? '', ''];
  const resolved = schema?.$ref ? resolve(doc, schema) : schema;
  if (resolved) lines.push(...fieldsTable(resolved), '');
  return lines;
}

/** The whole page. */
export function apiReference(doc: Json): string {
  const lines: string[] = [
    '# API reference',
    '',
    '<!-- Generated by `npm run schemas` (scripts/api-reference.ts) from the TypeBox schemas in schemas/. Do not edit: change the schemas and run it again. -->',
    '',
    `The \`/v1\` API, version ${doc.info?.version ?? ''}, as the OpenAPI 3.1 document [\`schemas/openapi.json\`](../../schemas/openapi.json)`,
    'describes it (every deployment also serves it at `GET /v1/openapi.json`). The rules behind it are in',
    '[the contract](contract.md); credentials, idempotency, errors and limits are explained in',
    '[REST API](../integrate/rest-api.md), and events in [webhooks](../integrate/webhooks.md).',
    '',
    '## Credentials',
    '',
    '| Scheme | What |',
    '|---|---|',
  ];
  for (const [name, scheme] of Object.entries<Json>(doc.components?.securitySchemes ?? {})) {
    lines.push(`| ${code(name)} | ${cell(scheme.description)} |`);
  }
  lines.push('', '## Operations', '');
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) if (item[method]) lines.push(`- [${code(`${method.toUpperCase()} ${path}`)}](#${item[method].operationId.toLowerCase()})`);
  }
  lines.push('');
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) if (item[method]) lines.push(...operation(doc, method, path, item[method]));
  }
  lines.push('## Webhook events', '', 'Each is a signed `POST` to the endpoint; see [webhooks](../integrate/webhooks.md) for the headers and how to verify them.', '');
  for (const [type, item] of Object.entries<Json>(doc.webhooks ?? {})) lines.push(...webhookEvent(doc, type, item));
  lines.push('## Schemas', '');
  for (const [name, schema] of Object.entries<Json>(doc.components?.schemas ?? {})) {
    lines.push(`### ${name}`, '');
    if (schema.description) lines.push(schema.description, '');
    const table = fieldsTable(schema);
    if (table.length) lines.push(...table);
    else lines.push(`${typeOf(schema)}${constraints(schema) ? ` (${constraints(schema)})` : ''}`);
    lines.push('');
  }
  return lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}
