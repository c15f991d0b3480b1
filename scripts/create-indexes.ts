// Procfile `release` step: create every index (idempotent) before new code serves traffic, and say
// which endpoints the platform should probe on the web processes (docs/operate/observability.md).
import { loadConfig } from '../src/config.ts';
import { openStore } from '../src/store/open-store.ts';
import { createIndexes } from '../src/compose.ts';

process.stdout.write('Probe web processes at GET /health/ready (readiness) and GET /health/live (liveness).\n');
const config = loadConfig();
if (!config.mongodbUri) {
  process.stdout.write('MONGODB_URI is not set: the embedded engine creates its indexes at start; nothing to do.\n');
  process.exit(0);
}
const store = await openStore({ mongodbUri: config.mongodbUri, dbName: config.mongodbDb ?? undefined, timeoutMs: config.mongodbTimeoutMs });
await createIndexes(store.db);
await store.close();
process.stdout.write('indexes created\n');
