// npm run schemas: writes JSON Schema files for the wire contract, manifests, event payloads and
// read models into schemas/json/, generated from the TypeBox schemas that are their single source.
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Manifest } from '../schemas/manifest.ts';
import { PurchaseRequestBody, CurrentPoliciesSimulationBody, VersionSimulationBody } from '../schemas/purchases.ts';
import { AnalyticsDailySpend, AnalyticsPurchase } from '../schemas/analytics.ts';
import { EventData } from '../schemas/events.ts';
import { CreateWebhookBody, RotateSecretBody, UpdateWebhookBody } from '../schemas/webhooks.ts';

const out = fileURLToPath(new URL('../schemas/json/', import.meta.url));
const files: Record<string, unknown> = {
  'manifest.json': Manifest,
  'purchase-request-body.json': PurchaseRequestBody,
  'simulation-current-policies-body.json': CurrentPoliciesSimulationBody,
  'simulation-version-body.json': VersionSimulationBody,
  'webhook-create-body.json': CreateWebhookBody,
  'webhook-update-body.json': UpdateWebhookBody,
  'webhook-rotate-secret-body.json': RotateSecretBody,
  'analytics-purchase.json': AnalyticsPurchase,
  'analytics-daily-spend.json': AnalyticsDailySpend,
  'event-data.json': { $schema: 'https://json-schema.org/draft/2020-12/schema', title: 'Event data by type', type: 'object', properties: EventData },
};
await mkdir(out, { recursive: true });
for (const [name, schema] of Object.entries(files)) {
  await writeFile(out + name, JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', ...(schema as object) }, null, 2) + '\n');
}
process.stdout.write(`wrote ${Object.keys(files).length} schemas to schemas/json/\n`);
