// schemas/openapi.json is current (regenerating it from the TypeBox schemas gives the committed
// bytes, as do the JSON Schema files beside it and the API reference docs/reference/api.md) and is a
// valid OpenAPI 3.1 document.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { Validator } from '@seriousme/openapi-schema-validator';
import { docFiles, schemaFiles } from '../../scripts/schema-files.ts';
import { openApi } from '../helpers/contract.ts';

const root = new URL('../../schemas/', import.meta.url);

test('the committed schema files are what npm run schemas generates now', async (t) => {
  for (const [name, text] of Object.entries(schemaFiles())) {
    const committed = await readFile(new URL(name, root), 'utf8').catch(() => '(missing)');
    t.true(committed === text, `schemas/${name} is stale: run npm run schemas and commit the result`);
  }
});

test('the committed API reference (docs/reference/api.md) is what npm run schemas generates now', async (t) => {
  for (const [path, text] of Object.entries(docFiles())) {
    const committed = await readFile(new URL(`../../${path}`, import.meta.url), 'utf8').catch(() => '(missing)');
    t.true(committed === text, `${path} is stale: run npm run schemas and commit the result`);
  }
});

test('the document validates against the OpenAPI 3.1 meta-schema', async (t) => {
  const validator = new Validator();
  const result = await validator.validate(openApi);
  t.deepEqual(result, { valid: true });
  t.is(validator.version, '3.1');
});

test('the document covers the /v1 contract: every operation, both security schemes, every event type', (t) => {
  const operations = Object.entries(openApi.paths as Record<string, Record<string, any>>).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
  t.deepEqual(operations.sort(), [
    'DELETE /v1/webhooks/{webhookId}',
    'GET /.well-known/jwks.json',
    'GET /v1/agents',
    'GET /v1/openapi.json',
    'GET /v1/policies',
    'GET /v1/policies/{policyId}',
    'GET /v1/policies/{policyId}/versions/{versionId}',
    'GET /v1/policies/{policyId}/versions/{versionId}/shadow',
    'GET /v1/purchase-requests/{purchaseRequestId}',
    'GET /v1/purchase-requests/{purchaseRequestId}/receipts',
    'GET /v1/simulations/replay/{replayId}',
    'GET /v1/webhooks',
    'GET /v1/webhooks/{webhookId}',
    'GET /v1/webhooks/{webhookId}/deliveries',
    'PATCH /v1/webhooks/{webhookId}',
    'POST /v1/policies/{policyId}/versions/{versionId}/validate',
    'POST /v1/purchase-requests',
    'POST /v1/simulations/current-policies',
    'POST /v1/simulations/draft-policy',
    'POST /v1/simulations/policy-version',
    'POST /v1/simulations/replay',
    'POST /v1/webhooks',
    'POST /v1/webhooks/{webhookId}/rotate-secret',
    'POST /v1/webhooks/{webhookId}/test',
  ]);
  t.deepEqual(Object.keys(openApi.components.securitySchemes).sort(), ['apiKey', 'connectionToken']);
  t.deepEqual(Object.keys(openApi.webhooks).length, 12);
  const submit = openApi.paths['/v1/purchase-requests'].post;
  t.deepEqual(submit.security, [{ apiKey: [] }, { connectionToken: ['purchase:request'] }]);
  t.deepEqual(Object.keys(submit.responses).sort(), ['200', '201', '400', '401', '403', '409', '413', '415', '500', '503']);
  const forbidden = openApi.components.responses[submit.responses['403'].$ref.split('/').pop()];
  t.deepEqual(forbidden.content['application/json'].schema.properties.error.properties.code.enum, ['connection_unauthorized', 'organization_suspended', 'api_key_not_bound_to_agent', 'insufficient_scope']);
});

test('every instant the document describes, event data included, is a Timestamp: UTC with milliseconds (contract §2.1)', (t) => {
  const loose: string[] = [];
  const walk = (node: unknown, at: string) => {
    if (node === null || typeof node !== 'object') return;
    if ((node as { format?: unknown }).format === 'date-time') loose.push(at);
    for (const [key, child] of Object.entries(node)) walk(child, `${at}/${key}`);
  };
  walk(openApi, '#');
  t.deepEqual(loose, []);
  const expired = openApi.webhooks['purchase.approval_expired'].post.requestBody.content['application/json'].schema;
  t.deepEqual(expired.properties.data.properties.expiresAt, { $ref: '#/components/schemas/Timestamp' });
});
