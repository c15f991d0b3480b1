// Composition root (DESIGN.md 6a): validate configuration, build dependencies once, serve.
// `npm start` runs the web process; on the embedded engine it runs the jobs in the same process.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger } from './log.ts';
import { openStore } from './store/open-store.ts';
import { collections } from './store/collections.ts';
import { createIndexes } from './store/indexes.ts';
import { createApp } from './http/app.ts';
import { applyManifest } from './manifests/apply.ts';
import type { AppDeps } from './app-deps.ts';

async function main() {
  const { values } = parseArgs({ options: { manifest: { type: 'string' } }, allowPositionals: false });
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  const embedded = config.mongodbUri === null;
  if (embedded && config.adminToken === null) {
    config = { ...config, adminToken: randomBytes(24).toString('base64url') };
    // Printed once, on purpose: the embedded default is for a person at a terminal.
    process.stdout.write(`\nOperator API token (generated for this process): ${config.adminToken}\n\n`);
  }
  if (!embedded && config.adminToken === null) log.warn('ADMIN_TOKEN is not set: the operator API is off');

  const store = await openStore({ mongodbUri: config.mongodbUri ?? undefined });
  await createIndexes(store.db);
  const deps: AppDeps = { config, store, collections: collections(store.db), log, now: () => new Date() };
  log.info('store ready', { engine: store.engine });

  if (values.manifest) {
    const text = await readFile(values.manifest, 'utf8');
    const manifest = /\.json$/i.test(values.manifest) ? JSON.parse(text) : parseYaml(text);
    const result = await applyManifest({ store, collections: deps.collections, now: deps.now }, manifest);
    process.stdout.write(`Manifest ${values.manifest} applied:\n${JSON.stringify(result, null, 2)}\n`);
  }

  const app = createApp(deps);
  const server = app.listen(config.port, () => log.info('listening', { port: config.port, baseUrl: config.baseUrl }));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    server.close();
    server.closeIdleConnections?.();
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`fatal: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
