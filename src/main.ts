// The web process (Procfile `web`; `npm start`). On the embedded default it also runs the jobs,
// since the embedded store lives in this process.
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { bootstrap, configOrExit, onShutdown } from './bootstrap.ts';
import { createApp } from './http/app.ts';
import { createHttpServer } from './http/server.ts';
import { applyManifest } from './manifests/apply.ts';
import { startWorker } from './worker/start-worker.ts';
import { superviseWebProcesses } from './http/web-cluster.ts';
import { newLifecycle } from './http/health.ts';
import { stopGracefully } from './http/shutdown.ts';
import { startEmbeddedListener } from './store/wire/embedded-listener.ts';

const { values } = parseArgs({ options: { manifest: { type: 'string' } }, allowPositionals: false });
let config = configOrExit();
const embedded = config.mongodbUri === null;
// WEB_CONCURRENCY above 1: this process supervises that many web processes running this file and
// goes no further (src/http/web-cluster.ts).
if (config.webConcurrency > 1 && cluster.isPrimary) await superviseWebProcesses(config);
if (embedded && config.adminToken === null) {
  config = { ...config, adminToken: randomBytes(24).toString('base64url') };
  // Printed once, on purpose: the embedded default is for a person at a terminal.
  process.stdout.write(`\nOperator API token (generated for this process): ${config.adminToken}\n\n`);
}
if (embedded && config.webhookEncryptionKey === null) {
  // The embedded store forgets everything at exit, so a key that lives as long as the process is enough.
  config = { ...config, webhookEncryptionKey: randomBytes(32).toString('hex') };
  process.stdout.write('Webhook signing secrets are sealed with a key generated for this process (set WEBHOOK_ENCRYPTION_KEY to choose one).\n');
}
const { deps, agenda } = await bootstrap(config);
deps.lifecycle = newLifecycle(embedded);
if (!embedded && config.adminToken === null) deps.log.warn('ADMIN_TOKEN is not set: the operator API is off');

// In a cluster, the first web process applies it.
if (values.manifest && (cluster.isPrimary || cluster.worker?.id === 1)) {
  const text = await readFile(values.manifest, 'utf8');
  const manifest = /\.json$/i.test(values.manifest) ? JSON.parse(text) : parseYaml(text);
  const result = await applyManifest(deps, manifest);
  process.stdout.write(`Manifest ${values.manifest} applied (keys are shown only now):\n${JSON.stringify(result, null, 2)}\n`);
}

const stopWorker = embedded ? await startWorker(deps, agenda) : null;
deps.lifecycle.jobsRunning = stopWorker !== null;
const wire = embedded ? await startEmbeddedListener(deps.store, config, deps.log, (text) => process.stdout.write(text)) : null;
const server = createHttpServer(createApp(deps)).listen(config.port, () => deps.log.info('listening', { port: config.port, baseUrl: config.baseUrl, store: deps.store.engine }));

onShutdown(stopGracefully({ log: deps.log, store: deps.store, server, lifecycle: deps.lifecycle, stopJobs: stopWorker, stopListeners: wire ? () => wire.close() : null }));
