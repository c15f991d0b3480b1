// Every generated schema file and its text, built from the TypeBox schemas that are their single
// source: `npm run schemas` writes them, and a test checks the committed copies are current.
import { Manifest } from '../schemas/manifest.ts';
import { PurchaseRequestBody, CurrentPoliciesSimulationBody, VersionSimulationBody } from '../schemas/purchases.ts';
import { AnalyticsDailySpend, AnalyticsPurchase, PolicyView, PurchaseView } from '../schemas/analytics.ts';
import { EventData } from '../schemas/events.ts';
import { CreateWebhookBody, RotateSecretBody, UpdateWebhookBody } from '../schemas/webhooks.ts';
import { openApiDocument } from '../schemas/openapi.ts';
import { apiReference } from './api-reference.ts';

const DIALECT = 'https://json-schema.org/draft/2020-12/schema';

const jsonSchemas: Record<string, unknown> = {
  'manifest.json': Manifest,
  'purchase-request-body.json': PurchaseRequestBody,
  'simulation-current-policies-body.json': CurrentPoliciesSimulationBody,
  'simulation-version-body.json': VersionSimulationBody,
  'webhook-create-body.json': CreateWebhookBody,
  'webhook-update-body.json': UpdateWebhookBody,
  'webhook-rotate-secret-body.json': RotateSecretBody,
  'analytics-purchase.json': AnalyticsPurchase,
  'analytics-daily-spend.json': AnalyticsDailySpend,
  'purchase-view.json': PurchaseView,
  'policy-view.json': PolicyView,
  'event-data.json': { title: 'Event data by type', type: 'object', properties: EventData },
};

const text = (value: unknown) => JSON.stringify(value, null, 2) + '\n';

/** Paths relative to schemas/, mapped to their contents. */
export function schemaFiles(): Record<string, string> {
  const files: Record<string, string> = { 'openapi.json': text(openApiDocument()) };
  for (const [name, schema] of Object.entries(jsonSchemas)) files[`json/${name}`] = text({ $schema: DIALECT, ...(schema as object) });
  return files;
}

/** Generated pages of the documentation, paths relative to the repository: the API reference. */
export function docFiles(): Record<string, string> {
  return { 'docs/reference/api.md': apiReference(openApiDocument() as Record<string, any>) };
}
